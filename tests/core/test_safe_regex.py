"""Untrusted patterns: bounded length, reported errors, matches bounded in time."""

from __future__ import annotations

import asyncio
import random
import re
import sys
import threading
import time
from typing import Any

import pytest
import regex

from custom_components.soul.core import safe_regex
from custom_components.soul.core.regex_chars import first_chars
from custom_components.soul.core.safe_regex import (
    MAX_PATTERN_LENGTH,
    RegexBudgetError,
    RegexTimeoutError,
    UnsafeRegexError,
    budget,
    check_untrusted,
    compile_untrusted,
    deferred_compile_seconds,
    search,
)

HOSTILE = r"(a|aa)+$"
HOSTILE_INPUT = "a" * 40 + "b"


def test_ordinary_patterns_behave_like_re() -> None:
    match = search(r"([0-9]+(?:\.[0-9]+)?)\s*分钟", "10分钟后提醒我")
    assert match is not None
    assert match.group(1) == "10"
    assert search("(点头|摇头)", "开灯") is None


@pytest.mark.parametrize("pattern", ["(unclosed", "*x", "a{2,1}"])
def test_invalid_patterns_are_reported(pattern: str) -> None:
    with pytest.raises(UnsafeRegexError) as caught:
        compile_untrusted(pattern)
    assert caught.value.pattern == pattern


def test_long_patterns_are_refused() -> None:
    with pytest.raises(UnsafeRegexError, match="longer than"):
        compile_untrusted("a" * (MAX_PATTERN_LENGTH + 1))


def test_catastrophic_backtracking_is_stopped() -> None:
    with pytest.raises(RegexTimeoutError) as caught:
        search(HOSTILE, HOSTILE_INPUT, timeout=0.01)
    assert caught.value.pattern == HOSTILE
    assert search(HOSTILE, "aaaa") is not None  # harmless input still matches


@pytest.mark.parametrize(
    "pattern",
    [
        "(?:(?:(?:a{100}){100}){100}){100}",  # unrolls to 10^8 atoms: out of memory
        "(?:a{1000}){1000}",
        "a{65535}",
        "(?:x?){10000}",
        "(?:ab|cd{50}){100}",
    ],
)
def test_patterns_that_unroll_too_far_are_refused_before_compiling(
    pattern: str,
) -> None:
    with pytest.raises(UnsafeRegexError, match="repeats too much"):
        compile_untrusted(pattern)


def _nested(levels: int, count: str = "{2}") -> str:
    pattern = "a|b"
    for _ in range(levels):
        pattern = f"(?:{pattern}){count}"
    return pattern


@pytest.mark.parametrize(
    "pattern",
    [
        # 80 characters within MAX_EXPANSION; regex took 210 ms to compile it,
        # holding the GIL (a hostile body's catalog, 2026-11-27)
        _nested(11),
        _nested(4),
        _nested(4, "+"),
        "(?:(?:(?:(?:x)?)*a)+b)+",
    ],
)
def test_repeats_nested_deeper_than_three_are_refused_before_compiling(
    pattern: str,
) -> None:
    with pytest.raises(UnsafeRegexError, match="nests repeats more than 3 deep"):
        check_untrusted(pattern)


@pytest.mark.parametrize(
    "pattern",
    [_nested(3), r"((?:[0-9]+(?:\.[0-9]+)?\s*(?:h|m))+)", "(?:(?:a{1,9}){1,9}){1,9}"],
)
def test_repeats_nested_three_deep_are_kept(pattern: str) -> None:
    assert compile_untrusted(pattern).pattern == pattern


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        ("a{0,64}" * 6 + "b", "a" * 80),  # bounded repeats in a chain (issue 13)
        ("(?:a{0,64}){6}b", "a" * 80),
        ("(a+)+b", "a" * 40),
        ("(a|aa)+$", "a" * 60 + "b"),
        (r"(\w+\s?)+$", "word " * 30 + "!"),
    ],
)
def test_every_untrusted_pattern_runs_with_a_time_bound(
    pattern: str, text: str
) -> None:
    """Never on `re`: each search returns or raises within its timeout."""
    started = time.perf_counter()
    try:
        match = search(pattern, text, timeout=0.01)
    except RegexTimeoutError:
        match = None
    assert (
        time.perf_counter() - started < 1.0
    )  # a hang detector; timings live in benchmarks/
    assert match is None or not isinstance(match, re.Match)


def test_a_budget_is_shared_by_every_match_of_one_input() -> None:
    """Ten slow patterns inside a 15 ms budget cost about 15 ms, not 10 x 10 ms."""
    slow = [f"(a|aa)+$(?#{n})" for n in range(10)]
    started = time.perf_counter()
    outcomes = []
    with budget(0.015):
        for pattern in slow:
            try:
                search(pattern, "a" * 60 + "b", timeout=0.01)
            except RegexBudgetError:
                outcomes.append("budget")
            except RegexTimeoutError:
                outcomes.append("timeout")
    assert (
        time.perf_counter() - started < 1.0
    )  # not 10 x 10 ms of waiting each: bounded by the budget
    assert outcomes[0] == "timeout"
    assert "budget" in outcomes


def test_regex_only_syntax_is_refused() -> None:
    """Patterns are Python re syntax (docs/intent-filter.md)."""
    with pytest.raises(UnsafeRegexError, match="Python re syntax"):
        compile_untrusted(r"\p{Han}+")


def test_errors_name_the_pattern_text_even_when_it_came_compiled() -> None:
    compiled = compile_untrusted(HOSTILE)
    with pytest.raises(RegexTimeoutError) as timed_out:
        search(compiled, HOSTILE_INPUT, timeout=0.001)
    assert timed_out.value.pattern == HOSTILE
    with budget(0.0), pytest.raises(RegexBudgetError) as spent:
        search(compiled, "a")
    assert spent.value.pattern == HOSTILE


_PIECES = [
    "a",
    "b",
    "灯",
    "开",
    ".",
    "^",
    "$",
    r"\d",
    r"\w",
    r"\s",
    r"\b",
    r"\B",
    r"\A",
    r"\Z",
    r"\D",
    r"\.",
    r"\(",
    r"\1",
    r"\x41",
    r"\u00e9",
    r"\N{BULLET}",
    r"\n",
    "[a-z]",
    "[^0-9]",
    r"[\d,]",
    "[]a]",
    "[[]",
    "[a&&b]",
    "[a--b]",
    "[[:digit:]]",
    "(",
    "(?:",
    "(?P<g>",
    "(?P<名>",
    "(?=",
    "(?!",
    "(?<=",
    "(?<!",
    "(?>",
    "(?i:",
    "(?i)",
    "(?x)",
    "(?#c)",
    "(?(1)a|b)",
    "(?P=g)",
    ")",
    ")",
    ")",
    "|",
    "||",
    "*",
    "+",
    "?",
    "*?",
    "+?",
    "??",
    "*+",
    "{2}",
    "{1,3}",
    "{,4}",
    "{2,}",
    "{e<=1}",
    "{x}",
    "{",
    "}",
    "-",
    "&",
    "~",
    "#",
    " ",
    "]",
]


def _generated_patterns(count: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)  # noqa: S311 - reproducible test data, not secrets
    return [
        "".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 12)))
        for _ in range(count)
    ]


@pytest.mark.filterwarnings("ignore::FutureWarning")  # regex warns of nested sets
def test_patterns_compiled_on_first_use_always_compile_alike() -> None:
    """A pattern whose compile waits (``_deferrable``) is one ``regex`` compiles.

    So deferring it never lets a pattern through that compiling it at once
    would have refused; its groups and first characters are the compiled
    pattern's. Thousands of generated patterns mixing plain and exotic syntax.
    """
    deferred = refused = 0
    for pattern in _generated_patterns(15000):
        try:
            checked = check_untrusted(pattern)
        except UnsafeRegexError:
            refused += 1
            continue
        assert checked.firsts == first_chars(pattern)
        if checked.is_compiled:
            continue
        deferred += 1
        compiled = regex.compile(pattern, regex.VERSION0)  # must not raise
        assert checked.groups == compiled.groups
        assert checked.groupindex == dict(compiled.groupindex)
        assert checked.compiled().pattern == pattern
    assert deferred > 500
    assert refused > 500


@pytest.mark.parametrize(
    "pattern",
    [
        "[[:foo:]]",  # re reads a set of characters; regex an unknown class
        r"x{e<=1}",  # fuzzy matching for regex
        r"(a)\1",
        r"(?i)abc",
        r"[a--b]",
        "a" * 200,
    ],
)
@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_patterns_regex_may_read_apart_compile_when_checked(pattern: str) -> None:
    try:
        checked = check_untrusted(pattern)
    except UnsafeRegexError:
        return  # refused at once, as before
    assert checked.is_compiled


def _slow_compiles(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    compile_now = safe_regex._compile

    def compile_slowly(pattern: str) -> Any:
        time.sleep(seconds)
        return compile_now(pattern)

    monkeypatch.setattr(safe_regex, "_compile", compile_slowly)


def test_a_first_use_compile_costs_no_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Compiling a checked pattern on its first search is not the input's time."""
    checked = check_untrusted("(?:首次|编译)+(测试)")
    assert not checked.is_compiled
    assert search(checked, "没有这些字") is None  # no first character: not compiled
    assert not checked.is_compiled
    _slow_compiles(monkeypatch, 0.02)  # longer than the budget
    monkeypatch.setattr(safe_regex, "FREE_COMPILE_SECONDS", 1.0)
    before = deferred_compile_seconds()
    with budget(0.010):
        match = search(checked, "首次测试")
        assert match is not None
        assert match.group(1) == "测试"
        assert search(r"测(试)", "测试") is not None  # the budget is not spent
    assert deferred_compile_seconds() - before >= 0.02
    assert checked.is_compiled


def test_first_use_compiles_beyond_the_free_time_are_the_inputs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An input's free compile time is bounded: past it, compiles spend its budget.

    So a catalog of many long patterns cannot hold the event loop on its first
    command for longer than its budget and that free time.
    """
    checked = check_untrusted("(?:超出|编译)+(时间)")
    _slow_compiles(monkeypatch, 0.02)
    monkeypatch.setattr(safe_regex, "FREE_COMPILE_SECONDS", 0.0)
    before = deferred_compile_seconds()
    with budget(0.010), pytest.raises(RegexBudgetError):
        search(checked, "超出时间")
    assert checked.is_compiled  # compiled once, for the next input
    assert deferred_compile_seconds() == before


def _others_ran_during_a_search() -> int:
    """Search a slow text while another thread counts; return what it counted.

    The switch interval is long, so the counting thread runs during the
    search only if the search lets go of the GIL.
    """
    counted = [0]
    stop = threading.Event()
    started = threading.Event()

    def count() -> None:
        started.set()
        while not stop.is_set():
            counted[0] += 1

    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.2)
    counter = threading.Thread(target=count)
    counter.start()
    try:
        started.wait()
        time.sleep(0.001)  # the GIL back to this thread, for 0.2 s
        before = counted[0]
        with pytest.raises(RegexTimeoutError):  # 10 ms of backtracking
            search(HOSTILE, HOSTILE_INPUT, timeout=0.01)
        return counted[0] - before
    finally:
        stop.set()
        counter.join()
        sys.setswitchinterval(interval)


def test_a_match_on_the_event_loop_keeps_the_gil() -> None:
    # Letting go of it would let any busy thread hold the loop until the
    # switch interval asks for it back (5 ms).
    async def on_the_loop() -> int:
        return _others_ran_during_a_search()

    assert asyncio.run(on_the_loop()) == 0


def test_a_match_in_a_worker_thread_lets_the_gil_go() -> None:
    # Here the loop's thread is the one waiting: it runs while the worker matches.
    assert _others_ran_during_a_search() > 0
