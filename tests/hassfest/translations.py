"""Translation files, as ``script/hassfest/translations.py`` checks them.

Structure (allowed keys, required texts, sections inside ``sections``), key
formats (option, state, entity and action keys ``[a-z0-9-_]+``), texts
(non-empty, trimmed, no HTML, no URL, well-formed placeholders, none in
states) and data_description keys naming fields of their data.
"""

from __future__ import annotations

from typing import Any

from .common import (
    Check,
    all_of,
    exactly_one,
    keyed,
    mapping,
    platform,
    slug,
    slug_or_default,
    text,
    translation_key,
)

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
