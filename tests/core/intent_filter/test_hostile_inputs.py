"""Hostile inputs end in ``IntentFilterError`` or a normal answer, within bounded work.

Found by fuzzing (F6: date arithmetic overflows, F8: lone surrogates, T5:
keyword hits x owners). No timing asserts: the bounds are structural.
"""

from __future__ import annotations

from datetime import UTC, datetime
import itertools
import json
import random
from typing import Any

import orjson
import pytest

from custom_components.soul.core.intent_filter import (
    IntentFilterError,
    compile_catalog,
    filter_intents,
    scoring,
)
from custom_components.soul.core.intent_filter.numbers import parse_number
from custom_components.soul.core.intent_filter.reading import (
    MAX_CLAUSE_HITS,
    Context,
    Hit,
    KeywordHits,
    ends_in_time,
    read_clause,
)
from custom_components.soul.core.intent_filter.request import parse_request
from custom_components.soul.core.intent_filter.segmenter import Segment
from custom_components.soul.core.intent_filter.slots import json_number
from custom_components.soul.core.intent_filter.timepoints import find_time_points
from custom_components.soul.core.language import detect_locale, to_simplified

NOW = "2026-02-22T17:40:00+08:00"


def run(command: str, slot: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """Filter ``command`` against one light intent with ``slot``."""
    request = {
        "command": command,
        "intent_catalog": [
            {"id": "light", "match": {"keywords_any": ["灯"]}, "slots": [slot]}
        ],
        "timezone": "Asia/Shanghai",
        **extra,
    }
    request.setdefault("now", NOW)
    return filter_intents(request)


# --- F6: a time or duration past the calendar -------------------------------


@pytest.mark.parametrize(
    ("command", "key"),
    [
        ("开灯一亿天", "seconds"),
        ("开灯一亿天", "iso"),
        ("开灯一亿天", "timestamp"),
        ("开灯9999999999999999999分钟", "iso"),
        ("开灯9999999999999999999分钟", "seconds"),
        ("开灯" + "9" * 400 + "秒后", "trigger_at"),
    ],
)
def test_a_duration_past_the_calendar_is_no_duration(command: str, key: str) -> None:
    """The slot stays unfilled, as for a clock time that cannot be resolved."""
    response = run(
        command,
        {"name": "d", "from_time_key": key},
        options={"return_debug_entities": True},
    )
    (intent,) = response["intents"]
    assert intent["intent_id"] == "light"
    assert "d" not in intent["normalized"]
    assert response["debug_entities"][0]["durations"] == []
    assert response["meta"]["time_signals"] == 0


def test_a_representable_duration_still_fills_the_slot() -> None:
    response = run("开灯十分钟", {"name": "d", "from_time_key": "seconds"})
    assert response["intents"][0]["normalized"]["d"] == 600


@pytest.mark.parametrize("name", ["delay_seconds", "duration_seconds"])
def test_an_implicit_seconds_slot_ignores_an_endless_duration(name: str) -> None:
    response = run("开灯一亿天", {"name": name})
    assert name not in response["intents"][0]["normalized"]


@pytest.mark.parametrize(
    "now",
    [
        "0001-01-01T00:00:00+01:00",
        "0001-01-01T00:00:00",
        "0001-01-07T23:59:59",
        "9999-12-31T23:00:00",
        "9999-12-31T23:59:59-05:00",
        "9999-12-25T00:00:00",
    ],
)
def test_a_now_without_room_is_refused(now: str) -> None:
    with pytest.raises(
        IntentFilterError, match="too close to the ends of the calendar"
    ):
        run("晚上8点开灯", {"name": "d", "from_time_key": "iso"}, now=now)


@pytest.mark.parametrize(
    "now", ["0001-01-08T00:00:00+14:00", "9999-12-24T00:00:00-12:00"]
)
@pytest.mark.parametrize("timezone", ["Pacific/Kiritimati", "Etc/GMT+12", "UTC"])
@pytest.mark.parametrize(
    "command", ["大后天晚上8点开灯", "明天早上8点开灯", "开灯10分钟后", "晚上12点开灯"]
)
def test_a_now_at_the_edge_of_the_range_answers(
    now: str, timezone: str, command: str
) -> None:
    response = run(
        command,
        {"name": "d", "from_time_key": "iso"},
        now=now,
        timezone=timezone,
        options={"return_debug_entities": True},
    )
    assert response["decision"]["action"] == "execute_intents"


def test_clock_times_past_the_calendar_are_not_found() -> None:
    """``find_time_points`` never raises, whatever ``now`` it is given."""
    now = datetime(9999, 12, 31, 23, tzinfo=UTC)
    assert find_time_points("大后天晚上8点", now) == []
    assert find_time_points("晚上8点", now) == []
    # 8:30 has passed, tomorrow's is past the calendar: 20:30 is left
    (point,) = find_time_points("8:30", datetime(9999, 12, 31, 9, tzinfo=UTC))
    assert point.at == datetime(9999, 12, 31, 20, 30, tzinfo=UTC)


def test_ends_in_time() -> None:
    now = datetime(2026, 2, 22, tzinfo=UTC)
    assert ends_in_time(now, 600)
    assert not ends_in_time(now, 1e8 * 86400)
    assert not ends_in_time(now, 10**30)
    assert not ends_in_time(now, float("inf"))
    assert not ends_in_time(now, float("nan"))


# --- F8: lone surrogates ------------------------------------------------------


def test_a_value_map_key_with_a_lone_surrogate_is_refused() -> None:
    with pytest.raises(IntentFilterError, match="value_map key"):
        compile_catalog(
            [
                {
                    "id": "a",
                    "match": {"keywords_any": ["灯"]},
                    "slots": [{"name": "s", "value_map": {"\ud800": 1}}],
                }
            ]
        )


def test_a_slot_name_with_a_lone_surrogate_is_refused() -> None:
    with pytest.raises(IntentFilterError, match="slot name"):
        compile_catalog(
            [
                {
                    "id": "a",
                    "match": {"keywords_any": ["灯"]},
                    "slots": [{"name": "\udfff"}],
                }
            ]
        )


def test_value_map_keys_still_fold() -> None:
    catalog = compile_catalog(
        [
            {
                "id": "a",
                "match": {"keywords_any": ["灯"]},
                "slots": [{"name": "s", "value_map": {"開": 1, "": 2, 3: 4}}],
            }
        ]
    )
    assert dict(catalog.intents[0].slots[0].value_map) == {"开": 1, "": 2, "3": 4}


@pytest.mark.parametrize(
    "text",
    ["好\ud800", "\ud800", "\udfff體", "體\ud800體\udc00", "a\ud83d", "\ud800\udc00"],
)
def test_detect_locale_takes_any_string(text: str) -> None:
    assert detect_locale(text) in {"zh-CN", "zh-TW", "en-US"}


def test_to_simplified_keeps_lone_surrogates() -> None:
    assert to_simplified("體\ud800體") == "体\ud800体"
    assert detect_locale("體\ud800") == "zh-TW"
    assert detect_locale("好\ud800") == "zh-CN"


# --- T5: keyword hits x owners --------------------------------------------------

REPEATED = [{"id": f"i{i}", "match": {"keywords_any": ["一"]}} for i in range(256)]


def _reading(command: str, catalog: list[Any]) -> tuple[Context, Any]:
    request = parse_request(
        {"command": command, "intent_catalog": catalog, "now": NOW}, "UTC"
    )
    ctx = Context(request, compile_catalog(catalog), "zh-CN")
    reading = read_clause(ctx, Segment(0, command, 0, len(command)))
    return ctx, reading


def test_a_repeated_keyword_answers_with_a_warning() -> None:
    response = filter_intents({"command": "一" * 2000, "intent_catalog": REPEATED})
    assert response["decision"]["trigger_intent_id"] == "i0"
    errors = [w["error"] for w in response["meta"]["warnings"]]
    assert any(f"holds {MAX_CLAUSE_HITS} catalog keywords" in e for e in errors)


def test_hits_read_of_a_clause_are_bounded() -> None:
    ctx, reading = _reading("一" * 2000, REPEATED)
    assert len(reading.hits) == MAX_CLAUSE_HITS
    assert ctx.warnings
    _, short = _reading("一" * 20, REPEATED)
    assert len(short.hits) == 20


def test_owners_share_one_list_per_keyword() -> None:
    """256 owners x 512 hits are 256 pairs, not 131,072."""
    ctx, reading = _reading("一" * 2000, REPEATED)
    reading.own(ctx.catalog.keyword_owners)
    assert len(reading.by_owner) == 256
    assert all(len(pairs) == 1 for pairs in reading.by_owner.values())
    lists = {id(pairs[0][0]) for pairs in reading.by_owner.values()}
    assert len(lists) == 1


def test_each_intent_reads_a_bounded_number_of_hits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A long keyword found at every place: its hits overlap, each intent reads few."""
    read = 0
    longest_first = scoring._longest_first

    def counting(lists: list[KeywordHits]) -> Any:
        nonlocal read
        for hit in longest_first(lists):
            read += 1
            yield hit

    monkeypatch.setattr(scoring, "_longest_first", counting)
    catalog = [
        {"id": f"i{i}", "match": {"keywords_any": ["一" * 64]}} for i in range(16)
    ]
    response = filter_intents(
        {"command": "一" * 2000, "intent_catalog": catalog},
        default_timezone="UTC",
    )
    assert response["decision"]["trigger_intent_id"] == "i0"
    # (one more is drawn from each intent's hits before its loop stops)
    assert 0 < read <= 16 * (scoring.MAX_HITS_READ + 1)


def test_longest_first_is_a_stable_sort_by_length() -> None:
    """The lazy merge gives the order the filter always scored hits in."""
    rng = random.Random(7)  # noqa: S311 - a test's shuffles
    for _ in range(300):
        keywords = rng.sample(
            ["a", "b", "ab", "ba", "abc", "cd", "x" * 5], rng.randint(1, 5)
        )
        flat = [
            Hit(rng.choice(keywords), place, place + 1)
            for place in range(rng.randint(1, 30))
        ]
        lists: dict[str, KeywordHits] = {}
        for place, hit in enumerate(flat):
            lists.setdefault(hit.keyword, []).append((place, hit))
        # owners may list a keyword twice: its hits then come twice
        owned = list(lists.values())
        if rng.random() < 0.2:
            owned.append(owned[0])
        expected_flat = sorted(
            (hit for hits in owned for hit in hits), key=lambda item: item[0]
        )
        expected = sorted(
            (hit for _, hit in expected_flat), key=lambda h: -len(h.keyword)
        )
        got = list(scoring._longest_first(owned))
        assert [id(h) for h in got] == [id(h) for h in expected]


def test_normal_commands_read_every_hit() -> None:
    for n in (1, 8, 40):
        _, reading = _reading("一二" * n, REPEATED)
        assert len(reading.hits) == n
    assert list(itertools.islice(scoring._longest_first([]), 1)) == []


@pytest.mark.parametrize("digits", ["9" * 400, "１" * 400, "9" * 400 + ".5"])
def test_a_numeral_no_float_holds_is_no_number(digits: str) -> None:
    """400 digits were ``inf``: a slot value no strict JSON can carry to a body."""
    assert parse_number(digits) is None
    catalog = [
        {
            "id": "bright",
            "match": {"keywords_any": ["亮度"]},
            "slots": [{"name": "brightness", "use_normalized_entity": True}],
        }
    ]
    response = filter_intents(
        {"command": f"亮度调到{digits}", "intent_catalog": catalog}
    )
    json.dumps(response, allow_nan=False)  # strict JSON, whatever was said
    assert parse_number("50") == 50.0


@pytest.mark.parametrize(
    "command",
    ["亮度调到" + "9" * 30, "亮度调到" + "9" * 20, "提醒我" + "9" * 40 + "秒后"],
)
def test_a_whole_number_past_64_bits_stays_a_float(command: str) -> None:
    """Home Assistant's writer (orjson) refuses such an integer: it was a 500."""
    catalog = [
        {
            "id": "bright",
            "match": {"keywords_any": ["亮度", "提醒"]},
            "slots": [
                {"name": "brightness", "from_entity_types": ["number"]},
                {"name": "seconds", "from_entity_types": ["duration"]},
            ],
        }
    ]
    response = filter_intents(
        {
            "command": command,
            "intent_catalog": catalog,
            "options": {"return_debug_entities": True},
        }
    )
    orjson.dumps(response)
    assert json_number(2.0**70) == 2.0**70
    assert json_number(float(2**63)) == 2**63
    assert type(json_number(float(2**63))) is int
    assert json_number(-(2.0**63)) == -(2**63)
    assert json_number(2.5) == 2.5
