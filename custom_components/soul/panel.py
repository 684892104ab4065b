"""The Soul panel (sidebar "Soul") and the Lovelace card "Soul emotion" (docs/panel.md).

The files in ``frontend/`` are plain ES modules (no build step): Home
Assistant serves that folder at ``/soul_static/<version>/``, where the
version is a hash of every file in it, so a browser never runs code older
than what is installed. ``async_setup_static`` does that once per start of
Home Assistant; ``async_register_panel`` adds the panel and the card's
module (loaded on every dashboard) while Soul is loaded, and the returned
callback removes them. The panel and the card read everything through
Soul's WebSocket commands (``websocket_panel.py``, ``websocket_api.py``),
scoped to the user.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from homeassistant.components import frontend, panel_custom
from homeassistant.components.http import StaticPathConfig
from homeassistant.core import CALLBACK_TYPE, HomeAssistant, callback
from homeassistant.util.hass_dict import HassKey

from .const import DOMAIN

FRONTEND_DIR = Path(__file__).parent / "frontend"
STATIC_PREFIX = "/soul_static"
PANEL_URL_PATH = DOMAIN
PANEL_ELEMENT = "soul-panel"
PANEL_MODULE = "soul-panel.js"
CARD_MODULE = "soul-card.js"
SIDEBAR_TITLE = "Soul"
SIDEBAR_ICON = "mdi:robot-happy-outline"
# The URL of the served folder, set once static paths are registered.
_BASE: HassKey[str] = HassKey(f"{DOMAIN}_static_base")


def frontend_version(directory: Path = FRONTEND_DIR) -> str:
    """Return the hash of the frontend files: names and contents (blocking)."""
    digest = hashlib.sha256()
    for path in sorted(directory.glob("*.js")):
        digest.update(path.name.encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def static_base(version: str) -> str:
    """Return the URL the frontend folder is served at for ``version``."""
    return f"{STATIC_PREFIX}/{version}"


async def async_setup_static(hass: HomeAssistant) -> str:
    """Serve ``frontend/`` (once per start); return its URL."""
    if (base := hass.data.get(_BASE)) is not None:
        return base
    version = await hass.async_add_executor_job(frontend_version)
    base = static_base(version)
    # No long cache: scripts/develop serves edited files at the same URL.
    await hass.http.async_register_static_paths(
        [StaticPathConfig(base, str(FRONTEND_DIR), cache_headers=False)]
    )
    hass.data[_BASE] = base
    return base


async def async_register_panel(hass: HomeAssistant) -> CALLBACK_TYPE:
    """Add the sidebar panel and the card; return the callback that removes them."""
    base = await async_setup_static(hass)
    card_url = f"{base}/{CARD_MODULE}"
    panel_custom_config = {"static_base": base}
    await panel_custom.async_register_panel(
        hass,
        frontend_url_path=PANEL_URL_PATH,
        webcomponent_name=PANEL_ELEMENT,
        sidebar_title=SIDEBAR_TITLE,
        sidebar_icon=SIDEBAR_ICON,
        module_url=f"{base}/{PANEL_MODULE}",
        config=panel_custom_config,
        require_admin=False,
    )
    frontend.add_extra_js_url(hass, card_url)

    @callback
    def remove() -> None:
        frontend.async_remove_panel(hass, PANEL_URL_PATH, warn_if_unknown=False)
        frontend.remove_extra_js_url(hass, card_url)

    return remove
