"""hassfest's rules for a custom integration, restated and checked on our files.

hassfest (``script/hassfest`` in home-assistant/core) validates an integration's
translations, services.yaml, icons.json and manifest.json. It cannot be
installed here, so this module enforces the same rules with checks of its own;
each group names the hassfest module its rules come from. A check returns the
problems it finds as ``"<key path>: <what is wrong>"`` lines and a test asserts
there are none, so a failure names the file and the key. The self-tests at the
end run the same checks on broken copies and show that they fail.

Where hassfest is lenient with custom integrations (it validates only en.json,
takes actions without names), these checks hold every language and every
action to the rules of core integrations.

The second half compares the translation keys the code uses with the files:
statically (the ``translation_key``, ``reason``, ``errors[...]``, ``step_id``
and placeholders in the source) and at run time (the flows' forms, the actions'
schemas, the entities Soul registers).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
import copy
from dataclasses import dataclass
from functools import cache
import json
from pathlib import Path
import re
import string
import sys
from typing import Any
from urllib.parse import urlparse

import homeassistant
from homeassistant.components.mqtt.util import valid_subscribe_topic
from homeassistant.const import Platform
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import section
from homeassistant.helpers import entity_registry as er, selector
from homeassistant.util import slugify
from homeassistant.util.yaml import load_yaml_dict
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version
import pytest
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    async_fire_mqtt_message,
)
from pytest_homeassistant_custom_component.typing import MqttMockHAClient
import voluptuous as vol

from custom_components.soul import config_flow, device_action, device_trigger
from custom_components.soul.const import CONF_MBTI_TYPE, CONF_NAME, DOMAIN
from custom_components.soul.core.invoker import InvokeError
from custom_components.soul.services import async_setup_services
from custom_components.soul.soul_flow import _soul_schema

from .core.spec_payloads import catalog, skills

ROOT = Path(__file__).resolve().parent.parent
INTEGRATION = ROOT / "custom_components" / "soul"
TRANSLATION_FILES = sorted((INTEGRATION / "translations").glob("*.json"))
HA_COMPONENTS = Path(homeassistant.__file__).parent / "components"
MDI_LIST = (
    HA_COMPONENTS.parent.parent / "hass_frontend" / "static" / "mdi" / "iconList.json"
)
PLATFORMS = {platform.value for platform in Platform}

Check = Callable[[Any, str], list[str]]
KeyRule = Callable[[Any], str | None]


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    if repeated := sorted({key for key in keys if keys.count(key) > 1}):
        raise ValueError(f"duplicate keys {repeated}")
    return dict(pairs)


def parse_json(text: str) -> dict[str, Any]:
    """Parse a JSON object, refusing duplicate keys (the last would silently win)."""
    data = json.loads(text, object_pairs_hook=_unique_keys)
    if not isinstance(data, dict):
        raise ValueError("the file is no JSON object")  # noqa: TRY004
    return data


@cache
def load_json(path: Path) -> dict[str, Any]:
    return parse_json(path.read_text(encoding="utf-8"))


def read_json(path: Path) -> dict[str, Any]:
    """Return a fresh copy of a JSON file (the self-tests mutate theirs)."""
    return copy.deepcopy(load_json(path))


def english() -> dict[str, Any]:
    return read_json(INTEGRATION / "translations" / "en.json")


def services_yaml() -> dict[str, Any]:
    return load_yaml_dict(str(INTEGRATION / "services.yaml"))


def manifest() -> dict[str, Any]:
    return read_json(INTEGRATION / "manifest.json")


def icons() -> dict[str, Any]:
    return read_json(INTEGRATION / "icons.json")


def dig(data: Any, dotted: str) -> Any:
    """Return ``data[a][b]…`` for ``"a.b…"``, or None when a part is missing."""
    for part in dotted.split("."):
        if not isinstance(data, dict) or part not in data:
            return None
        data = data[part]
    return data


def texts_under(data: Any, prefix: str = "") -> Iterator[tuple[str, str]]:
    """Yield (dotted path, text) for every string below ``data``."""
    if isinstance(data, dict):
        for key, value in data.items():
            yield from texts_under(value, f"{prefix}.{key}" if prefix else key)
    elif isinstance(data, str):
        yield prefix, data


def _join(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


# --- Building blocks for the schemas below -----------------------------------

# [a-z0-9-_]+ without a leading, trailing or doubled - or _ (translations.py).
TRANSLATION_KEY = re.compile(r"[a-z0-9]+(?:[-_][a-z0-9]+)*")
HTML = re.compile(r"<[a-z][^>]*>", re.IGNORECASE)
# Stricter than hassfest, which misses addresses without a top-level domain.
URL = re.compile(r"\b[a-z][a-z0-9+.-]*://|\bwww\.", re.IGNORECASE)
REFERENCE = re.compile(r"\[%key:[^%\]]+%\]")
QUOTED_PLACEHOLDER = re.compile(r"'\{[^{}']*\}'")


def translation_key(key: Any) -> str | None:
    if isinstance(key, str) and TRANSLATION_KEY.fullmatch(key):
        return None
    return f"key {key!r} must match [a-z0-9-_]+ and not start, end or double - or _"


def slug(key: Any) -> str | None:
    if isinstance(key, str) and key and key == slugify(key):
        return None
    return f"key {key!r} is not a slug (try {slugify(str(key))!r})"


def slug_or_default(key: Any) -> str | None:
    return None if key == "_" else slug(key)


def platform(key: Any) -> str | None:
    return None if key in PLATFORMS else f"{key!r} is no entity platform"


def placeholders_in(text: str) -> set[str]:
    """Return the ``{names}`` in ``text``; ValueError on malformed braces."""
    return {
        name for _, name, _, _ in string.Formatter().parse(text) if name is not None
    }


def text(*, placeholders: bool = True) -> Check:
    """A translated text (translations.py: no HTML, no URL, sound placeholders)."""

    def check(value: Any, path: str) -> list[str]:
        if not isinstance(value, str):
            return [f"{path}: expected a text, got {type(value).__name__}"]
        problems = []
        if not value.strip():
            problems.append("is empty")
        elif value != value.strip():
            problems.append("has leading or trailing white space")
        if HTML.search(value):
            problems.append("contains HTML")
        if URL.search(value):
            problems.append("contains a URL (pass it as a placeholder)")
        if (ref := REFERENCE.search(value)) and ref.group() != value:
            problems.append("combines a [%key:…%] reference with other text")
        if QUOTED_PLACEHOLDER.search(value):
            problems.append("has a placeholder inside single quotes")
        try:
            names = placeholders_in(value)
        except ValueError as err:
            problems.append(f"has malformed braces ({err})")
            names = set()
        for name in sorted(names):
            if not name.isidentifier():
                problems.append(f"placeholder {{{name}}} is no identifier")
            elif not placeholders:
                problems.append(f"placeholder {{{name}}} where none is filled in")
        return [f"{path}: {problem}" for problem in problems]

    return check


def mapping(
    required: dict[str, Check] | None = None,
    optional: dict[str, Check] | None = None,
    *,
    extra: Check | None = None,
) -> Check:
    """A mapping with known keys; ``extra`` checks any other key's value."""
    required = required or {}
    optional = optional or {}

    def check(value: Any, path: str) -> list[str]:
        if not isinstance(value, dict):
            return [f"{path}: expected a mapping, got {type(value).__name__}"]
        problems = [
            f"{_join(path, key)}: missing" for key in required if key not in value
        ]
        for key, item in value.items():
            sub = required.get(key) or optional.get(key) or extra
            if sub is None:
                allowed = ", ".join(sorted({*required, *optional}))
                problems.append(f"{_join(path, key)}: unknown key (allowed: {allowed})")
            else:
                problems += sub(item, _join(path, key))
        return problems

    return check


def keyed(value_check: Check, key_rule: KeyRule | None = None) -> Check:
    """A mapping of free keys, each checked by ``key_rule``, to checked values."""

    def check(value: Any, path: str) -> list[str]:
        if not isinstance(value, dict):
            return [f"{path}: expected a mapping, got {type(value).__name__}"]
        problems = []
        for key, item in value.items():
            where = _join(path, key)
            if key_rule is not None and (why := key_rule(key)):
                problems.append(f"{where}: {why}")
            problems += value_check(item, where)
        return problems

    return check


def all_of(*checks: Check) -> Check:
    return lambda value, path: [p for check in checks for p in check(value, path)]


def exactly_one(*keys: str) -> Check:
    def check(value: Any, path: str) -> list[str]:
        if isinstance(value, dict) and sum(key in value for key in keys) != 1:
            return [f"{path}: needs exactly one of {', '.join(keys)}"]
        return []

    return check


# --- Translation files (script/hassfest/translations.py) ---------------------

TEXT = text()
PLAIN = text(placeholders=False)
TEXTS = keyed(TEXT)


def data_described(step: Any, path: str) -> list[str]:
    """Every data_description names a field of its step's (or section's) data."""
    if not isinstance(step, dict):
        return []
    parts = [(path, step)]
    sections = step.get("sections")
    if isinstance(sections, dict):
        parts += [(f"{path}.sections.{name}", part) for name, part in sections.items()]
    problems = []
    for where, part in parts:
        if not isinstance(part, dict) or not isinstance(
            described := part.get("data_description", {}), dict
        ):
            continue
        data = part.get("data", {})
        problems += [
            f"{where}.data_description.{key}: describes no field of its data"
            for key in described
            if not isinstance(data, dict) or key not in data
        ]
    return problems


FORM_TEXTS = {"data": TEXTS, "data_description": TEXTS, "description": TEXT}
STEP = all_of(
    mapping(
        optional={
            **FORM_TEXTS,
            "title": TEXT,
            "menu_options": TEXTS,
            "menu_option_descriptions": TEXTS,
            "submit": TEXT,
            "sections": keyed(mapping(optional={**FORM_TEXTS, "name": TEXT})),
        }
    ),
    data_described,
)


def flow(*, subentry: bool = False) -> Check:
    """A config, options, subentry or repair flow."""
    optional: dict[str, Check] = {
        "flow_title": TEXT,
        "error": TEXTS,
        "abort": TEXTS,
        "progress": TEXTS,
        "create_entry": TEXTS,
    }
    required: dict[str, Check] = {"step": keyed(STEP)}
    if subentry:
        required["entry_type"] = TEXT
        required["initiate_flow"] = mapping({"user": TEXT}, extra=TEXT)
    else:
        optional["initiate_flow"] = mapping({"user": TEXT})
    return mapping(required, optional)


STATES = keyed(PLAIN, translation_key)
ENTITY = mapping(
    optional={
        "name": TEXT,
        "state": STATES,
        "state_attributes": keyed(
            mapping(optional={"name": PLAIN, "state": STATES}), translation_key
        ),
        "unit_of_measurement": PLAIN,
    }
)
FIELD_TEXTS = mapping({"name": TEXT, "description": TEXT}, {"example": TEXT})
TRANSLATION_SECTIONS: dict[str, Check] = {
    "title": TEXT,
    "config": flow(),
    "config_subentries": keyed(flow(subentry=True), slug_or_default),
    "options": flow(),
    "selector": keyed(
        mapping(
            optional={
                "options": keyed(TEXT, translation_key),
                "choices": keyed(TEXT, translation_key),
                "unit_of_measurement": keyed(TEXT, translation_key),
                "fields": keyed(
                    mapping({"name": TEXT, "description": TEXT}), translation_key
                ),
            }
        ),
        slug_or_default,
    ),
    "device_automation": mapping(
        optional=dict.fromkeys(
            (
                "action_type",
                "condition_type",
                "trigger_type",
                "trigger_subtype",
                "extra_fields",
                "extra_fields_descriptions",
            ),
            TEXTS,
        )
    ),
    "system_health": mapping(optional={"info": keyed(TEXT, translation_key)}),
    "application_credentials": mapping(optional={"description": TEXT}),
    "issues": keyed(
        all_of(
            mapping({"title": TEXT}, {"description": TEXT, "fix_flow": flow()}),
            exactly_one("description", "fix_flow"),
        )
    ),
    "entity_component": keyed(ENTITY, slug_or_default),
    "device": keyed(mapping(optional={"name": TEXT}), translation_key),
    "entity": keyed(keyed(ENTITY, translation_key), platform),
    "exceptions": keyed(mapping({"message": TEXT}), slug),
    "services": keyed(
        mapping(
            {"name": TEXT, "description": TEXT},
            {
                "fields": keyed(FIELD_TEXTS, translation_key),
                "sections": keyed(
                    mapping({"name": TEXT}, {"description": TEXT}), translation_key
                ),
            },
        ),
        translation_key,
    ),
    "conversation": mapping({"agent": mapping({"done": TEXT})}),
    "common": keyed(TEXT, slug),
}


def translation_problems(strings: Any, only: str | None = None) -> list[str]:
    """Check a translation file (or its section ``only``) against the schema."""
    if not isinstance(strings, dict):
        return ["expected a JSON object"]
    problems = []
    for key, value in strings.items():
        if only is not None and key != only:
            continue
        if (check := TRANSLATION_SECTIONS.get(key)) is None:
            problems.append(f"{key}: unknown top-level section")
        else:
            problems += check(value, key)
    return problems


def _sections_of_all_files() -> list[tuple[Path, str]]:
    pairs = []
    for path in TRANSLATION_FILES:
        try:
            pairs += [(path, key) for key in load_json(path)]
        except ValueError:
            pairs.append((path, "<unreadable>"))
    return pairs


@pytest.mark.parametrize("path", TRANSLATION_FILES, ids=lambda p: p.name)
def test_translation_file_is_one_json_object(path: Path) -> None:
    """Valid JSON, an object, no key twice (translations.py: "Invalid JSON")."""
    parse_json(path.read_text(encoding="utf-8"))


def test_every_language_is_checked() -> None:
    assert {path.stem for path in TRANSLATION_FILES} >= {"en", "zh-Hans"}


@pytest.mark.parametrize(
    ("path", "section"),
    _sections_of_all_files(),
    ids=[f"{p.name}-{s}" for p, s in _sections_of_all_files()],
)
def test_translation_section(path: Path, section: str) -> None:
    """One top-level section of one translation file follows hassfest's schema.

    Structure (allowed keys, required texts, sections inside ``sections``),
    key formats (option, state, entity and action keys ``[a-z0-9-_]+``),
    texts (non-empty, trimmed, no HTML, no URL, well-formed placeholders, none
    in states) and data_description keys naming fields of their data.
    """
    problems = translation_problems(load_json(path), only=section)
    assert not problems, f"{path.name}:\n" + "\n".join(problems)


# --- services.yaml (script/hassfest/services.py) -------------------------------

FIELD_KEYS = {"example", "default", "required", "advanced", "selector"}
# Custom integrations may name and describe actions in services.yaml.
CUSTOM_KEYS = {"name", "description"}


def _field_problems(field: Any, where: str, *, targeted: bool) -> list[str]:
    if not isinstance(field, dict):
        return [f"{where}: expected a mapping"]
    allowed = FIELD_KEYS | CUSTOM_KEYS | ({"filter"} if targeted else set())
    problems = [
        f"{where}.{key}: unknown key"
        + (" (filter needs a target)" if key == "filter" else "")
        for key in field
        if key not in allowed
    ]
    problems += [
        f"{where}.{key}: may not be empty"
        for key in ("example", "default")
        if key in field and field[key] is None
    ]
    problems += [
        f"{where}.{key}: expected true or false"
        for key in ("required", "advanced")
        if key in field and not isinstance(field[key], bool)
    ]
    if "selector" not in field:
        # Our rule: without a selector the UI offers only YAML.
        return [*problems, f"{where}: has no selector"]
    try:
        config = selector.validate_selector(field["selector"])
    except vol.Invalid as err:
        return [*problems, f"{where}.selector: {err}"]
    select = config.get("select") or {}
    if select.get("translation_key"):
        problems += [
            f"{where}.selector.select.options: {why}"
            for option in select_options(select)
            if (why := translation_key(option))
        ]
    return problems


def select_options(config: dict[str, Any]) -> list[str]:
    """Return the option values of a select selector's configuration."""
    return [
        option["value"] if isinstance(option, dict) else option
        for option in config.get("options", [])
    ]


def action_fields(service: Any) -> Iterator[tuple[str, Any, str | None]]:
    """Yield (field name, field, section name or None) of an action."""
    if not isinstance(service, dict) or not isinstance(service.get("fields"), dict):
        return
    for name, field in service["fields"].items():
        if isinstance(field, dict) and "fields" in field:
            for inner, inner_field in (field["fields"] or {}).items():
                yield inner, inner_field, name
        else:
            yield name, field, None


def service_problems(services: Any) -> list[str]:
    """Check services.yaml against hassfest's schema for custom integrations."""
    if not isinstance(services, dict):
        return ["expected a mapping of actions"]
    problems = []
    for name, service in services.items():
        if why := slug(name):
            problems.append(f"{name}: {why}")
        if service is None:
            continue
        if not isinstance(service, dict):
            problems.append(f"{name}: expected a mapping")
            continue
        problems += [
            f"{name}.{key}: unknown key"
            for key in service
            if key not in {"target", "fields", *CUSTOM_KEYS}
        ]
        targeted = "target" in service
        if service.get("target") is not None:
            try:
                selector.TargetSelector.CONFIG_SCHEMA(service["target"])
            except vol.Invalid as err:
                problems.append(f"{name}.target: {err}")
        fields = service.get("fields")
        if fields is None:
            continue
        if not isinstance(fields, dict):
            problems.append(f"{name}.fields: expected a mapping")
            continue
        seen: set[str] = set()
        for key, field in fields.items():
            if isinstance(field, dict) and "fields" in field:
                problems += [
                    f"{name}.fields.{key}.{k}: unknown key"
                    for k in field
                    if k not in {"collapsed", "fields", *CUSTOM_KEYS}
                ]
                if not isinstance(field.get("collapsed", False), bool):
                    problems.append(f"{name}.fields.{key}.collapsed: expected a bool")
        for field_name, field, section_name in action_fields(service):
            where = f"{name}.fields." + (
                f"{section_name}.fields.{field_name}" if section_name else field_name
            )
            if field_name in seen:
                problems.append(f"{where}: the field appears twice")
            seen.add(field_name)
            problems += _field_problems(field, where, targeted=targeted)
    return problems


def service_translation_problems(services: Any, strings: dict[str, Any]) -> list[str]:
    """Every action, field, section and select of services.yaml is translated."""
    texts = strings.get("services", {})
    problems = []
    for name, service in services.items():
        where = f"services.{name}"
        if name not in texts:
            problems.append(f"{where}: the action has no translation")
            continue
        problems += [
            f"{where}.{key}: missing"
            for key in ("name", "description")
            if key not in texts[name]
        ]
        fields = texts[name].get("fields", {})
        known = set()
        for field_name, field, section_name in action_fields(service):
            known.add(field_name)
            problems += [
                f"{where}.fields.{field_name}.{key}: missing"
                for key in ("name", "description")
                if key not in fields.get(field_name, {})
            ]
            if section_name and not dig(texts[name], f"sections.{section_name}.name"):
                problems.append(f"{where}.sections.{section_name}.name: missing")
            select = (field or {}).get("selector", {}) or {}
            select = select.get("select") or {}
            if key := select.get("translation_key"):
                problems += selector_translation_problems(
                    key, select_options(select), strings
                )
        problems += [
            f"{where}.fields.{field_name}: translates no field of services.yaml"
            for field_name in fields
            if field_name not in known
        ]
    problems += [
        f"services.{name}: translates no action of services.yaml"
        for name in texts
        if name not in services
    ]
    return problems


def selector_translation_problems(
    key: str, options: list[str], strings: dict[str, Any]
) -> list[str]:
    """A select's translation_key exists and translates each of its options."""
    if key not in strings.get("selector", {}):
        return [f"selector.{key}: missing (a select uses translation_key {key!r})"]
    texts = strings["selector"][key].get("options", {})
    return [
        f"selector.{key}.options.{option}: missing"
        for option in options
        if option not in texts
    ]


def test_services_yaml_schema() -> None:
    """Action and field structure, selectors, targets, unique fields."""
    problems = service_problems(services_yaml())
    assert not problems, "services.yaml:\n" + "\n".join(problems)


@pytest.mark.parametrize("path", TRANSLATION_FILES, ids=lambda p: p.name)
def test_services_yaml_is_translated(path: Path) -> None:
    """Names and descriptions of actions and fields, and select options."""
    problems = service_translation_problems(services_yaml(), read_json(path))
    assert not problems, f"{path.name}:\n" + "\n".join(problems)


# --- icons.json (script/hassfest/icons.py) ------------------------------------


@cache
def mdi_names() -> frozenset[str]:
    """The icon names of the installed frontend; empty without it."""
    if not MDI_LIST.is_file():
        return frozenset()
    return frozenset(icon["name"] for icon in json.loads(MDI_LIST.read_text("utf-8")))


def icon(value: Any, path: str) -> list[str]:
    if not isinstance(value, str) or HTML.search(value):
        return [f"{path}: expected an icon name"]
    if not value.startswith("mdi:"):
        return [f"{path}: {value!r} does not start with mdi:"]
    if mdi_names() and value.removeprefix("mdi:") not in mdi_names():
        return [f"{path}: {value!r} is no Material Design icon"]
    return []


def state_icons_differ(value: Any, path: str) -> list[str]:
    """A state's icon differs from the default (else it should be left out)."""
    if not isinstance(value, dict) or not isinstance(value.get("state"), dict):
        return []
    return [
        f"{path}.state.{state}: same icon as the default; leave it out"
        for state, name in value["state"].items()
        if name == value.get("default")
    ]


STATE_ICONS = keyed(icon, translation_key)
ENTITY_ICONS = all_of(
    mapping(
        optional={
            "default": icon,
            "state": STATE_ICONS,
            "state_attributes": keyed(
                all_of(
                    mapping(optional={"default": icon, "state": STATE_ICONS}),
                    state_icons_differ,
                ),
                translation_key,
            ),
        }
    ),
    state_icons_differ,
)
FLOW_ICONS = mapping({"step": keyed(mapping({"section": keyed(icon)}))})


def service_icon(value: Any, path: str) -> list[str]:
    if isinstance(value, str):
        return icon(value, path)
    return mapping({"service": icon}, {"sections": keyed(icon, translation_key)})(
        value, path
    )


ICONS = mapping(
    optional={
        "config": FLOW_ICONS,
        "options": FLOW_ICONS,
        "issues": keyed(mapping({"fix_flow": FLOW_ICONS})),
        "services": keyed(service_icon, translation_key),
        "entity": keyed(keyed(ENTITY_ICONS, translation_key), platform),
    }
)


def icon_reference_problems(
    data: dict[str, Any], services: dict[str, Any], strings: dict[str, Any]
) -> list[str]:
    """Icons name actions, entities, states and sections that exist."""
    problems = [
        f"services.{name}: no icon"
        for name in services
        if name not in data.get("services", {})
    ]
    problems += [
        f"services.{name}: no such action in services.yaml"
        for name in data.get("services", {})
        if name not in services
    ]
    for domain, entities in data.get("entity", {}).items():
        for key, entity in entities.items():
            where = f"entity.{domain}.{key}"
            if (texts := dig(strings, where)) is None:
                problems.append(f"{where}: no such entity translation key")
                continue
            problems += [
                f"{where}.state.{state}: no such state"
                for state in entity.get("state", {})
                if state not in texts.get("state", {})
            ]
    for flow_name in ("config", "options"):
        for step, parts in (dig(data, f"{flow_name}.step") or {}).items():
            problems += [
                f"{flow_name}.step.{step}.section.{name}: no such section"
                for name in parts.get("section", {})
                if dig(strings, f"{flow_name}.step.{step}.sections.{name}") is None
            ]
    return problems


def test_icons_schema() -> None:
    """mdi: icons that exist; actions and entities keyed as hassfest wants."""
    problems = ICONS(icons(), "")
    assert not problems, "icons.json:\n" + "\n".join(problems)


def test_icons_name_what_exists() -> None:
    """Every action has an icon; entity, state and section icons are not stale."""
    problems = icon_reference_problems(icons(), services_yaml(), english())
    assert not problems, "icons.json:\n" + "\n".join(problems)


def test_the_icon_list_is_there() -> None:
    """Icon names are checked wherever the frontend (and its icon list) is installed."""
    if not MDI_LIST.is_file():
        pytest.skip("home-assistant-frontend is not installed: icon names unchecked")
    assert "robot-outline" in mdi_names()


# --- manifest.json (manifest.py, requirements.py, dependencies.py, config_flow.py)

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
    assert set(data["dependencies"]) == {"mqtt", "http", "conversation"}
    assert data["config_flow"] is True
    assert data["iot_class"] == "local_push"
    assert data["integration_type"] == "hub"


# --- Keys the code uses, read from the source ----------------------------------


@dataclass(frozen=True)
class Use:
    """One translation the code relies on: where, which key(s), its placeholders."""

    where: str
    paths: tuple[str, ...]  # any of them will do
    placeholders: frozenset[str] | None = None  # None: unknown, not checked


FLOW_BASES = {
    "ConfigFlow": "config",
    "OptionsFlow": "options",
    "OptionsFlowWithReload": "options",
    "ConfigSubentryFlow": "config_subentries.*",
}
ERROR_CLASS = re.compile(r"(Error|Exception|Failed|NotReady)$")


def _name_of(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


@cache
def string_constants() -> dict[str, str]:
    """Module-level ``NAME = "text"`` of the integration (ambiguous names left out)."""
    found: dict[str, set[str]] = {}
    for path in INTEGRATION.rglob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            target = value = None
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, value = node.targets[0], node.value
            elif isinstance(node, ast.AnnAssign):
                target, value = node.target, node.value
            if (
                isinstance(target, ast.Name)
                and isinstance(value, ast.Constant)
                and isinstance(value.value, str)
            ):
                found.setdefault(target.id, set()).add(value.value)
    return {
        name: next(iter(values)) for name, values in found.items() if len(values) == 1
    }


def resolve(node: ast.expr | None) -> str | None:
    """Return the text an expression stands for, when the source tells."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name | ast.Attribute):
        return string_constants().get(_name_of(node))
    return None


def dict_keys(
    node: ast.expr | None, known: dict[str, frozenset[str]]
) -> frozenset[str] | None:
    """The keys of a dict literal (or a known ``self.context[...]``), else None."""
    if node is None:
        return frozenset()
    if isinstance(node, ast.Dict):
        keys = [resolve(key) if key is not None else None for key in node.keys]
        return None if None in keys else frozenset(k for k in keys if k is not None)
    if isinstance(node, ast.Subscript) and (name := resolve(node.slice)) in known:
        return known[name]
    return None


class KeyCollector(ast.NodeVisitor):
    """Collect the translation keys one module of the integration uses."""

    def __init__(self, module: str, key_setters: dict[str, int]) -> None:
        self.module = module
        self.platform = Path(module).stem if Path(module).stem in PLATFORMS else None
        self.key_setters = key_setters
        self.flows: list[str] = []  # the flow kinds of the enclosing classes
        self.bases: list[list[str]] = []
        self.module_flows: set[str] = set()
        self.title_placeholders: dict[str, frozenset[str]] = {}
        self.uses: list[Use] = []
        self.unclassified: list[str] = []

    def at(self, node: ast.AST) -> str:
        return f"{self.module}:{getattr(node, 'lineno', 0)}"

    def add(
        self,
        node: ast.AST,
        paths: list[str],
        placeholders: frozenset[str] | None = None,
    ) -> None:
        self.uses.append(Use(self.at(node), tuple(paths), placeholders))

    def flow_kinds(self) -> list[str]:
        """The flows whose texts a key here belongs to."""
        return self.flows[-1:] or sorted(self.module_flows)

    def visit_Module(self, node: ast.Module) -> None:
        for child in ast.walk(node):
            if isinstance(child, ast.ClassDef):
                self.module_flows |= {
                    FLOW_BASES[_name_of(base)]
                    for base in child.bases
                    if _name_of(base) in FLOW_BASES
                }
            if (
                isinstance(child, ast.Assign)
                and isinstance(target := child.targets[0], ast.Subscript)
                and resolve(target.slice) == "title_placeholders"
                and (keys := dict_keys(child.value, {})) is not None
            ):
                self.title_placeholders["title_placeholders"] = keys
        self.generic_visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        kinds = [
            FLOW_BASES[_name_of(b)] for b in node.bases if _name_of(b) in FLOW_BASES
        ]
        if kinds:
            self.flows.append(kinds[0])
        # A class that sets its key to None (a named entity) uses no key.
        clears = any(
            isinstance(child, ast.Assign)
            and _name_of(child.targets[0]) == "_attr_translation_key"
            and isinstance(child.value, ast.Constant)
            and child.value.value is None
            for child in ast.walk(node)
        )
        self.bases.append([] if clears else [_name_of(base) for base in node.bases])
        self.generic_visit(node)
        self.bases.pop()
        if kinds:
            self.flows.pop()

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            # errors["base"] = "cannot_connect"
            if (
                isinstance(target, ast.Subscript)
                and _name_of(target.value) == "errors"
                and (key := resolve(node.value))
            ):
                self.add(node, [f"{kind}.error.{key}" for kind in self.flow_kinds()])
            # _attr_translation_key = "soul" (class body or self.)
            if _name_of(target) == "_attr_translation_key" and (
                key := resolve(node.value)
            ):
                self.add_entity(node, key)
        self.generic_visit(node)

    def visit_Return(self, node: ast.Return) -> None:
        # return data, {CONF_TERMINAL: "invalid_terminal"}: a flow helper's errors
        if self.module_flows and isinstance(node.value, ast.Tuple):
            for element in node.value.elts:
                if isinstance(element, ast.Dict):
                    for value in element.values:
                        if key := resolve(value):
                            self.add(
                                node,
                                [f"{kind}.error.{key}" for kind in self.flow_kinds()],
                            )
        self.generic_visit(node)

    def add_entity(self, node: ast.AST, key: str) -> None:
        if self.platform is None:
            self.unclassified.append(
                f"{self.at(node)}: entity key {key!r} outside a platform"
            )
        else:
            self.add(node, [f"entity.{self.platform}.{key}.name"])

    def visit_Call(self, node: ast.Call) -> None:
        name = _name_of(node.func)
        keywords = {kw.arg: kw.value for kw in node.keywords if kw.arg}
        known = self.title_placeholders
        if (key := resolve(keywords.get("translation_key"))) is not None:
            placeholders = dict_keys(keywords.get("translation_placeholders"), known)
            if "issue" in name.lower():
                self.add(node, [f"issues.{key}.title"], placeholders)
                self.add(node, [f"issues.{key}.description"], placeholders)
            elif ERROR_CLASS.search(name):
                self.add(node, [f"exceptions.{key}.message"], placeholders)
            elif "Selector" in name:
                self.add(node, [f"selector.{key}.options"])
            elif name.endswith("Description"):
                self.add_entity(node, key)
            else:
                self.unclassified.append(
                    f"{self.at(node)}: {name}(translation_key={key!r})"
                )
        if "abort" in name and (reason := resolve(keywords.get("reason"))):
            placeholders = dict_keys(keywords.get("description_placeholders"), known)
            self.add(
                node,
                [f"{kind}.abort.{reason}" for kind in self.flow_kinds()],
                placeholders,
            )
        if name.startswith("async_show_") and (
            step := resolve(keywords.get("step_id"))
        ):
            placeholders = dict_keys(keywords.get("description_placeholders"), known)
            self.add(
                node,
                [f"{kind}.step.{step}" for kind in self.flow_kinds()],
                placeholders,
            )
        # super().__init__(entry, "memory") of a class whose base sets the key
        if (
            name == "__init__"
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Call)
            and _name_of(node.func.value.func) == "super"
            and self.bases
        ):
            for base in self.bases[-1]:
                index = self.key_setters.get(base)
                if (
                    index is not None
                    and index < len(node.args)
                    and (key := resolve(node.args[index]))
                ):
                    self.add_entity(node, key)
        self.generic_visit(node)


def key_setters() -> dict[str, int]:
    """Classes whose ``__init__`` sets the translation key from an argument."""
    setters = {}
    for path in INTEGRATION.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            for item in node.body:
                if not (isinstance(item, ast.FunctionDef) and item.name == "__init__"):
                    continue
                params = [arg.arg for arg in item.args.args[1:]]
                for stmt in ast.walk(item):
                    if (
                        isinstance(stmt, ast.Assign)
                        and _name_of(stmt.targets[0]) == "_attr_translation_key"
                        and isinstance(stmt.value, ast.Name)
                        and stmt.value.id in params
                    ):
                        setters[node.name] = params.index(stmt.value.id)
    return setters


def collect_uses() -> tuple[list[Use], list[str], dict[str, frozenset[str]]]:
    """Return the uses, the uses this module cannot classify, title placeholders."""
    uses: list[Use] = []
    unclassified: list[str] = []
    titles: dict[str, frozenset[str]] = {}
    setters = key_setters()
    for path in sorted(INTEGRATION.glob("*.py")):
        collector = KeyCollector(path.name, setters)
        collector.visit(ast.parse(path.read_text(encoding="utf-8")))
        uses += collector.uses
        unclassified += collector.unclassified
        if collector.title_placeholders:
            for kind in collector.module_flows:
                titles[kind] = collector.title_placeholders["title_placeholders"]
    return uses, unclassified, titles


def expand(path: str, strings: dict[str, Any]) -> list[str]:
    """Replace ``config_subentries.*`` by each subentry type the file has."""
    if "*" not in path:
        return [path]
    head, tail = path.split("*", 1)
    return [f"{head}{kind}{tail}" for kind in dig(strings, head.rstrip(".")) or {}]


def code_key_problems(uses: list[Use], strings: dict[str, Any]) -> list[str]:
    """Each key the code uses is translated; its texts use only the placeholders given."""
    problems = []
    for use in uses:
        found = [
            p
            for path in use.paths
            for p in expand(path, strings)
            if dig(strings, p) is not None
        ]
        if not found:
            problems.append(
                f"{use.where}: none of {', '.join(use.paths)} is translated"
            )
            continue
        if use.placeholders is None:
            continue
        for path in found:
            for where, value in texts_under(dig(strings, path), path):
                if missing := placeholders_in(value) - use.placeholders:
                    problems.append(
                        f"{use.where}: {where} uses {sorted(missing)}, which the code does not fill in"
                    )
    return problems


def flow_title_problems(
    titles: dict[str, frozenset[str]], strings: dict[str, Any]
) -> list[str]:
    """A flow_title's placeholders come from the flow's title_placeholders."""
    problems = []
    for kind in ("config", "options"):
        if (title := dig(strings, f"{kind}.flow_title")) is None:
            continue
        if missing := placeholders_in(title) - titles.get(kind, frozenset()):
            problems.append(
                f"{kind}.flow_title: {sorted(missing)} is not in title_placeholders"
            )
    return problems


def test_source_keys_are_all_classified() -> None:
    """A translation_key this module cannot place would escape the checks."""
    _, unclassified, _ = collect_uses()
    assert not unclassified, "\n".join(unclassified)


@pytest.mark.parametrize(
    "kind", ["error", "abort", "step", "exceptions", "issues", "selector", "entity"]
)
def test_source_keys_are_translated(kind: str) -> None:
    """errors[...], reason=, step_id=, translation_key= of the source, with placeholders."""
    uses, _, _ = collect_uses()
    chosen = [
        use for use in uses if any(f".{kind}." in f".{path}." for path in use.paths)
    ]
    assert chosen, f"found no {kind} in the source: is the collector broken?"
    problems = code_key_problems(chosen, english())
    assert not problems, "en.json:\n" + "\n".join(problems)


def test_flow_title_placeholders_come_from_the_flow() -> None:
    _, _, titles = collect_uses()
    problems = flow_title_problems(titles, english())
    assert not problems, "en.json:\n" + "\n".join(problems)


def _invoke_errors() -> set[type[InvokeError]]:
    found = {InvokeError}
    todo = [InvokeError]
    while todo:
        for sub in todo.pop().__subclasses__():
            found.add(sub)
            todo.append(sub)
    return found


def test_derived_keys_are_translated() -> None:
    """Keys the code computes: invocation errors, subentry field errors, triggers."""
    strings = english()
    wanted = {f"exceptions.{error.key}.message" for error in _invoke_errors()}
    # The soul form's errors are f"invalid_{field}" for InvalidSoulFieldError(field).
    for path in INTEGRATION.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and _name_of(node.func) == "InvalidSoulFieldError"
                and node.args
                and (field := resolve(node.args[0]))
            ):
                wanted.add(f"config_subentries.soul.error.invalid_{field}")
    automation = "device_automation"
    wanted |= {
        f"{automation}.trigger_type.{t}"
        for t in (*device_trigger.TERMINAL_TRIGGERS, *device_trigger.SOUL_TRIGGERS)
    }
    wanted |= {
        f"{automation}.extra_fields.{key}"
        for schema in device_trigger._EXTRA_FIELDS.values()
        for key in schema.schema
    }
    wanted.add(f"{automation}.action_type.{device_action.ACTION_TYPE}")
    assert "config_subentries.soul.error.invalid_mbti_type" in wanted
    missing = sorted(path for path in wanted if dig(strings, path) is None)
    assert not missing, "en.json lacks:\n" + "\n".join(missing)


# --- Forms, actions and entities, at run time ----------------------------------


def form_problems(where: str, schema: vol.Schema, strings: dict[str, Any]) -> list[str]:
    """A form's fields, sections and select options match the step's texts.

    Fields of a section are translated inside ``sections`` (and only there).
    """
    step = dig(strings, where)
    if step is None:
        return [f"{where}: missing"]
    problems = []
    parts: list[tuple[str, dict[Any, Any]]] = [(where, {})]
    for marker, value in schema.schema.items():
        if isinstance(value, section):
            parts.append((f"{where}.sections.{marker}", value.schema.schema))
        else:
            parts[0][1][marker] = value
    for path, fields in parts:
        texts = dig(strings, f"{path}.data") or {}
        names = {str(marker) for marker in fields}
        problems += [
            f"{path}.data.{name}: missing" for name in sorted(names - set(texts))
        ]
        problems += [
            f"{path}.data.{name}: the form has no such field here"
            for name in sorted(set(texts) - names)
        ]
        for field in fields.values():
            config = getattr(field, "config", {})
            if isinstance(field, selector.SelectSelector) and config.get(
                "translation_key"
            ):
                options = select_options(config)
                problems += [
                    f"{path}: option {option!r}: {why}"
                    for option in options
                    if (why := translation_key(option))
                ]
                problems += selector_translation_problems(
                    config["translation_key"], options, strings
                )
    return problems


# The forms of the hub's flows, by the step that shows them.
FORMS = {
    "config.step.user": config_flow.USER_SCHEMA,
    "config.step.reconfigure": config_flow.ENDPOINT_SCHEMA,
    "config.step.reauth_confirm": config_flow.REAUTH_SCHEMA,
    "options.step.init": config_flow.OPTIONS_SCHEMA,
}


@pytest.mark.parametrize("step", FORMS)
def test_form_matches_its_texts(step: str) -> None:
    problems = form_problems(step, FORMS[step], english())
    assert not problems, "en.json:\n" + "\n".join(problems)


def test_every_step_with_data_has_a_form_here() -> None:
    """A new form must join FORMS (or the soul test) to be compared."""
    strings = english()
    with_data = {
        f"{kind}.step.{step}"
        for kind in ("config", "options")
        for step, texts in (dig(strings, f"{kind}.step") or {}).items()
        if "data" in texts or "sections" in texts
    }
    assert with_data == set(FORMS)


async def test_soul_form_matches_its_texts(hass: HomeAssistant) -> None:
    entry = MockConfigEntry(domain=DOMAIN, title="Soul", data={})
    entry.add_to_hass(hass)
    schema = _soul_schema(hass, entry)
    strings = english()
    problems = [
        problem
        for step in ("user", "reconfigure")
        for problem in form_problems(
            f"config_subentries.soul.step.{step}", schema, strings
        )
    ]
    assert not problems, "en.json:\n" + "\n".join(problems)


async def test_actions_match_services_yaml(hass: HomeAssistant) -> None:
    """Registered actions, their schemas' fields and select options match the YAML."""
    async_setup_services(hass)
    registered = hass.services.async_services_for_domain(DOMAIN)
    services = services_yaml()
    assert set(registered) == set(services)
    problems = []
    for name, service in registered.items():
        schema = service.schema
        while isinstance(schema, vol.All):  # vol.All(vol.Schema, has_at_least_one_key)
            schema = schema.validators[0]
        markers = {str(marker): marker for marker in schema.schema}
        target = services[name].get("target") is not None
        yaml_fields = {field for field, _, _ in action_fields(services[name])}
        implied = {"device_id", "entity_id", "area_id"} if target else set()
        problems += [
            f"{name}.fields.{field}: not in the action's schema"
            for field in sorted(yaml_fields - set(markers))
        ]
        problems += [
            f"{name}: the schema's {field} is not in services.yaml"
            for field in sorted(set(markers) - yaml_fields - implied)
        ]
        for field, spec, _ in action_fields(services[name]):
            select = ((spec or {}).get("selector") or {}).get("select") or {}
            if field not in markers:
                continue
            validator = vol.Schema(schema.schema[markers[field]])
            for option in select_options(select):
                try:
                    validator(option)
                except vol.Invalid as err:
                    problems.append(f"{name}.fields.{field}: option {option!r}: {err}")
    assert not problems, "services.yaml:\n" + "\n".join(problems)


@pytest.mark.usefixtures("entity_registry_enabled_by_default")
async def test_registered_entities_are_translated(
    hass: HomeAssistant, mqtt_mock: MqttMockHAClient, entity_registry: er.EntityRegistry
) -> None:
    """Every entity of a hub with a soul and a body has its name and states translated."""
    entry = MockConfigEntry(
        domain=DOMAIN,
        title="Soul",
        data={},
        options={"topic_prefix": "soul"},
        subentries_data=[
            {
                "data": {CONF_NAME: "Aria", CONF_MBTI_TYPE: "ENFP"},
                "subentry_type": "soul",
                "title": "Aria",
                "unique_id": None,
            }
        ],
    )
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    base = "soul/terminal/terminal-001"
    async_fire_mqtt_message(hass, f"{base}/online", "online")
    async_fire_mqtt_message(hass, f"{base}/skills", json.dumps(skills()))
    async_fire_mqtt_message(hass, f"{base}/intent_catalog", json.dumps(catalog()))
    await hass.async_block_till_done()

    strings = english()
    entries = er.async_entries_for_config_entry(entity_registry, entry.entry_id)
    translated = [e for e in entries if e.translation_key]
    # Hub (Star), soul (PAD, mood) and body (connectivity, event) entities.
    assert {e.domain for e in translated} >= {
        "sensor",
        "event",
        "binary_sensor",
        "select",
    }
    problems = []
    for reg in translated:
        where = f"entity.{reg.domain}.{reg.translation_key}"
        if dig(strings, f"{where}.name") is None:
            problems.append(f"{where}.name: missing ({reg.entity_id})")
        capabilities = reg.capabilities or {}
        if reg.original_device_class == "enum":
            states = dig(strings, f"{where}.state") or {}
            problems += [
                f"{where}.state.{option}: missing ({reg.entity_id})"
                for option in capabilities.get("options", [])
                if option not in states
            ]
        if reg.domain == "event":
            states = dig(strings, f"{where}.state_attributes.event_type.state") or {}
            problems += [
                f"{where}.state_attributes.event_type.state.{event}: missing"
                for event in capabilities.get("event_types", [])
                if event not in states
            ]
    assert not problems, "en.json:\n" + "\n".join(problems)


# --- The checks fail on broken copies ------------------------------------------


def _set(data: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    *parents, last = dotted.split(".")
    target = data
    for part in parents:
        target = target[part]
    target[last] = value
    return data


def _rename(data: dict[str, Any], dotted: str, new: str) -> dict[str, Any]:
    *parents, last = dotted.split(".")
    target = dig(data, ".".join(parents))
    target[new] = target.pop(last)
    return data


def _upper_case_mbti(services: dict[str, Any]) -> dict[str, Any]:
    select = services["create_soul"]["fields"]["mbti_type"]["selector"]["select"]
    select["options"] = [option.upper() for option in select["options"]]
    return services


BROKEN: dict[str, tuple[Callable[[], list[str]], str]] = {
    "selector option key in upper case": (
        lambda: translation_problems(
            _rename(english(), "selector.mbti_type.options.estj", "ESTJ")
        ),
        "selector.mbti_type.options.ESTJ: key 'ESTJ' must match [a-z0-9-_]+",
    ),
    "select options of services.yaml in upper case": (
        lambda: service_problems(_upper_case_mbti(services_yaml())),
        "create_soul.fields.mbti_type.selector.select.options: key 'ESTJ' must match",
    ),
    "data_description without a field": (
        lambda: translation_problems(
            _set(english(), "config.step.user.data_description.llm_modle", "Typo.")
        ),
        "config.step.user.data_description.llm_modle: describes no field",
    ),
    "section field outside its section": (
        lambda: form_problems(
            "options.step.init",
            config_flow.OPTIONS_SCHEMA,
            _set(english(), "options.step.init.data.mem0_url", "mem0 server URL"),
        ),
        "options.step.init.data.mem0_url: the form has no such field here",
    ),
    "URL in a text": (
        lambda: translation_problems(
            _set(english(), "config.error.invalid_url", "See https://example.com.")
        ),
        "config.error.invalid_url: contains a URL",
    ),
    "HTML in a text": (
        lambda: translation_problems(
            _set(english(), "config.abort.already_configured", "<b>Already</b> set up.")
        ),
        "config.abort.already_configured: contains HTML",
    ),
    "malformed placeholder": (
        lambda: translation_problems(
            _set(english(), "config.flow_title", "Soul for {terminal")
        ),
        "config.flow_title: has malformed braces",
    ),
    "placeholder in an entity state": (
        lambda: translation_problems(
            _set(english(), "entity.sensor.mood.state.bored", "Bored by {soul}")
        ),
        "entity.sensor.mood.state.bored: placeholder {soul} where none is filled in",
    ),
    "empty text": (
        lambda: translation_problems(_set(english(), "services.recall.name", " ")),
        "services.recall.name: is empty",
    ),
    "action without a translation": (
        lambda: service_translation_problems(
            services_yaml(), _rename(english(), "services.forget", "forgot")
        ),
        "services.forget: the action has no translation",
    ),
    "unknown selector": (
        lambda: service_problems(
            _set(services_yaml(), "recall.fields.limit.selector", {"numbr": {}})
        ),
        "recall.fields.limit.selector:",
    ),
    "manifest keys out of order": (
        lambda: manifest_order_problems(
            {"name": "Soul", "domain": "soul", **manifest()}
        ),
        "keys are ['name', 'domain'",
    ),
    "manifest without version": (
        lambda: manifest_key_problems(
            {k: v for k, v in manifest().items() if k != "version"}
        ),
        "version: missing",
    ),
    "dependency that does not exist": (
        lambda: dependency_problems(
            _set(manifest(), "dependencies", ["mqtt", "no_such_thing"])
        ),
        "dependencies: no_such_thing is no Home Assistant integration",
    ),
    "requirement with a space": (
        lambda: requirement_problems(_set(manifest(), "requirements", ["regex >= 1"])),
        "requirements: 'regex >= 1' contains a space",
    ),
    "icon without mdi:": (
        lambda: ICONS(_set(icons(), "services.recall.service", "book-search"), ""),
        "services.recall.service: 'book-search' does not start with mdi:",
    ),
    "state icon equal to the default": (
        lambda: ICONS(
            _set(icons(), "entity.sensor.mood.state.neutral", "mdi:emoticon-outline"),
            "",
        ),
        "entity.sensor.mood.state.neutral: same icon as the default",
    ),
    "exception the code raises, missing": (
        lambda: code_key_problems(
            collect_uses()[0], _rename(english(), "exceptions.not_loaded", "unloaded")
        ),
        "none of exceptions.not_loaded.message is translated",
    ),
    "placeholder the code does not fill in": (
        lambda: code_key_problems(
            collect_uses()[0],
            _set(english(), "exceptions.timeout.message", "{terminal} late: {why}"),
        ),
        "exceptions.timeout.message uses ['why']",
    ),
}


@pytest.mark.parametrize("case", BROKEN)
def test_a_broken_copy_fails(case: str) -> None:
    """The same check, fed a copy with one thing broken, reports exactly that."""
    check, expected = BROKEN[case]
    problems = check()
    assert any(expected in problem for problem in problems), problems
