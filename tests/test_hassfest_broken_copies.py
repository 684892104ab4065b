"""The hassfest checks fail on broken copies of our files.

Each case feeds one check of ``tests/hassfest`` a copy of a file with one thing
broken and expects the problem it reports; a check that passes everything
would pass our files too, so these show that the other ``test_hassfest_*``
modules can fail.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from custom_components.soul import config_flow

from .hassfest.code_keys import code_key_problems, collect_uses
from .hassfest.common import dig, english, icons, manifest, services_yaml
from .hassfest.icons import ICONS
from .hassfest.manifest import (
    dependency_problems,
    manifest_key_problems,
    manifest_order_problems,
    requirement_problems,
)
from .hassfest.runtime import form_problems
from .hassfest.services import service_problems, service_translation_problems
from .hassfest.translations import translation_problems


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
