"""A clause's characters are read once, and every scan that cannot match is skipped.

``make_clause`` keeps the set of characters its scans read (``Clause.chars``);
the skips of durations, clock times, numbers, keywords, decision markers and
catalog patterns test their first characters against it. The tests show each
scan is skipped, and that no skip changes what is found.
"""

from __future__ import annotations

import dataclasses
import json
import random
import re
from typing import Any

import pytest

from custom_components.soul.core import safe_regex
from custom_components.soul.core.intent_filter import (
    durations,
    engine,
    lexicon,
    reading as reading_module,
    text as text_module,
    timepoints,
)
from custom_components.soul.core.intent_filter.catalog import compile_catalog
from custom_components.soul.core.intent_filter.reading import (
    Context,
    Markers,
    _keyword_hits,
    read_clause,
)
from custom_components.soul.core.intent_filter.request import parse_request
from custom_components.soul.core.intent_filter.segmenter import segment
from custom_components.soul.core.intent_filter.text import make_clause

from ..text_corpus import ROOT, corpus
from .marker_source import marker_words

CATALOG = json.loads(
    (ROOT / "tests/data/eval/catalog_desk_robot.json").read_text(encoding="utf-8")
)
NOW = "2026-02-22T17:40:00"
# Characters ``re`` folds oddly when it ignores case, full-width digits, kana,
# Hangul, Traditional Chinese and marks that lengthen a lower case ("İ").
_ODD = "ſıİKＭ０１９ｓあ분시 .:：半个燈開鬧鐘ÀΣß\u0301"
MARKERS = {
    "NEGATION": lexicon.NEGATION,
    "POSITIVE_NEGATIONS": lexicon.POSITIVE_NEGATIONS,
    "POLITE_REQUEST": lexicon.POLITE_REQUEST,
    "QUESTION": lexicon.QUESTION,
    "CONVERSATION": lexicon.CONVERSATION,
    "OPINION": lexicon.OPINION,
    "DEGREE": lexicon.DEGREE,
    "GREETING": lexicon.GREETING,
    "EXCLAMATION": lexicon.EXCLAMATION,
}


def _texts() -> list[str]:
    rng = random.Random(19)  # noqa: S311 - test data
    base = corpus()
    mixes = []
    for _ in range(3000):
        chars = list(rng.choice(base))
        for _ in range(rng.randint(1, 3)):
            chars.insert(rng.randint(0, len(chars)), rng.choice(_ODD))
        mixes.append("".join(chars))
    return [t for t in base + mixes if t.strip()]


def _context(command: str, catalog: list[Any] = CATALOG) -> Context:
    request = parse_request(
        {"command": command, "intent_catalog": catalog, "now": NOW}, "UTC"
    )
    return Context(request, compile_catalog(catalog), "zh-CN")


class _Spy:
    """A compiled pattern that records the texts it is asked to scan."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        self.texts: list[str] = []

    def search(self, text: str, *args: Any) -> Any:
        self.texts.append(text)
        return self.pattern.search(text, *args)

    def finditer(self, text: str, *args: Any) -> Any:
        self.texts.append(text)
        return self.pattern.finditer(text, *args)


def test_clause_chars_are_the_characters_its_scans_read() -> None:
    for text in _texts():
        clause = make_clause(text, 0, len(text))
        # the folded text, its compact form (the keyword scan reads it too) and
        # the original text in lower case, as the keyword scan reads it
        expected = (
            set(clause.folded.text)
            | set(clause.compact.text)
            | set(clause.original.text.lower())
        )
        assert clause.chars == expected, text


def test_reduplication_is_not_looked_for_among_distinct_characters(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spy = _Spy(text_module._REDUPLICATION)
    monkeypatch.setattr(text_module, "_REDUPLICATION", spy)
    assert make_clause("开灯", 0, 2).compact.text == "开灯"
    assert make_clause("帮我把灯变成绿色", 0, 8).variants
    assert spy.texts == []
    assert make_clause("摇摇头", 0, 3).compact.text == "摇头"
    assert spy.texts[0] == "摇摇头"


def test_duration_and_clock_scans_test_the_characters_given() -> None:
    now = parse_request({"command": "x", "intent_catalog": [], "now": NOW}, "UTC").now
    assert durations.find_durations("10分钟后")
    assert durations.find_durations("10分钟后", set()) == []
    assert durations.find_durations("in 10 minutes", set()) == []
    assert timepoints.find_time_points("明天早上8点", now)
    assert timepoints.find_time_points("明天早上8点", now, set()) == []
    assert timepoints.find_time_points("at 3 pm", now, set()) == []


def test_a_clause_is_scanned_with_its_characters(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    given: list[Any] = []
    find_durations = reading_module.find_durations
    find_time_points = reading_module.find_time_points

    def durations_spy(text: str, chars: Any = None) -> Any:
        given.append(chars)
        return find_durations(text, chars)

    def points_spy(text: str, now: Any, chars: Any = None) -> Any:
        given.append(chars)
        return find_time_points(text, now, chars)

    monkeypatch.setattr(reading_module, "find_durations", durations_spy)
    monkeypatch.setattr(reading_module, "find_time_points", points_spy)
    command = "开灯，10分钟后提醒我"
    ctx = _context(command)
    readings = [read_clause(ctx, seg) for seg in segment(command)]
    assert len(given) == 4
    for chars in given:  # each scan got its clause's own set
        assert any(chars is r.clause.chars for r in readings)
    assert readings[1].durations


def test_scans_given_the_characters_find_what_they_found_in_the_text() -> None:
    now = parse_request({"command": "x", "intent_catalog": [], "now": NOW}, "UTC").now
    for text in _texts():
        chars = make_clause(text, 0, len(text)).chars
        folded = make_clause(text, 0, len(text)).folded.text
        assert durations.find_durations(folded, chars) == durations.find_durations(
            folded
        ), text
        assert timepoints.find_time_points(
            folded, now, chars
        ) == timepoints.find_time_points(folded, now), text


def test_keywords_are_not_looked_for_without_a_first_character() -> None:
    catalog = compile_catalog(CATALOG)
    spy = _Spy(catalog.keyword_pattern)  # type: ignore[arg-type]
    spied = dataclasses.replace(catalog, keyword_pattern=spy)  # type: ignore[arg-type]
    for text in ("今天上海天气如何", "为什么天空是蓝色的", "今天几号"):
        assert _keyword_hits(spied, make_clause(text, 0, len(text))) == []
    assert spy.texts == []
    assert _keyword_hits(spied, make_clause("开灯", 0, 2))
    assert spy.texts == ["开灯"]
    assert catalog.keyword_firsts == {k[0] for k in catalog.keyword_prefixes}


def test_keyword_skip_never_changes_the_hits() -> None:
    catalog = compile_catalog(CATALOG)
    skipped = 0
    for text in _texts():
        clause = make_clause(text, 0, len(text))
        # every first character: the scan runs
        unskipped = dataclasses.replace(
            catalog, keyword_firsts=frozenset(clause.chars) | {"开"}
        )
        assert _keyword_hits(catalog, clause) == _keyword_hits(unskipped, clause)
        skipped += catalog.keyword_firsts.isdisjoint(clause.chars)
    assert skipped > 500


def test_catalog_patterns_are_not_searched_without_a_first_character(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    searched: list[str] = []
    search = reading_module.search

    def spy(pattern: Any, text: str, **kwargs: Any) -> Any:
        searched.append(text)
        return search(pattern, text, **kwargs)

    monkeypatch.setattr(reading_module, "search", spy)
    ctx = _context("开灯")
    intent = ctx.catalog.intents[0]
    color = "(红色|红|绿色|绿|白色|白|白灯|灯白色)"
    with safe_regex.budget(1.0):
        assert ctx.regex(intent, color, "开门") is None
        assert searched == []
        assert ctx.regex(intent, color, "变成绿色") is not None
    assert searched == ["变成绿色"]


def test_pattern_skip_never_changes_a_search() -> None:
    ctx = _context("开灯")
    patterns = list(ctx.catalog.patterns)
    intent = ctx.catalog.intents[0]
    with safe_regex.budget(60.0):
        for text in _texts():
            for pattern in patterns:
                found = ctx.regex(intent, pattern, text)
                expected = safe_regex.search(ctx.catalog.patterns[pattern], text)
                assert (found and found.span()) == (expected and expected.span())
    assert ctx.incomplete == 0


def test_marker_firsts_are_every_character_re_reads_as_a_first_one() -> None:
    words = marker_words()
    assert set(words) == set(MARKERS)
    firsts = {word[0] for found in words.values() for word in found}
    blind = re.compile(
        "[" + "".join(re.escape(char) for char in firsts) + "]", re.IGNORECASE
    )
    # Every code point re reads as some word's first character, once.
    readings = [chr(c) for c in range(0x110000) if blind.fullmatch(chr(c))]
    for name, pattern in MARKERS.items():
        own = [re.compile(re.escape(word[0]), re.IGNORECASE) for word in words[name]]
        expected = {char for char in readings if any(p.fullmatch(char) for p in own)}
        assert expected <= lexicon.marker_firsts(pattern), name
    aux = re.compile(r"[iawdhs]", re.IGNORECASE)
    assert {char for char in readings if aux.fullmatch(char)} | set(
        "かの"
    ) <= lexicon.QUESTION_FIRSTS


def test_marker_matches_begin_with_a_first_character() -> None:
    for text in _texts():
        folded = make_clause(text, 0, len(text)).folded.text
        for name, pattern in MARKERS.items():
            for match in pattern.finditer(folded):
                assert folded[match.start()] in lexicon.marker_firsts(pattern), name
        if lexicon.QUESTION_FIRSTS.isdisjoint(folded):
            assert not lexicon.is_question(folded), text


def _spy_marker(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> None:
    """Put a spy in place of the marker pattern ``name`` in ``module``.

    ``lexicon.has_marker`` finds a pattern's first characters by its id: the
    spy gets those of the pattern it wraps.
    """
    pattern = getattr(lexicon, name)
    spy = _Spy(pattern)
    monkeypatch.setitem(lexicon._FIRSTS, id(spy), lexicon.marker_firsts(pattern))
    monkeypatch.setattr(module, name, spy)


def test_markers_are_not_searched_without_a_first_character(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse(_text: str) -> bool:
        raise AssertionError(_text)

    monkeypatch.setattr(reading_module, "is_negated", refuse)
    monkeypatch.setattr(reading_module, "is_question", refuse)
    for name in ("OPINION", "CONVERSATION", "EXCLAMATION", "DEGREE", "POLITE_REQUEST"):
        _spy_marker(monkeypatch, reading_module, name)
    markers = Markers("开灯", {"开", "灯"})
    assert not markers.negated
    assert not markers.question
    assert not markers.remark
    assert not markers.polite
    assert not markers.chatty
    for name in ("OPINION", "CONVERSATION", "EXCLAMATION", "DEGREE", "POLITE_REQUEST"):
        assert getattr(reading_module, name).texts == [], name


def test_marker_skips_never_change_a_decision() -> None:
    for text in _texts():
        folded = make_clause(text, 0, len(text)).folded.text
        skipping = Markers(folded, make_clause(text, 0, len(text)).chars)
        reading_all = Markers(folded)  # tests the text itself: the same sets
        plain = (
            lexicon.is_negated(folded),
            lexicon.is_question(folded),
            bool(
                lexicon.OPINION.search(folded)
                or lexicon.CONVERSATION.search(folded)
                or lexicon.EXCLAMATION.search(folded)
                or reading_module.expresses_emotion(folded)
            ),
            lexicon.DEGREE.search(folded) is not None,
            lexicon.POLITE_REQUEST.search(folded) is not None,
        )
        for markers in (skipping, reading_all):
            assert (
                markers.negated,
                markers.question,
                markers.chatty,
                markers.remark,
                markers.polite,
            ) == plain, text


def _classify_reading_every_marker(command: str) -> tuple[str, str, float]:
    """``engine._classify`` as it read a command before it skipped any marker."""
    folded = engine.fold(command)
    if lexicon.is_question(folded):
        return engine.SYS_FALLBACK, "open_question", 0.8
    if lexicon.CONVERSATION.search(folded) or lexicon.GREETING.search(folded):
        return engine.SYS_FALLBACK, "conversation", 0.7
    if (
        lexicon.EXCLAMATION.search(folded) or reading_module.expresses_emotion(command)
    ) and not lexicon.OPINION.search(folded):
        return engine.SYS_NO_ACTION, "emotional_expression", 0.75
    return engine.SYS_FALLBACK, "no_catalog_match", 0.5


def test_classify_skips_markers_and_decides_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for text in _texts():
        assert engine._classify(text) == _classify_reading_every_marker(text), text
    for name in ("CONVERSATION", "GREETING", "EXCLAMATION", "OPINION"):
        _spy_marker(monkeypatch, engine, name)
    monkeypatch.setattr(engine, "is_question", pytest.fail)
    assert engine._classify("灯灯灯") == (engine.SYS_FALLBACK, "no_catalog_match", 0.5)
    for name in ("CONVERSATION", "GREETING", "EXCLAMATION", "OPINION"):
        assert getattr(engine, name).texts == [], name
