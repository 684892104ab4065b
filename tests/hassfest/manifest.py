"""manifest.json, as hassfest's manifest.py and its neighbours check it.

``script/hassfest/manifest.py`` (known and required keys, their order, types
and values), ``requirements.py`` (parsable, no standard-library names, each
package once), ``dependencies.py`` (dependencies exist; every component the
code imports is declared) and ``config_flow.py`` (a config flow lives in
config_flow.py; a discoverable one sets a unique ID).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
import sys
from typing import Any
from urllib.parse import urlparse

from homeassistant.components.mqtt.util import valid_subscribe_topic
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version
import voluptuous as vol

from .common import HA_COMPONENTS, INTEGRATION, PLATFORMS

CUSTOM_MANIFEST_KEYS = {
    "after_dependencies", "bluetooth", "codeowners", "config_flow", "dependencies",
    "dhcp", "disabled", "documentation", "domain", "homekit", "import_executor",
    "integration_type", "iot_class", "issue_tracker", "loggers", "mqtt", "name",
    "quality_scale", "requirements", "single_config_entry", "ssdp", "usb",
    "version", "zeroconf",
}  # fmt: skip
# hassfest demands these of custom integrations, or of every integration that
# HACS lists and that has a UI (config_flow) — Soul must have them all.
REQUIRED_MANIFEST_KEYS = (
    "domain", "name", "version", "documentation", "issue_tracker", "codeowners",
    "iot_class", "integration_type", "config_flow",
)  # fmt: skip
INTEGRATION_TYPES = {
    "device",
    "entity",
    "hardware",
    "helper",
    "hub",
    "service",
    "system",
}
IOT_CLASSES = {
    "assumed_state", "calculated", "cloud_polling", "cloud_push", "local_polling",
    "local_push",
}  # fmt: skip
LISTS_OF_TEXT = (
    "codeowners",
    "dependencies",
    "after_dependencies",
    "loggers",
    "mqtt",
    "requirements",
)
DISCOVERY_KEYS = {"bluetooth", "dhcp", "homekit", "mqtt", "ssdp", "usb", "zeroconf"}
# Components any integration may use without declaring them (dependencies.py
# keeps a longer list): entity platforms, and core pieces always loaded.
ALWAYS_USABLE = PLATFORMS | {
    "device_automation", "homeassistant", "persistent_notification", "websocket_api",
}  # fmt: skip


def manifest_key_problems(data: dict[str, Any]) -> list[str]:
    """Known keys only; the ones hassfest requires of a custom integration."""
    problems = [
        f"{key}: unknown key" for key in data if key not in CUSTOM_MANIFEST_KEYS
    ]
    problems += [f"{key}: missing" for key in REQUIRED_MANIFEST_KEYS if key not in data]
    return problems


def manifest_order_problems(data: dict[str, Any]) -> list[str]:
    """domain, name, then the other keys in alphabetical order."""
    keys = list(data)
    wanted = [k for k in ("domain", "name") if k in keys] + sorted(
        k for k in keys if k not in {"domain", "name"}
    )
    return [] if keys == wanted else [f"keys are {keys}, expected {wanted}"]


def manifest_value_problems(data: dict[str, Any]) -> list[str]:
    """Types and values of the keys (manifest.py's schema)."""
    problems = [
        f"{key}: expected a non-empty text"
        for key in ("domain", "name", "version")
        if not isinstance(data.get(key), str) or not data[key]
    ]
    problems += [
        f"{key}: expected true or false"
        for key in ("config_flow", "single_config_entry", "import_executor")
        if key in data and not isinstance(data[key], bool)
    ]
    problems += [
        f"{key}: expected a list of non-empty texts"
        for key in LISTS_OF_TEXT
        if key in data
        and not (
            isinstance(data[key], list)
            and all(isinstance(item, str) and item for item in data[key])
        )
    ]
    if data.get("domain") != INTEGRATION.name:
        problems.append(f"domain: {data.get('domain')!r} is not the directory's name")
    if (HA_COMPONENTS / str(data.get("domain"))).exists():
        problems.append("domain: collides with a Home Assistant integration")
    if data.get("integration_type") not in INTEGRATION_TYPES:
        problems.append(
            f"integration_type: {data.get('integration_type')!r} is unknown"
        )
    if data.get("iot_class") not in IOT_CLASSES:
        problems.append(f"iot_class: {data.get('iot_class')!r} is unknown")
    try:
        Version(str(data.get("version")))
    except InvalidVersion:
        problems.append(f"version: {data.get('version')!r} is no version")
    for key in ("documentation", "issue_tracker"):
        url = urlparse(str(data.get(key, "")))
        if url.scheme != "https" or not url.netloc:
            problems.append(f"{key}: expected an https URL")
    problems += [
        f"codeowners: {owner!r} does not start with @"
        for owner in data.get("codeowners", [])
        if not str(owner).startswith("@")
    ]
    for topic in data.get("mqtt", []):
        try:
            valid_subscribe_topic(topic)
        except vol.Invalid as err:
            problems.append(f"mqtt: {topic!r}: {err}")
    return problems


def requirement_problems(data: dict[str, Any]) -> list[str]:
    """Parsable, without spaces, no standard-library name, each package once."""
    problems = []
    names = []
    for text_ in data.get("requirements", []):
        if " " in text_:
            problems.append(f"requirements: {text_!r} contains a space")
        try:
            requirement = Requirement(text_)
        except InvalidRequirement as err:
            problems.append(f"requirements: {text_!r}: {err}")
            continue
        name = canonicalize_name(requirement.name)
        names.append(name)
        if name.replace("-", "_") in sys.stdlib_module_names:
            problems.append(f"requirements: {name} shadows the standard library")
    problems += [
        f"requirements: {name} is listed twice"
        for name in set(names)
        if names.count(name) > 1
    ]
    return problems


def dependency_problems(data: dict[str, Any]) -> list[str]:
    """Dependencies are Home Assistant integrations, listed once, not ourselves."""
    problems = []
    dependencies = data.get("dependencies", [])
    after = data.get("after_dependencies", [])
    for key, names in (("dependencies", dependencies), ("after_dependencies", after)):
        problems += [
            f"{key}: {name} is no Home Assistant integration"
            for name in names
            if not (HA_COMPONENTS / name / "manifest.json").is_file()
        ]
        problems += [
            f"{key}: {name} depends on itself"
            for name in names
            if name == data.get("domain")
        ]
    problems += [
        f"dependencies: {name} is also an after_dependency"
        for name in dependencies
        if name in after
    ]
    return problems


def used_components() -> dict[str, set[str]]:
    """Return the Home Assistant components each module imports."""
    used: dict[str, set[str]] = {}
    for path in sorted(INTEGRATION.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                if node.module == "homeassistant.components":
                    found |= {alias.name for alias in node.names}
                elif node.module.startswith("homeassistant.components."):
                    found.add(node.module.split(".")[2])
            elif isinstance(node, ast.Import):
                found |= {
                    alias.name.split(".")[2]
                    for alias in node.names
                    if alias.name.startswith("homeassistant.components.")
                }
        used[str(path.relative_to(INTEGRATION))] = found
    return used


def import_problems(data: dict[str, Any], used: dict[str, set[str]]) -> list[str]:
    """Every component the code imports is declared (dependencies.py)."""
    allowed = (
        ALWAYS_USABLE
        | set(data.get("dependencies", []))
        | set(data.get("after_dependencies", []))
        | {key for key in DISCOVERY_KEYS if key in data}
        | {path.stem for path in INTEGRATION.glob("*.py")}  # our own platforms
    )
    return [
        f"{module}: uses {component}, which is not in dependencies"
        for module, components in used.items()
        for component in sorted(components - allowed)
    ]


def config_flow_problems(data: dict[str, Any], source: str | None) -> list[str]:
    """A config flow lives in config_flow.py; a discoverable one sets a unique ID."""
    if not data.get("config_flow"):
        return []
    if source is None:
        return ["config_flow: true, but there is no config_flow.py"]
    if DISCOVERY_KEYS & set(data) and "self.async_set_unique_id" not in source:
        return ["config_flow.py: a discoverable flow must set a unique ID"]
    return []


MANIFEST_RULES: dict[str, Callable[[dict[str, Any]], list[str]]] = {
    "keys": manifest_key_problems,
    "order": manifest_order_problems,
    "values": manifest_value_problems,
    "requirements": requirement_problems,
    "dependencies": dependency_problems,
    "imports": lambda data: import_problems(data, used_components()),
    "config_flow": lambda data: config_flow_problems(
        data, (INTEGRATION / "config_flow.py").read_text(encoding="utf-8")
    ),
}
