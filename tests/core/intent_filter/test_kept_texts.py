"""What a clause's text says is read once and kept, and only that.

``said`` keeps, by text, what does not depend on the request's clock or
catalog (a clause's variants, entities, durations, numbers, markers, and the
keywords each catalog index finds), and the pattern searches that ran to
their end. Each test shows the second read takes what the first kept, and
that it answers as a fresh read does.
"""

from __future__ import annotations

from typing import Any

import pytest

from custom_components.soul.core.intent_filter import (
    cached_catalog,
    engine,
    filter_intents,
    reading as reading_module,
    said,
    scoring,
)
from custom_components.soul.core.intent_filter.catalog import compile_catalog
from custom_components.soul.core.intent_filter.reading import (
    Context,
    Reading,
    read_clause,
)
from custom_components.soul.core.intent_filter.request import parse_request
from custom_components.soul.core.intent_filter.segmenter import segment

LIGHT: list[dict[str, Any]] = [
    {
        "id": "light",
        "match": {"keywords_any": ["灯", "开灯", "light"]},
        "slots": [{"name": "mode", "regex": "(开|关)"}],
    },
    {
        "id": "alarm",
        "match": {"keywords_any": ["提醒", "remind"]},
        "slots": [{"name": "trigger_in_seconds"}],
    },
]
OTHER: list[dict[str, Any]] = [{"id": "green", "match": {"keywords_any": ["绿色"]}}]
NOW = "2026-02-22T17:40:00+08:00"
COMMANDS = [
    "帮我把灯变成绿色并且10分钟后提醒我",
    "关灯，再定个20分钟的闹钟",
    "remind me in 10 minutes",
    "哇，好厉害啊",
    "明天早上8点叫我",
    "三百万天后开灯",
]


def _context(
    command: str, catalog: list[Any], now: str = "2026-02-22T17:40:00+08:00"
) -> Context:
    request = parse_request(
        {"command": command, "intent_catalog": catalog, "now": now}, "Asia/Shanghai"
    )
    return Context(request, compile_catalog(catalog), "zh-CN")


def _facts(reading: Reading) -> Any:
    """What a reading says (its variants with their origins, and all it found)."""
    return (
        reading.seg,
        [(v.text, tuple(v.origin)) for v in reading.clause.variants],
        list(reading.entities),
        list(reading.durations),
        reading.time_points,
        list(reading.numbers),
        [(h.keyword, h.start, h.end) for h in reading.hits],
        reading.types,
        reading.content_length,
        reading.markers.negated,
        reading.markers.chatty,
    )


def _read(command: str, catalog: list[Any], **kwargs: Any) -> list[Any]:
    ctx = _context(command, catalog, **kwargs)
    return [_facts(read_clause(ctx, seg)) for seg in segment(command)]


def _refuse(*_args: Any, **_kwargs: Any) -> Any:
    raise AssertionError


def test_a_clause_text_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    first = {command: _read(command, LIGHT) for command in COMMANDS}
    for name in (
        "clause_at",
        "find_entities",
        "merged_durations",
        "_number_tokens",
        "clock_phrases",
    ):
        monkeypatch.setattr(said, name, _refuse)
    monkeypatch.setattr(said, "expresses_emotion", _refuse)
    monkeypatch.setattr(reading_module, "_keyword_hits", _refuse)
    for command in COMMANDS:
        assert _read(command, LIGHT) == first[command], command
    monkeypatch.undo()
    said.forget()
    for command in COMMANDS:  # a fresh read finds the same
        assert _read(command, LIGHT) == first[command], command


def test_each_keyword_index_finds_its_own_hits(monkeypatch: pytest.MonkeyPatch) -> None:
    command = "帮我把灯变成绿色"
    light = _read(command, LIGHT)[0][6]
    other = _read(command, OTHER)[0][6]
    assert light == [("灯", 3, 4)]
    assert other == [("绿色", 6, 8), ("绿", 6, 7)]  # and its synonym
    monkeypatch.setattr(reading_module, "_keyword_hits", _refuse)
    assert _read(command, LIGHT)[0][6] == light
    assert _read(command, OTHER)[0][6] == other


def test_a_clause_keeps_few_indexes_and_few_hits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Memory: ``KEPT_INDEXES`` indexes a text, ``KEPT_HITS`` hits an index."""
    catalogs = [
        [{"id": "a", "match": {"keywords_any": ["一", f"keyword{n}"]}}]
        for n in range(said.KEPT_INDEXES + 3)
    ]
    for catalog in catalogs:
        assert _read("一二", catalog)[0][6] == [("一", 0, 1)]
    kept = said._texts["一二", 0, "zh-CN"].hits
    assert 0 < len(kept) <= said.KEPT_INDEXES
    reads = 0
    keyword_hits = reading_module._keyword_hits

    def counting(*args: Any) -> Any:
        nonlocal reads
        reads += 1
        return keyword_hits(*args)

    monkeypatch.setattr(reading_module, "_keyword_hits", counting)
    many = "一" * said.KEPT_HITS
    for text in (many, many, many + "一", many + "一"):
        _read(text, catalogs[0])
    assert reads == 3  # the longer text's hits were found each time


def test_the_same_text_elsewhere_or_in_another_locale_is_read_again() -> None:
    assert _read("关灯，开灯", LIGHT)[1][6] == [("开灯", 3, 5), ("灯", 4, 5)]
    assert _read("开灯", LIGHT)[0][6] == [("开灯", 0, 2), ("灯", 1, 2)]
    request = parse_request({"command": "開けて", "intent_catalog": LIGHT}, "UTC")
    catalog = compile_catalog(LIGHT)
    seg = segment("開けて")[0]
    japanese = read_clause(Context(request, catalog, "ja-JP"), seg)
    chinese = read_clause(Context(request, catalog, "zh-CN"), seg)
    assert japanese.clause.folded.text == "開けて"
    assert chinese.clause.folded.text == "开けて"


def test_what_depends_on_now_is_read_for_each_request() -> None:
    """A kept text's durations and clock times are checked against each ``now``."""
    late = _read("三百万天后开灯", LIGHT)  # 8,200 years on: past the calendar
    early = _read("三百万天后开灯", LIGHT, now="1000-01-01T08:00:00+08:00")
    assert late[0][3] == []
    assert [d.seconds for d in early[0][3]] == [3_000_000 * 86400]
    assert "duration" not in late[0][7]
    one = _read("明天早上8点叫我", LIGHT)[0][4]
    other = _read("明天早上8点叫我", LIGHT, now="2026-03-01T09:00:00+08:00")[0][4]
    assert one[0].at.day == 23
    assert other[0].at.day == 2
    said.forget()
    assert _read("三百万天后开灯", LIGHT) == late


def test_a_long_text_is_read_afresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """Texts over ``MAX_KEPT_TEXT`` characters are not kept (they seldom come again)."""
    reads: list[str] = []
    clause_at = said.clause_at

    def counting(text: str, *args: Any) -> Any:
        reads.append(text)
        return clause_at(text, *args)

    monkeypatch.setattr(said, "clause_at", counting)
    long = "灯" * (said.MAX_KEPT_TEXT + 1)
    short = "灯" * said.MAX_KEPT_TEXT
    for _ in range(2):
        _read(long, LIGHT)
        _read(short, LIGHT)
    assert reads == [long, short, long]


def test_kept_tables_are_bounded() -> None:
    ctx = _context("开灯", LIGHT)
    for n in range(said.KEPT_TEXTS + 10):
        said.clause_text(f"开灯{n}", 0, "zh-CN", 86400)
        said.merged_durations(f"{n}分钟")
        ctx.regex(ctx.catalog.intents[0], "(开)", f"开{n}")
    for table in (said._texts, said._durations, said.SEARCHES):
        assert 0 < len(table) <= said.KEPT_TEXTS


def test_a_search_that_ran_to_its_end_is_not_run_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ctx = _context("开灯", LIGHT)
    intent = ctx.catalog.intents[0]
    found = ctx.regex(intent, "(开|关)", "开灯")
    missed = ctx.regex(intent, "(开|关)", "调亮")
    monkeypatch.setattr(reading_module, "search", _refuse)
    again = _context("开灯", LIGHT)
    assert again.regex(intent, "(开|关)", "开灯") is found
    assert again.regex(intent, "(开|关)", "调亮") is missed is None
    assert again.incomplete == 0
    long = "开" * (said.MAX_KEPT_TEXT + 1)  # a long text is searched each time
    monkeypatch.undo()
    assert again.regex(intent, "(开|关)", long)
    monkeypatch.setattr(reading_module, "search", _refuse)
    with pytest.raises(AssertionError):
        again.regex(intent, "(开|关)", long)


def test_a_search_that_did_not_end_is_run_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What a timed-out search found is not the pattern's answer: never kept."""
    runs: list[str] = []
    search = reading_module.search

    def counting(pattern: Any, text: str, **kwargs: Any) -> Any:
        runs.append(text)
        return search(pattern, text, **kwargs)

    monkeypatch.setattr(reading_module, "search", counting)
    monkeypatch.setattr(reading_module, "REGEX_TIMEOUT", 0.001)
    hostile = "a" * 40 + "#"
    for _ in range(2):
        ctx = _context(hostile, LIGHT)
        assert ctx.regex(ctx.catalog.intents[0], "(a|aa)+$", hostile) is None
        assert ctx.incomplete == 1
        assert ctx.warnings
    assert runs == [hostile, hostile]


def test_a_command_is_split_placed_and_classified_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    commands = [
        "开灯，然后点头",
        "哇，好厉害啊",
        "为什么天空是蓝色的",
        "turn on the light",
    ]
    _answer("x")  # the catalog compiled and cached
    first = [_answer(command) for command in commands]
    monkeypatch.setattr(said, "segment", _refuse)
    monkeypatch.setattr(said, "detect_locale", _refuse)
    monkeypatch.setattr(engine, "_classify", _refuse)
    assert [_answer(command) for command in commands] == first
    long = "好" * (said.MAX_KEPT_TEXT + 1)
    monkeypatch.undo()
    _answer(long)
    monkeypatch.setattr(said, "detect_locale", _refuse)
    with pytest.raises(AssertionError):  # a long command is read afresh
        _answer(long)


def _answer(command: str) -> dict[str, Any]:
    response = filter_intents(
        {"command": command, "intent_catalog": LIGHT, "request_id": "r", "now": NOW}
    )
    response["meta"].pop("latency_ms")
    return response


def test_a_command_said_again_is_answered_alike() -> None:
    for command in [*COMMANDS, "不要开灯", "为什么天空是蓝色的", "turn on the light"]:
        request = {
            "command": command,
            "intent_catalog": LIGHT,
            "now": "2026-02-22T17:40:00+08:00",
            "request_id": "r",
            "options": {"return_debug_candidates": True, "return_debug_entities": True},
        }
        filter_intents(request)  # the catalog compiled and cached
        said.forget()
        answers = []
        for _ in range(3):  # read afresh, then from what was kept
            response = filter_intents(request)
            response["meta"].pop("latency_ms")
            answers.append(response)
        assert answers[1:] == answers[:1] * 2, command


# -- scores ---------------------------------------------------------------------------

TIMED: list[dict[str, Any]] = [
    {
        "id": "alarm",
        "match": {"keywords_any": ["叫我", "提醒"]},
        "slots": [{"name": "at", "from_time_key": "iso"}],
    },
    {
        "id": "far",
        "match": {"keywords_any": ["天"]},
        "slots": [{"name": "x_seconds", "regex": "(三百万天)"}],
    },
    {
        "id": "echo",
        "match": {"keywords_any": ["回声"], "regex_any": ["(a|aa)+$"]},
    },
]
LATER = "1000-01-01T08:00:00+08:00"


def _timed(command: str, now: str = NOW) -> dict[str, Any]:
    response = filter_intents(
        {"command": command, "intent_catalog": TIMED, "request_id": "r", "now": now}
    )
    response["meta"].pop("latency_ms")
    return response


def _scores_of(catalog: Any) -> list[Any]:
    return [key for key in said.SCORES if key[0] == catalog.serial]


def test_a_score_without_a_time_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    # "提醒我喝水": an intent with a *_seconds slot (that reads no duration)
    commands = [*COMMANDS, "不要开灯", "灯太亮了", "开灯，音量30", "提醒我喝水"]
    _answer("x")
    first = [_answer(command) for command in commands]
    catalog = cached_catalog(LIGHT)[0]
    # Heard once, a command leaves only itself (its clauses and locale).
    assert not said._texts
    assert not said.SEARCHES
    assert not _scores_of(catalog)
    # Heard again, what its clauses say is kept; heard a third time, the
    # scores on them too.
    assert [_answer(command) for command in commands] == first
    assert said._texts
    assert said.SEARCHES
    assert not _scores_of(catalog)
    assert [_answer(command) for command in commands] == first
    assert _scores_of(catalog)
    scored = []
    score = scoring._score

    def counting(ctx: Context, intent: Any, reading: Reading) -> Any:
        scored.append(reading.seg.text)
        return score(ctx, intent, reading)

    monkeypatch.setattr(scoring, "_score", counting)
    assert [_answer(command) for command in commands] == first
    # Only clauses with a time signal (their own or lent) were scored again.
    assert scored == ["10分钟后提醒我", "关灯", "remind me in 10 minutes"]


def test_a_score_with_a_time_is_read_for_each_now() -> None:
    _timed("x")  # the catalog compiled and cached
    # a clause's own clock time, its duration, and a clock time lent to it
    for command in ("明早8点叫我", "10分钟后提醒我", "早上8点，叫我起床"):
        one, other = _timed(command), _timed(command, LATER)
        assert [i["intent_id"] for i in one["intents"]] == ["alarm"]
        assert one["intents"][0]["normalized"] != other["intents"][0]["normalized"]
        for _ in range(2):  # and once its text and score could be kept
            assert _timed(command) == one, command
            assert _timed(command, LATER) == other, command


def test_a_seconds_slot_is_read_for_each_now() -> None:
    """A duration past the calendar at one ``now`` is within it at another."""
    command = "9000000天三百万天"  # joined: past the calendar from any now
    _timed("x")
    one, other = _timed(command), _timed(command, LATER)
    assert one["intents"][0]["normalized"] == {"x_seconds": "三百万天"}
    assert other["intents"][0]["normalized"] == {"x_seconds": 259_200_000_000}
    for _ in range(2):  # and once its text and score could be kept
        assert _timed(command) == one
        assert _timed(command, LATER) == other


def test_a_score_of_a_search_that_did_not_end_is_not_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(reading_module, "REGEX_TIMEOUT", 0.001)
    hostile = "回声" + "a" * 40 + "#"
    for _ in range(4):  # heard first, again, and twice more
        warnings = _timed(hostile)["meta"]["warnings"]
        assert [w["pattern"] for w in warnings] == ["(a|aa)+$"]


def test_a_kept_score_is_not_changed_by_a_response(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The caller owns the response: what it changes is not the kept score's."""
    first, second = _answer("开灯"), _answer("开灯")  # then kept the third time
    for response in (first, second, _answer("开灯")):
        intent = response["intents"][0]
        intent["evidence"][0]["score"] = 0
        intent["evidence"].append({"type": "x"})
        intent["parameters"]["mode"] = "x"
        intent["normalized"]["mode"] = "x"
        intent["missing_parameters"].append("x")
    monkeypatch.setattr(scoring, "_score", _refuse)
    kept = _answer("开灯")
    monkeypatch.undo()
    said.forget()
    assert kept == _answer("开灯")  # as read afresh
    assert kept["intents"][0]["parameters"] == {"mode": "开"}


def test_a_long_clause_is_scored_each_time(monkeypatch: pytest.MonkeyPatch) -> None:
    long = "开灯" * said.MAX_KEPT_TEXT
    _answer(long)
    _answer(long)
    monkeypatch.setattr(scoring, "_score", _refuse)
    with pytest.raises(AssertionError):
        _answer(long)


def test_forgetting_texts_forgets_their_scores(monkeypatch: pytest.MonkeyPatch) -> None:
    """``forget`` makes every command heard first again (the benchmark's D)."""
    for _ in range(3):  # heard a third time: its score kept
        _answer("开灯")
    said.forget()
    for _ in range(2):  # heard first, then again (its text kept)
        _answer("开灯")
    monkeypatch.setattr(scoring, "_score", _refuse)
    with pytest.raises(AssertionError):  # its score was not kept from before
        _answer("开灯")


def test_owners_of_a_clause_are_kept_by_the_catalog(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``Reading.by_owner`` of a clause text is read once per catalog."""
    owned: list[str] = []
    own = Reading.own

    def counting(self: Reading, owners: Any) -> None:
        owned.append(self.seg.text)
        own(self, owners)

    monkeypatch.setattr(Reading, "own", counting)
    many = "灯" * (said.KEPT_HITS + 1)  # more hits than are kept
    first = [_answer(command) for command in [*COMMANDS, many]]
    for _ in range(3):  # heard again (its text kept), a third time (its owners)
        assert [_answer(command) for command in [*COMMANDS, many]] == first
    assert owned.count(many) == 4
    assert len(owned) == 3 * len(set(owned)) + 1
    for _ in range(2):
        filter_intents({"command": "开灯", "intent_catalog": OTHER})  # another catalog
    assert owned[-2:] == ["开灯", "开灯"]
    said.forget()  # and what the catalogs kept of texts
    for _ in range(3):
        _answer("开灯")
    assert owned[-5:] == ["开灯"] * 5


def test_scores_of_every_catalog_together_are_bounded() -> None:
    """A home's bodies each have their catalog: how many does not multiply it."""
    words = [f"w{i}z" for i in range(30)]
    intents = [
        {"id": f"i{i}", "match": {"keywords_any": [w]}} for i, w in enumerate(words)
    ]
    catalogs = [compile_catalog([*intents, {"id": f"c{n}"}]) for n in range(14)]
    most = 0
    for catalog in catalogs:
        for text in range(20):
            command = f"t{text} {' '.join(words)}"  # every intent scores on it
            for _ in range(3):  # heard a third time, a command's scores are kept
                filter_intents(
                    {"command": command, "intent_catalog": LIGHT, "now": NOW},
                    compiled=catalog,
                )
                assert len(said.SCORES) <= said.KEPT_SCORES
                most = max(most, len(said.SCORES))
    # 14 catalogs x 20 texts x 30 intents' scores, more than are kept
    assert most > said.KEPT_SCORES - 30
    assert {key[0] for key in said.SCORES} <= {c.serial for c in catalogs}
