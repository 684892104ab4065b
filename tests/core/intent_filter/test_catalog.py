"""Catalog validation, the compile cache, and hostile patterns."""

from __future__ import annotations

import time
from typing import Any

import pytest

from custom_components.soul.core.intent_filter import (
    IntentFilterError,
    clear_compile_cache,
    compile_catalog,
    filter_intents,
)
from custom_components.soul.core.intent_filter.catalog import (
    MAX_INTENTS,
    cached_catalog,
)

OK = [{"id": "light", "match": {"keywords_any": ["灯"]}}]


@pytest.mark.parametrize(
    ("request_body", "message"),
    [
        (None, "must be a JSON object"),
        ({"intent_catalog": OK}, "command is required"),
        ({"command": "", "intent_catalog": OK}, "command is required"),
        ({"command": 5, "intent_catalog": OK}, "command is required"),
        ({"command": "x" * 2001, "intent_catalog": OK}, "longer than 2000"),
        ({"command": "开灯"}, "intent_catalog is required"),
        ({"command": "开灯", "intent_catalog": {}}, "must be an array"),
        ({"command": "开灯", "intent_catalog": []}, "must not be empty"),
        ({"command": "开灯", "intent_catalog": [{"name": "x"}]}, "needs a non-empty string id"),
        ({"command": "开灯", "intent_catalog": [{"id": "a"}, {"id": "a"}]}, "duplicate intent id 'a'"),
        ({"command": "开灯", "intent_catalog": [{"id": f"i{n}"} for n in range(MAX_INTENTS + 1)]}, "more than 256"),
        ({"command": "开灯", "intent_catalog": [{"id": "a", "match": {"keywords_any": "灯"}}]}, "list of strings"),
        ({"command": "开灯", "intent_catalog": [{"id": "a", "match": {"keywords_any": ["x" * 65]}}]}, "longer than 64"),
        ({"command": "开灯", "intent_catalog": [{"id": "a", "match": {"regex_any": ["(x"]}}]}, "invalid pattern '(x'"),
        ({"command": "开灯", "intent_catalog": [{"id": "a", "match": {"regex_all": ["a" * 513]}}]}, "longer than 512"),
        ({"command": "开灯", "intent_catalog": [{"id": "a", "match": {"bogus": []}}]}, "unknown match rule 'bogus'"),
        ({"command": "开灯", "intent_catalog": [{"id": "a", "match": {"entity_types_any": ["planet"]}}]}, "unknown entity type 'planet'"),
        ({"command": "开灯", "intent_catalog": [{"id": "a", "match": {"min_confidence": 2}}]}, "min_confidence must be a number"),
        ({"command": "开灯", "intent_catalog": [{"id": "a", "priority": "high"}]}, "priority must be a number"),
        ({"command": "开灯", "intent_catalog": [{"id": "a", "slots": [{"name": "s"}, {"name": "s"}]}]}, "duplicate slot 's'"),
        ({"command": "开灯", "intent_catalog": [{"id": "a", "slots": [{"name": "s", "regex": "(a)", "regex_group": "g"}]}]}, "regex_group 'g'"),
        ({"command": "开灯", "intent_catalog": [{"id": "a", "slots": [{"name": "s", "time_kind": "soon"}]}]}, "time_kind must be"),
        ({"command": "开灯", "intent_catalog": [{"id": "a", "slots": [{"name": "s", "from_time_key": "when"}]}]}, "from_time_key must be"),
        ({"command": "开灯", "intent_catalog": [{"id": "a", "slots": [{"name": "s", "required": "yes"}]}]}, "required must be"),
        ({"command": "开灯", "intent_catalog": OK, "options": []}, "options must be an object"),
        ({"command": "开灯", "intent_catalog": OK, "options": {"allow_multi_intent": 1}}, "allow_multi_intent must be"),
        ({"command": "开灯", "intent_catalog": OK, "options": {"min_confidence": -1}}, "min_confidence"),
        ({"command": "开灯", "intent_catalog": OK, "timezone": "Mars/Olympus"}, "unknown timezone"),
        ({"command": "开灯", "intent_catalog": OK, "now": "tomorrow"}, "not an ISO 8601"),
        ({"command": "开灯", "intent_catalog": OK, "locale": "tlh"}, "locale must be one of"),
        ({"command": "开灯", "intent_catalog": [{"id": "a", "x": object()}]}, "plain JSON"),
    ],
)  # fmt: skip
def test_invalid_requests_are_explained(request_body: Any, message: str) -> None:
    with pytest.raises(IntentFilterError, match=message.replace("(", r"\(")):
        filter_intents(request_body)


def test_catalog_is_compiled_once_per_content() -> None:
    clear_compile_cache()
    request = {"command": "开灯", "intent_catalog": [dict(OK[0])]}
    assert filter_intents(request)["meta"]["catalog_cached"] is False
    # Equal content in new objects (as every HTTP request brings) hits the cache.
    again = {
        "command": "关灯",
        "intent_catalog": [{"id": "light", "match": {"keywords_any": ["灯"]}}],
    }
    assert filter_intents(again)["meta"]["catalog_cached"] is True
    first, _ = cached_catalog(again["intent_catalog"])
    changed = [{"id": "light", "match": {"keywords_any": ["灯", "lamp"]}}]
    assert (
        filter_intents({"command": "开灯", "intent_catalog": changed})["meta"][
            "catalog_cached"
        ]
        is False
    )
    assert cached_catalog(again["intent_catalog"])[0] is first
    clear_compile_cache()
    assert cached_catalog(again["intent_catalog"])[0] is not first


def test_compile_catalog_is_the_validator() -> None:
    compiled = compile_catalog(OK)
    assert [i.id for i in compiled.intents] == ["light"]
    with pytest.raises(IntentFilterError):
        compile_catalog([{"id": "a", "match": {"regex_any": ["("]}}])


HOSTILE = [
    {"id": "evil_any", "match": {"regex_any": ["^(a|aa)+$"]}},
    {"id": "evil_slot", "match": {"keywords_any": ["b"]}, "slots": [{"name": "x", "regex": "(a|aa)+$"}]},
    {"id": "light", "match": {"keywords_any": ["light"]}, "slots": [{"name": "mode"}]},
]  # fmt: skip


def test_hostile_patterns_are_bounded_reported_and_disabled() -> None:
    clear_compile_cache()
    command = "a" * 60 + " b, turn on the light"
    started = time.perf_counter()
    first = filter_intents({"command": command, "intent_catalog": HOSTILE})
    elapsed = time.perf_counter() - started
    # The command's patterns share one budget (12 ms): far from a stalled loop.
    assert elapsed < 1.0
    reported = {(w["intent_id"], w["pattern"]) for w in first["meta"]["warnings"]}
    assert reported == {("evil_any", "^(a|aa)+$"), ("evil_slot", "(a|aa)+$")}
    # The rest of the catalog still works.
    light = [i for i in first["intents"] if i["intent_id"] == "light"]
    assert light[0]["normalized"] == {"mode": "on"}
    # A pattern that timed out is disabled from then on: still reported, no
    # longer run. (One cut short by the spent budget is not blamed: it runs
    # again on the next command, and is disabled when it times out itself.)
    filter_intents({"command": command, "intent_catalog": HOSTILE})
    second = filter_intents({"command": command, "intent_catalog": HOSTILE})
    assert {w["pattern"] for w in second["meta"]["warnings"]} == {
        "^(a|aa)+$",
        "(a|aa)+$",
    }
    assert all("disabled" in w["error"] for w in second["meta"]["warnings"])
