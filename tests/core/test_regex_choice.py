"""Literal choices (``core/regex_choice.py``): counted steps, run on ``re`` only when short."""

from __future__ import annotations

import random
import re
from re import _parser as sre_parse  # type: ignore[attr-defined]

import pytest
import regex

from custom_components.soul.core import safe_regex
from custom_components.soul.core.regex_choice import MAX_CHOICE_STEPS, choice_steps
from custom_components.soul.core.safe_regex import (
    RegexBudgetError,
    budget,
    check_untrusted,
    search,
)


@pytest.mark.parametrize(
    ("pattern", "steps"),
    [
        # the group, each alternative entered, every character tested
        ("(开灯|打开灯|把灯打开)", 1 + 3 + 9),
        ("(a|b)(c|d)", 2 + 2),  # single characters parse as sets: one step each
        # "a", then "" or "b" (re takes the common "a" out), then the second
        # group once per way through the first
        ("(a|ab)(c|xy)", (1 + 1 + 1 + 2) + 2 * (1 + 2 + 3)),
        ("(?P<act>点头|摇头)", 1 + 3 + 3),
        ("abc", 3),
        ("[abc]", 1),
    ],
)
def test_literal_choices_count_their_steps(pattern: str, steps: int) -> None:
    assert choice_steps(sre_parse.parse(pattern)) == steps
    assert check_untrusted(pattern).choice == steps


@pytest.mark.parametrize(
    "pattern",
    [
        "([0-9]+)分钟",  # a repeat
        "(a|b)?",
        "(?i)(on|off)",  # a flag
        "(?i:on|off)",
        "^(a|b)$",  # anchors
        r"\b(on|off)",
        r"(\d|x)",  # a class
        "[a-z]",  # a range
        "[^a]",
        ".",
        "(a)(?=b)",  # a lookahead
        r"(a)\1",  # a reference
    ],
)
def test_anything_else_is_no_choice(pattern: str) -> None:
    assert check_untrusted(pattern).choice is None


@pytest.mark.parametrize(
    "pattern",
    [
        "(a|aa)" * 15 + "b",  # 2^15 ways through fifteen groups of two
        "(|)" * 16 + "x",  # empty alternatives test no character, yet cost
    ],
)
def test_a_choice_whose_ways_multiply_past_the_bound_is_no_choice(
    pattern: str,
) -> None:
    assert choice_steps(sre_parse.parse(pattern)) is None


def test_a_choice_runs_on_re_in_a_short_text_and_on_regex_in_a_long_one() -> None:
    checked = check_untrusted("(关灯|开灯|打开灯)")
    assert checked.choice is not None
    short = search(checked, "帮我打开灯吧")
    assert isinstance(short, re.Match)
    assert short.span(1) == (2, 5)
    # A text whose places times the steps pass the bound runs with a timeout.
    places = MAX_CHOICE_STEPS // checked.choice
    long = search(checked, "啊" * places + "打开灯")
    assert long is not None
    assert not isinstance(long, re.Match)
    assert long.span(1) == (places, places + 3)


def test_a_spent_budget_stops_a_choice_too() -> None:
    checked = check_untrusted("(预算|用完)")
    assert checked.choice is not None
    with budget(0.0), pytest.raises(RegexBudgetError):
        search(checked, "预算")


def _choice(rnd: random.Random, depth: int) -> str:
    """A random literal choice over a small alphabet (so that it matches often)."""
    branches = []
    for _ in range(rnd.randint(1, 4)):
        parts = []
        for _ in range(rnd.randint(1, 3)):
            if depth < 2 and rnd.random() < 0.3:
                parts.append(_choice(rnd, depth + 1))
            else:
                parts.append(rnd.choice("ab灯开") * rnd.randint(1, 2))
        branches.append("".join(parts))
    opener = rnd.choice(["(", "(?:", f"(?P<g{depth}{rnd.randint(0, 99)}>"])
    return opener + "|".join(branches) + ")"


def test_choices_match_on_re_as_on_regex() -> None:
    """The same match, groups and spans as ``regex`` (VERSION0), on generated choices."""
    rnd = random.Random(19)  # noqa: S311 - reproducible test data, not secrets
    compared = 0
    for _ in range(2000):
        pattern = _choice(rnd, 0)
        try:
            checked = check_untrusted(pattern)
        except safe_regex.UnsafeRegexError:
            continue  # a group name used twice
        if checked.choice is None:
            continue
        reference = regex.compile(pattern, regex.VERSION0)
        for _ in range(5):
            text = "".join(rnd.choice("ab灯开x") for _ in range(rnd.randint(0, 12)))
            ours, theirs = search(checked, text), reference.search(text)
            assert (ours is None) == (theirs is None), (pattern, text)
            if ours is not None and theirs is not None:
                assert isinstance(ours, re.Match)
                assert ours.regs == theirs.regs, (pattern, text)
                compared += 1
    assert compared > 2000
