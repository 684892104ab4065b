"""services.yaml, as ``script/hassfest/services.py`` checks it.

Action and field structure, selectors, targets, unique fields; and that every
action, field, section and select option of services.yaml is translated.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from homeassistant.helpers import selector
import voluptuous as vol

from .common import dig, slug, translation_key

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
