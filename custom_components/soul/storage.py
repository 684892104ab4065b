"""Debounced storage for state that changes every few seconds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers.storage import Store

from .const import DOMAIN

STORAGE_VERSION = 1
SAVE_DELAY = 10


class DebouncedStore:
    """A ``Store`` written at most every ``SAVE_DELAY`` seconds while dirty.

    ``Store.async_delay_save`` re-arms its delay on every call, so state marked
    dirty every 3 s would never be written before shutdown; this arms it only
    when no write is pending. Home Assistant still writes on shutdown.
    """

    def __init__(self, hass: HomeAssistant, name: str) -> None:
        """Store under ``.storage/soul.<name>``; set ``dump`` before use."""
        self.store: Store[dict[str, Any]] = Store(
            hass, STORAGE_VERSION, f"{DOMAIN}.{name}"
        )
        self.dump: Callable[[], dict[str, Any]] = dict
        self._pending = False

    async def async_load(self) -> Any:
        """Return the stored data, or None."""
        return await self.store.async_load()

    def _data(self) -> dict[str, Any]:
        self._pending = False
        return self.dump()

    @callback
    def schedule(self) -> None:
        """Write soon, unless a write is already pending."""
        if not self._pending:
            self._pending = True
            self.store.async_delay_save(self._data, SAVE_DELAY)

    async def async_flush(self) -> None:
        """Write now."""
        self._pending = False
        await self.store.async_save(self.dump())

    async def async_remove(self) -> None:
        """Delete the stored data."""
        await self.store.async_remove()
