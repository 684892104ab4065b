"""Catalog validation, the compile cache, and hostile patterns."""

from __future__ import annotations

import time
from typing import Any

import pytest

from custom_components.soul.core.intent_filter import (
    IntentFilterError,
    clear_compile_cache,
    compile_catalog,
    engine,
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


def test_hostile_patterns_are_bounded_and_reported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The patterns' budget (12 ms) is what is tested; the command's own 15 ms
    # is not: on a busy machine the patterns' 12 ms leave too little of it
    # for the light's clause, which is then skipped (and the test failed).
    monkeypatch.setattr(engine, "FILTER_BUDGET", 1.0)
    clear_compile_cache()
    command = "a" * 60 + " b, turn on the light"
    started = time.perf_counter()
    first = filter_intents({"command": command, "intent_catalog": HOSTILE})
    elapsed = time.perf_counter() - started
    # The command's patterns share one budget (12 ms): far from a stalled loop.
    assert elapsed < 1.0
    reported = {(w.get("intent_id"), w["pattern"]) for w in first["meta"]["warnings"]}
    assert ("evil_any", "^(a|aa)+$") in reported
    # The rest of the catalog still works.
    light = [i for i in first["intents"] if i["intent_id"] == "light"]
    assert light[0]["normalized"] == {"mode": "on"}


def test_a_slow_pattern_is_never_disabled_for_other_commands() -> None:
    """One user's hostile command must not switch an intent off for everyone.

    The black-box run found this: the disabled set lived on the compiled
    catalog, which every body with that catalog shares.
    """
    evil = {"command": "a" * 80 + "#", "intent_catalog": HOSTILE}
    for _ in range(3):
        warnings = filter_intents(evil)["meta"]["warnings"]
        assert any(
            "took longer" in w["error"] or "no time" in w["error"] for w in warnings
        )
    ordinary = filter_intents({"command": "aaaa", "intent_catalog": HOSTILE})
    assert ordinary["decision"]["action"] == "execute_intents"
    assert ordinary["intents"][0]["intent_id"] == "evil_any"
    assert "warnings" not in ordinary["meta"]


def test_a_spent_budget_stops_every_pattern_of_the_command() -> None:
    """Many slow patterns cost one budget, not one timeout each."""
    slow = [
        {
            "id": f"i{n}",
            "match": {"regex_any": [f"^(a|aa)+$(?#{n}-{k})" for k in range(4)]},
        }
        for n in range(32)
    ]
    started = time.perf_counter()
    response = filter_intents({"command": "a" * 80 + "#", "intent_catalog": slow})
    assert time.perf_counter() - started < 1.0  # a hang detector, not a timing goal
    warnings = response["meta"]["warnings"]
    assert len(warnings) <= 16
    assert any("no time is left" in w["error"] for w in warnings)


def test_catalogs_have_at_most_256_patterns() -> None:
    many = [
        {"id": f"i{n}", "match": {"regex_any": [f"x{n}y{k}" for k in range(32)]}}
        for n in range(9)
    ]
    with pytest.raises(IntentFilterError, match="more than 256 distinct patterns"):
        compile_catalog(many)


def test_patterns_compile_on_first_use_and_decide_alike() -> None:
    """A catalog's plain patterns are checked when it compiles, compiled when used.

    The decisions are those of a catalog compiled at once: the same command
    answers the same before and after its patterns compiled.
    """
    entries = [
        {
            "id": "fan",
            "match": {"regex_any": ["(?:打开|开)风扇(?#first use)"]},
            "slots": [{"name": "speed", "regex": r"(\d+)档(?#first use)"}],
        },
        {"id": "lamp", "match": {"regex_any": ["台灯(?#first use)"]}},
    ]
    catalog = compile_catalog(entries)
    patterns = catalog.patterns
    assert not any(p.is_compiled for p in patterns.values())
    request = {
        "command": "打开风扇调到3档",
        "intent_catalog": entries,
        "now": "2026-02-22T17:40:00+08:00",
    }
    first = filter_intents(request, compiled=catalog)
    assert patterns["(?:打开|开)风扇(?#first use)"].is_compiled
    assert patterns[r"(\d+)档(?#first use)"].is_compiled
    assert not patterns["台灯(?#first use)"].is_compiled  # no 台 in the text
    again = filter_intents(request, compiled=catalog)
    for response in (first, again):
        del response["meta"]["latency_ms"], response["request_id"]
    assert first == again
    assert first["intents"][0]["intent_id"] == "fan"
    assert first["intents"][0]["normalized"] == {"speed": 3}


def test_catalogs_share_what_they_hold_alike() -> None:
    """Equal intents, slots and keyword indexes are one copy for every catalog."""
    clear_compile_cache()
    first = compile_catalog([*OK, {"id": "fan", "slots": [{"name": "speed"}]}])
    second = compile_catalog([*OK, {"id": "fan", "slots": [{"name": "speed"}]}])
    assert first is not second
    assert first.intents[0] is second.intents[0]
    assert first.intents[1].slots[0] is second.intents[1].slots[0]
    assert first.keyword_pattern is second.keyword_pattern
    assert first.keyword_owners is second.keyword_owners
    assert first.alignments is not second.alignments  # each catalog its own


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        (
            [{"id": "a", "slots": [{"name": "s"}, {"name": "s"}]}],
            "intent 'a': duplicate slot 's'",
        ),
        ([{"id": "a"}, {"id": "a"}], "duplicate intent id 'a' in intent_catalog"),
        (
            [{"id": "a", "slots": [{"name": "s", "regex": "(x"}]}],
            "intent 'a': slot 's' regex: invalid pattern '(x'",
        ),
    ],
)
def test_shared_parts_are_refused_as_fresh_ones(
    entries: list[Any], message: str
) -> None:
    """An intent or slot seen before (and shared) is checked as a new one."""
    clear_compile_cache()
    for warm in (False, True):
        if warm:  # every part that passed is shared now
            compile_catalog([{"id": "a", "slots": [{"name": "s"}]}])
        with pytest.raises(IntentFilterError) as caught:
            compile_catalog(entries)
        assert str(caught.value).startswith(message)
