"""Scans a clause cannot need are skipped, and only those.

Each skip reads a set of characters (or a few letters) a match cannot do
without: a text holding none of them is not scanned. The tests show the scan
is skipped, and that the skip never changes what is found.
"""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from custom_components.soul.core.emotion import recognizer
from custom_components.soul.core.intent_filter import (
    durations,
    implied,
    reading as reading_module,
    scoring,
    segmenter,
    text as text_module,
    timepoints,
)
from custom_components.soul.core.intent_filter.catalog import compile_catalog
from custom_components.soul.core.intent_filter.reading import (
    Context,
    Hit,
    KeywordHits,
    read_clause,
)
from custom_components.soul.core.intent_filter.request import parse_request
from custom_components.soul.core.intent_filter.segmenter import segment

from ..text_corpus import corpus

ALARM: list[dict[str, Any]] = [
    {
        "id": "alarm",
        "match": {"keywords_any": ["闹钟"]},
        "slots": [{"name": "trigger_at", "from_time_key": "trigger_at"}],
    }
]
# Characters ``re`` folds oddly when it ignores case: long s, dotless and
# dotted i, the Kelvin sign; full-width digits; kana and Hangul.
_ODD = "ſıİKＭ０１９ｓあ분시 .:：半个"


def _alarm_context(command: str) -> Context:
    """Return the filter's context of ``command`` against the alarm catalog."""
    request = parse_request(
        {"command": command, "intent_catalog": ALARM, "now": "2026-02-22T17:40:00"},
        "UTC",
    )
    return Context(request, compile_catalog(ALARM), "zh-CN")


def _texts() -> list[str]:
    rng = random.Random(11)  # noqa: S311 - test data
    words = [
        "10分钟", "半小时", "一个半小时后", "3秒", "两天", "5分後", "あと5分", "十分",
        "in 10 minutes", "2 Hours", "half an hour", "SECS", "mins", "ſeconds", "mİn",
        "3 pm", "8:30", "明天早上8点", "十点半", "30분 후", "한 시간", "开灯", "叫我",
        "day", "week", "hr", "天", "周", "星期",
    ]  # fmt: skip
    mixes = [
        "".join(rng.choice([*words, *_ODD]) for _ in range(rng.randint(1, 6)))
        for _ in range(3000)
    ]
    return corpus() + words + mixes


def _all_durations(text: str) -> list[durations.Duration]:
    """What ``find_durations`` found before it skipped any scan."""
    found = [*durations._cjk(text), *durations._english(text)]
    if durations._KO_UNIT.search(text):
        found.extend(durations._korean(text))
    return sorted(found, key=lambda d: d.start) if len(found) > 1 else found


def test_duration_scans_are_skipped_when_no_unit_can_be_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scanned: list[str] = []
    cjk, english = durations._cjk, durations._english

    def spy(name: str, scan: Any) -> Any:
        def run(text: str) -> Any:
            scanned.append(name)
            return scan(text)

        return run

    monkeypatch.setattr(durations, "_cjk", spy("cjk", cjk))
    monkeypatch.setattr(durations, "_english", spy("english", english))
    for text in ("开灯", "天空", "吓我一跳", "turn on the light", "what do you think"):
        assert durations.find_durations(text) == []
    assert scanned == []
    assert durations.find_durations("10分钟后提醒我")
    assert durations.find_durations("remind me in 10 minutes")
    assert scanned == ["cjk", "english"]


def test_duration_skips_never_change_what_is_found() -> None:
    skipped = 0
    for text in _texts():
        assert durations.find_durations(text) == _all_durations(text), text
        skipped += durations._CJK_AMOUNT_CHARS.isdisjoint(text) or not (
            durations._EN_UNIT_STEMS.search(text.lower())
        )
    assert skipped > 1000  # the skips were tried on many texts


def test_english_unit_letters_are_every_letter_re_reads_as_one() -> None:
    first = re.compile(r"[smhdw]", re.IGNORECASE)
    folded = {chr(c) for c in range(0x110000) if first.fullmatch(chr(c))}
    assert folded <= durations._EN_UNIT_FIRSTS
    # A unit counts only when its lower case is a unit word: it holds a stem.
    for word in durations.EN_UNIT_SECONDS:
        assert durations._EN_UNIT_STEMS.search(word), word


def test_numbers_are_not_scanned_in_a_clause_without_a_numeral(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Refuse:
        def finditer(self, text: str) -> Any:
            raise AssertionError(text)

    monkeypatch.setattr(reading_module, "_NUMBER_TOKEN", Refuse())
    ctx = _alarm_context("帮我开灯")
    assert read_clause(ctx, segment("帮我开灯")[0]).numbers == []


def test_number_characters_are_what_a_number_begins_with() -> None:
    begins = {
        chr(c) for c in range(0x110000) if reading_module._NUMBER_TOKEN.match(chr(c))
    }
    assert begins <= reading_module._NUMBER_CHARS


def test_english_clock_times_are_looked_for_only_beside_a_digit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Refuse:
        def search(self, text: str) -> Any:
            raise AssertionError(text)

    now = parse_request(
        {"command": "x", "intent_catalog": [], "now": "2026-02-22T17:40:00"}, "UTC"
    ).now
    found = timepoints.find_time_points("at 3 pm", now)
    monkeypatch.setattr(timepoints, "_ENGLISH_CORE", Refuse())
    assert timepoints.find_time_points("at three pm, 明天早上八点", now)
    assert found
    digits = re.compile(r"[0-9]", re.IGNORECASE)
    assert {chr(c) for c in range(0x110000) if digits.fullmatch(chr(c))} == set(
        timepoints._ASCII_DIGITS
    )


def test_a_clause_without_a_time_asks_for_no_moment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse(_reading: Any) -> bool:
        raise AssertionError

    ctx = _alarm_context("提醒我")
    clause = read_clause(ctx, segment("提醒我")[0])
    monkeypatch.setattr(implied, "timed_request", refuse)
    assert implied.claim_by_time(ctx, clause) == (None, [])


def test_single_hits_are_sorted_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """One hit per keyword (most clauses): no lazy merge, the same order."""

    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError

    rng = random.Random(5)  # noqa: S311 - test data
    cases = []
    for _ in range(500):
        keywords = rng.sample(["a", "b", "ab", "ba", "abc", "cd", "xxxxx"], 5)
        places = rng.sample(range(40), rng.randint(2, scoring.FEW_LISTS - 1))
        owned: list[KeywordHits] = [
            [(place, Hit(rng.choice(keywords), place, place + 1))] for place in places
        ]
        if rng.random() < 0.3:  # a keyword an intent lists twice
            owned.append(owned[rng.randrange(len(owned))])
        expected = sorted(
            sorted((item for hits in owned for item in hits), key=lambda i: i[0]),
            key=lambda i: -len(i[1].keyword),
        )
        cases.append((owned, [id(hit) for _, hit in expected]))
    monkeypatch.setattr(scoring.itertools, "groupby", refuse)
    for owned, expected in cases:
        assert [id(hit) for hit in scoring._longest_first(owned)] == expected


def test_a_command_without_a_boundary_character_is_not_searched(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Refuse:
        def search(self, text: str) -> Any:
            raise AssertionError(text)

    boundary = segmenter._BOUNDARY
    may_split = 0
    for text in _texts():
        if segmenter._MAY_SPLIT.search(text) is None:
            assert boundary.search(text) is None, text
        else:
            may_split += 1
    assert may_split > 1000
    monkeypatch.setattr(segmenter, "_BOUNDARY", Refuse())
    assert [s.text for s in segmenter.segment("帮我把灯打开")] == ["帮我把灯打开"]
    assert segmenter.segment("开灯吧") == [segmenter.Segment(0, "开灯吧", 0, 3)]


def test_plain_clauses_are_neither_lowered_by_hand_nor_compacted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    expected = {
        t: text_module.make_clause(t, 0, len(t))
        for t in ("开灯", "Turn ON", "İstanbul")
    }

    def refuse(*_args: Any) -> Any:
        raise AssertionError

    monkeypatch.setattr(text_module, "_compact_infix", refuse)
    assert text_module.make_clause("开灯", 0, 2) == expected["开灯"]
    assert text_module.make_clause("Turn ON", 0, 7) == expected["Turn ON"]
    monkeypatch.setattr(text_module, "_lower", refuse)
    assert text_module.make_clause("开灯", 0, 2) == expected["开灯"]
    with pytest.raises(AssertionError):  # a lower case longer than the text
        text_module.make_clause("İstanbul", 0, 8)


def test_one_duration_is_not_merged(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(_found: Any) -> Any:
        raise AssertionError

    ctx = _alarm_context("x")
    merged = ctx.durations("1小时30分钟后")
    monkeypatch.setattr(reading_module, "_merge", refuse)
    assert [(d.seconds, d.relative) for d in ctx.durations("10分钟后")] == [(600, True)]
    assert ctx.durations("开灯") == []
    assert [d.seconds for d in merged] == [5400]


def test_a_clause_read_in_one_text_needs_no_dedup_nor_sort(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One variant: the hits of the general reading, without its dict and sort.

    A clause whose variants list the original twice takes the general path
    (its second reading finds every hit again): the same hits come out.
    """
    catalogs = [
        compile_catalog(ALARM),
        compile_catalog(
            [
                {
                    "id": "a",
                    "match": {
                        "keywords_any": [
                            "灯",
                            "开灯",
                            "打开灯",
                            "light",
                            "lights",
                            "i",
                        ],
                        "negative_keywords": ["不"],
                    },
                },
                {"id": "b", "match": {"keywords_all": ["点头", "点", "nod"]}},
            ]
        ),
    ]
    single = 0
    for catalog in catalogs:
        for sample in _texts()[:3000]:
            if not sample.strip() or not sample.isprintable():
                continue
            clause = text_module.make_clause(sample, 0, len(sample))
            if len(clause.variants) > 1:
                continue
            twice = clause._replace(variants=(clause.original, clause.original))
            hits = reading_module._keyword_hits(catalog, clause)
            assert hits == reading_module._keyword_hits(catalog, twice), sample
            single += bool(hits)
    assert single > 100

    def refuse(*_args: Any) -> Any:
        raise AssertionError

    monkeypatch.setattr(reading_module, "_hits_in_one_text", refuse)
    clause = text_module.make_clause("開燈", 0, 2)  # two variants
    hits = reading_module._keyword_hits(catalogs[1], clause)
    assert [(h.keyword, h.start, h.end) for h in hits] == [("开灯", 0, 2), ("灯", 1, 2)]
    with pytest.raises(AssertionError):
        reading_module._keyword_hits(catalogs[1], text_module.make_clause("开灯", 0, 2))


def test_emotion_folds_without_translating_what_holds_nothing_to_translate() -> None:
    """A clause's feeling (``chatty``) is read after ``_fold``: the same fold."""
    assert {chr(code) for code in recognizer._TRANSLATE} == recognizer._TRANSLATED
    samples = [*_texts()[:2000], "I’m so ‘sad’", "☺️开心", "好累‘’️", "\ufe0f"]
    translated = 0
    for sample in samples:
        full = sample[: recognizer.MAX_CHARS]
        if not full.isascii():
            full = full.translate(recognizer._TRANSLATE)
        translated += full != sample
        try:
            expected = recognizer._fold(full)
        except UnicodeError:
            continue
        assert recognizer._fold(sample) == expected, sample
    assert translated >= 4


def test_an_english_command_without_a_conjunction_is_not_searched(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Refuse:
        def search(self, text: str) -> Any:
            raise AssertionError(text)

    assert segmenter.segment("Turn on the light AND nod")[1].text == "nod"
    assert segmenter.segment("play\tThen stop")[1].text == "stop"
    monkeypatch.setattr(segmenter, "_BOUNDARY", Refuse())
    for command in ("turn off the lights please", "remind me in 10 minutes"):
        assert [s.text for s in segmenter.segment(command)] == [command]


def test_content_length_counts_the_other_characters() -> None:
    word = re.compile(r"[\w]")
    for sample in [*_texts()[:3000], "a_b c", "灯 ， 亮", "１２ three", "\u3000x"]:
        assert len(sample) - len(reading_module._NOT_CONTENT.findall(sample)) == len(
            word.findall(sample)
        ), sample


def test_boundaries_are_scanned_once(monkeypatch: pytest.MonkeyPatch) -> None:
    boundary = segmenter._BOUNDARY

    class FinditerOnly:
        def search(self, text: str) -> Any:
            raise AssertionError(text)

        def finditer(self, text: str) -> Any:
            return boundary.finditer(text)

    commands = [s for s in _texts()[:2000] if s.strip()]
    expected = [segmenter.segment(c) for c in commands]
    monkeypatch.setattr(segmenter, "_BOUNDARY", FinditerOnly())
    assert [segmenter.segment(c) for c in commands] == expected
    assert [s.text for s in segmenter.segment("开灯，然后点头")] == ["开灯", "点头"]


def test_a_short_duration_surely_ends_in_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The latest ``now`` a request may hold, in the zone furthest east."""
    latest = parse_request(
        {
            "command": "x",
            "intent_catalog": ALARM,
            "now": "9999-12-24T23:59:59.999999-23:59",
            "timezone": "Pacific/Kiritimati",
        },
        "UTC",
    ).now
    assert reading_module.ends_in_time(latest, reading_module.SURELY_IN_TIME)

    def refuse(_now: Any, _seconds: float) -> bool:
        raise AssertionError

    ctx = _alarm_context("x")
    far = ctx.durations("一亿天后")
    monkeypatch.setattr(reading_module, "ends_in_time", refuse)
    assert [d.seconds for d in ctx.durations("三天后")] == [3 * 86400]
    assert far == []


def test_clock_times_are_kept_without_a_closure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = parse_request(
        {"command": "x", "intent_catalog": [], "now": "2026-02-22T17:40:00"}, "UTC"
    ).now
    kept: list[tuple[int, int]] = []
    add = timepoints._add

    def spy(found: Any, taken: Any, at: Any, start: int, end: int) -> None:
        kept.append((start, end))
        add(found, taken, at, start, end)

    monkeypatch.setattr(timepoints, "_add", spy)
    points = timepoints.find_time_points("明天早上8点和8点, at 3 pm, 9:30", now)
    assert [(p.start, p.end) for p in points] == [(0, 6), (7, 9), (11, 18), (20, 24)]
    assert kept == [(0, 6), (7, 9), (11, 18), (20, 24)]


def test_unit_and_period_scans_need_their_first_characters(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Korean units and English day periods ("pm") are looked for only then."""

    class Refuse:
        def search(self, text: str) -> Any:
            raise AssertionError(text)

    english, korean = timepoints._ENGLISH_CORE, durations._KO_UNIT
    for sample in _texts():
        if timepoints._PERIOD_FIRSTS.isdisjoint(sample):
            assert english.search(sample) is None, sample
        if durations._KO_UNIT_FIRSTS.isdisjoint(sample):
            assert korean.search(sample) is None, sample
    now = parse_request(
        {"command": "x", "intent_catalog": [], "now": "2026-02-22T17:40:00"}, "UTC"
    ).now
    monkeypatch.setattr(timepoints, "_ENGLISH_CORE", Refuse())
    monkeypatch.setattr(durations, "_KO_UNIT", Refuse())
    assert timepoints.find_time_points("点头3秒, 10分钟后提醒我", now) == []
    assert [d.seconds for d in durations.find_durations("10分钟后提醒我")] == [600]
