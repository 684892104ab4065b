"""What HACS and the Home Assistant frontend expect from the repository.

hassfest's rules (the manifest, and the translation keys the code uses) are in
the test_hassfest_*.py modules, with the checks in tests/hassfest/.
"""

from __future__ import annotations

import json
from pathlib import Path
import re
import struct

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
INTEGRATION = ROOT / "custom_components" / "soul"
MANIFEST = json.loads((INTEGRATION / "manifest.json").read_text(encoding="utf-8"))
# https://hacs.xyz/docs/publish/start/#hacsjson
HACS_KEYS = {
    "name", "content_in_root", "zip_release", "filename", "hide_default_branch",
    "country", "homeassistant", "persistent_directory", "hacs",
}  # fmt: skip
# Versions pinned by the oldest and the newest Home Assistant we support.
OPENAI_PINS = ("2.15.0", "3.0.0", "3.54.0")
# Home Assistant's own mcp and mcp_server integrations pin these (2026.2, 2026.10+).
MCP_PINS = ("1.26.0", "1.28.1")
# Home Assistant's own JSON library, which the journal uses (2026.2, 2026.10).
ORJSON_PINS = ("3.11.5", "3.11.9")


def flatten(data: dict, prefix: str = "") -> set[str]:
    """Return the dotted paths of every string in a translation file."""
    keys = set()
    for key, value in data.items():
        path = f"{prefix}{key}"
        keys |= flatten(value, f"{path}.") if isinstance(value, dict) else {path}
    return keys


def test_requirements_install_on_every_supported_home_assistant() -> None:
    """Requirements exclude mem0ai and accept the openai, mcp and orjson pins of old and new Home Assistant."""
    requirements = {
        Requirement(r).name: Requirement(r) for r in MANIFEST["requirements"]
    }
    assert "mem0ai" not in requirements
    assert set(requirements) == {
        "openai", "jsonschema", "mcp", "orjson", "regex", "zhconv-rs"
    }  # fmt: skip
    for pin in OPENAI_PINS:
        assert requirements["openai"].specifier.contains(pin), pin
    for pin in MCP_PINS:
        assert requirements["mcp"].specifier.contains(pin), pin
    for pin in ORJSON_PINS:
        assert requirements["orjson"].specifier.contains(pin), pin


def test_requirements_test_follows_manifest() -> None:
    """requirements_test.txt installs exactly the manifest's requirements."""
    lines = (ROOT / "requirements_test.txt").read_text(encoding="utf-8").splitlines()
    listed = {
        str(Requirement(line))
        for line in lines
        # "-e ./sdk/star-client" and other pip options are no requirements.
        if line and not line.startswith(("#", "-"))
    }
    assert {str(Requirement(r)) for r in MANIFEST["requirements"]} <= listed


def test_hacs_json() -> None:
    """hacs.json uses only keys HACS knows and names the minimum Home Assistant."""
    hacs = json.loads((ROOT / "hacs.json").read_text(encoding="utf-8"))
    assert set(hacs) <= HACS_KEYS
    assert hacs["name"] == MANIFEST["name"]
    assert hacs["homeassistant"] == "2026.2.0"


# Only these texts get placeholders from the code; braces elsewhere would show raw.
PLACEHOLDER_SECTIONS = (
    "exceptions.",
    "config.step.mqtt_confirm.",
    "device_automation.",
    "issues.mem0_unavailable.",
    "issues.journal_unavailable.",
    "config_subentries.soul.abort.too_many_souls",
    "config.step.reauth_confirm.description",
    "config.flow_title",
    # The options flow fills the MCP example and a bad field's name and problem.
    "options.step.init.sections.mcp.data_description.mcp_config",
    "options.error.invalid_mcp_config",
    "issues.mcp_server_failed.",
    # translation_placeholders of the MCP server entities.
    "entity.binary_sensor.mcp_server.name",
)


def strings(data: dict, prefix: str = "") -> dict[str, str]:
    """Return every string of a translation file by dotted path."""
    found = {}
    for key, value in data.items():
        if isinstance(value, dict):
            found |= strings(value, f"{prefix}{key}.")
        else:
            found[f"{prefix}{key}"] = value
    return found


def test_translations_match() -> None:
    """Every language has the same keys; placeholders only where code fills them."""
    languages = {
        path.stem: json.loads(path.read_text(encoding="utf-8"))
        for path in (INTEGRATION / "translations").glob("*.json")
    }
    assert set(languages) >= {"en", "zh-Hans"}
    english = flatten(languages["en"])
    for language, data in languages.items():
        assert flatten(data) == english, language
        for path, text in strings(data).items():
            if re.search(r"\{[a-z_]+\}", text):
                assert path.startswith(PLACEHOLDER_SECTIONS), (language, path)


def test_brand_icon() -> None:
    """brand/icon.png is a square 256 px PNG."""
    data = (INTEGRATION / "brand" / "icon.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (256, 256)
