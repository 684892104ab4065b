"""The translation keys the code uses are translated, with the placeholders it fills in.

Statically, from the source: ``translation_key``, ``reason``, ``errors[...]``,
``step_id`` and placeholders (``tests/hassfest/code_keys.py``), and the keys
the code computes (invocation errors, subentry field errors, device triggers).
"""

from __future__ import annotations

import ast

import pytest

from custom_components.soul import device_action, device_trigger
from custom_components.soul.core.invoker import InvokeError

from .hassfest.code_keys import (
    code_key_problems,
    collect_uses,
    flow_title_problems,
    name_of,
    resolve,
)
from .hassfest.common import INTEGRATION, dig, english


def test_source_keys_are_all_classified() -> None:
    """A translation_key the collector cannot place would escape the checks."""
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
                and name_of(node.func) == "InvalidSoulFieldError"
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
