"""manifest.json follows hassfest's rules (manifest, requirements, dependencies, config_flow).

The rules are in ``tests/hassfest/manifest.py``.
"""

from __future__ import annotations

import pytest

from custom_components.soul.const import DOMAIN

from .hassfest.common import INTEGRATION, manifest, parse_json
from .hassfest.manifest import MANIFEST_RULES


def test_manifest_is_one_json_object() -> None:
    parse_json((INTEGRATION / "manifest.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("rule", MANIFEST_RULES)
def test_manifest(rule: str) -> None:
    """One group of hassfest's manifest rules."""
    problems = MANIFEST_RULES[rule](manifest())
    assert not problems, "manifest.json:\n" + "\n".join(problems)


def test_manifest_declares_soul() -> None:
    """What Soul's manifest must say (besides hassfest's rules)."""
    data = manifest()
    assert data["domain"] == DOMAIN
    assert set(data["dependencies"]) == {
        "mqtt",
        "http",
        "conversation",
        "websocket_api",
        # The Soul panel and card (panel.py, docs/panel.md).
        "frontend",
        "panel_custom",
    }
    assert data["config_flow"] is True
    assert data["iot_class"] == "local_push"
    assert data["integration_type"] == "hub"
