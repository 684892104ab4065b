"""icons.json, as ``script/hassfest/icons.py`` checks it.

mdi: icons that exist (when the frontend's icon list is installed), actions and
entities keyed as hassfest wants, state icons that differ from the default, and
icons only for actions, entities, states and sections that exist.
"""

from __future__ import annotations

from functools import cache
import json
from typing import Any

from .common import (
    HTML,
    MDI_LIST,
    all_of,
    dig,
    keyed,
    mapping,
    platform,
    translation_key,
)


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
