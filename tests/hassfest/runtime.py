"""Forms, actions and entities, compared with the texts at run time.

Extends ``script/hassfest/translations.py`` and ``script/hassfest/services.py``
from the files to what Home Assistant builds from the code: a flow form's
fields, sections and select options match its step's texts; the registered
actions' schemas match services.yaml; the entities Soul registers have their
names and states translated.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from homeassistant.core import Service
from homeassistant.data_entry_flow import section
from homeassistant.helpers import entity_registry as er, selector
import voluptuous as vol

from custom_components.soul import config_flow

from .common import dig, translation_key
from .services import action_fields, select_options, selector_translation_problems


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


def action_schema_problems(
    registered: Mapping[str, Service], services: dict[str, Any]
) -> list[str]:
    """The actions' schemas have the fields of services.yaml and take its options."""
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
    return problems


def entity_problems(
    translated: Iterable[er.RegistryEntry], strings: dict[str, Any]
) -> list[str]:
    """Registered entities with a translation key have their name and states."""
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
    return problems
