"""The warm path's shortcuts answer as the plain code does.

A pattern is skipped on a text holding none of the characters every match
needs (``regex_chars.needed_chars``); a clause is split, rewritten and read
with shortcuts (one clause without a boundary, origins kept as ranges, all
content when alphanumeric); English durations try only suffixes of number
words. Each is checked here against what it replaced, on generated input.
"""

from __future__ import annotations

import random
import re

import pytest
import regex

from custom_components.soul.core.intent_filter import durations, segmenter, text
from custom_components.soul.core.intent_filter.numbers import parse_english_number
from custom_components.soul.core.regex_chars import needed_chars
from custom_components.soul.core.safe_regex import check_untrusted, search
from tests.core.test_safe_regex import _generated_patterns

_ALPHABET = "ab开灯关红色 0123456789.x-"
_CONTENT = re.compile(r"[\w]", re.UNICODE)


def _texts(rng: random.Random, count: int, alphabet: str = _ALPHABET) -> list[str]:
    return [
        "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 10)))
        for _ in range(count)
    ]


@pytest.mark.parametrize(
    ("pattern", "needed"),
    [
        ("(开灯|打开灯|关灯|变红|红灯)", {"开", "关", "变", "红"}),
        ("(红色|红|绿色|绿|白色|白|白灯|灯白色)", {"红", "绿", "白"}),
        (r"([0-9]+(?:\.[0-9]+)?)\s*分钟", {"分"}),
        ("(?i:ab)c", {"c"}),
        ("a*b", {"b"}),
        ("(?i)abc", None),  # case folded: nothing known
        ("a|", None),  # may match the empty string
        ("x{0,2}", None),
        (r"\d+", None),  # a category: regex and re read it apart
        ("[[:alpha:]]+", None),  # a POSIX class: read apart
        ("(?:foo){e<=1}", None),  # fuzzy matching: read apart
    ],
)
def test_needed_characters(pattern: str, needed: set[str] | None) -> None:
    assert needed_chars(pattern) == (None if needed is None else frozenset(needed))


@pytest.mark.filterwarnings("ignore::FutureWarning")  # regex warns of nested sets
def test_a_text_without_the_needed_characters_never_matches() -> None:
    """On generated patterns and texts: a skipped search is one that finds nothing."""
    rng = random.Random(11)  # noqa: S311 - reproducible test data, not secrets
    texts = _texts(rng, 40, "abcxyz0123456789-_. \n")
    known = skipped = 0
    for pattern in _generated_patterns(6000, seed=13):
        try:
            compiled = regex.compile(pattern, regex.VERSION0)
        except (regex.error, OverflowError, RecursionError):
            continue
        needed = needed_chars(pattern)
        if needed is None:
            continue
        known += 1
        for sample in texts:
            if needed.isdisjoint(sample):
                skipped += 1
                assert compiled.search(sample) is None, (pattern, sample)
    assert known > 300
    assert skipped > 1000


def test_search_skips_only_what_cannot_match() -> None:
    """``search`` gives ``regex``'s answer on every text, skipped or not."""
    rng = random.Random(5)  # noqa: S311 - reproducible test data, not secrets
    patterns = [
        "(开灯|打开灯|关灯|变红|红灯)",
        "(红色|红|绿色|绿|白色|白|白灯|灯白色)",
        r"([0-9]+(?:\.[0-9]+)?)\s*分钟",
        "(?:灯|light)(?=.*红)",
    ]
    for pattern in patterns:
        checked = check_untrusted(pattern)
        checked.compiled()  # what the first use does: the needed characters too
        assert checked.needs == needed_chars(pattern)
        plain = regex.compile(pattern, regex.VERSION0)
        for sample in [*_texts(rng, 300), "开灯", "把灯调成红色", "10分钟"]:
            found = search(checked, sample)
            expected = plain.search(sample)
            assert (found and found.span()) == (expected and expected.span())


@pytest.mark.parametrize(
    "command",
    ["开灯", "  开灯 ", " ", "", "turn on the light", "\t把灯打开 ", "再见", "x"],
)
def test_one_clause_without_a_boundary(command: str) -> None:
    """Without a boundary the clause is the stripped command, as the full split says."""
    assert segmenter._BOUNDARY.search(command) is None
    # A trailing boundary sends the command through the full split.
    assert [tuple(s) for s in segmenter.segment(command)] == [
        tuple(s) for s in segmenter.segment(command + "。")
    ]


def test_clause_variants_map_back_onto_the_command() -> None:
    rng = random.Random(3)  # noqa: S311 - reproducible test data, not secrets
    alphabet = "摇摇头点个头開燈ABC İ了一下灯"
    for _ in range(500):
        command = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))
        start = rng.randint(0, len(command) - 1)
        clause = text.make_clause(command, start, len(command))
        assert clause.variants[0] is clause.original
        assert len({v.text for v in clause.variants}) == len(clause.variants)
        for variant in clause.variants:
            assert (
                len(variant.origin) == len(variant.text) or variant is clause.original
            )
            for position in range(len(variant.text)):
                begin, end = variant.span(position, position + 1)
                assert start <= begin < end <= len(command)


def test_content_length_is_word_characters() -> None:
    """``str.isalnum`` holds for exactly the word characters of ``re``, but "_"."""
    for code in range(0x30000):
        char = chr(code)
        assert (_CONTENT.match(char) is not None) == (char.isalnum() or char == "_")


def _english_number_plainly(words: list[re.Match[str]]) -> tuple[float, int] | None:
    """``durations._english_number`` before it skipped suffixes of other words."""
    for size in range(min(4, len(words)), 0, -1):
        tail = [w.group().lower() for w in words[-size:]]
        if tail[-3:] == ["and", "a", "half"] and len(tail) > 3:
            base = parse_english_number(" ".join(tail[:-3]))
            value = None if base is None else base + 0.5
        elif tail[0] == "half" and tail[1:] in ([], ["a"], ["an"]):
            value = 0.5
        else:
            value = parse_english_number(" ".join(tail))
        if value is not None:
            return value, words[-size].start()
    return None


def test_english_numbers_before_a_unit() -> None:
    rng = random.Random(9)  # noqa: S311 - reproducible test data, not secrets
    vocabulary = [
        "in", "me", "remind", "a", "an", "and", "half", "one", "twenty-five",
        "two", "hundred", "thousand", "10", "2.5", "ten", "the", "x-ray", "1.",
        "forty", "Half", "AND", "zero", "twenty-x",
    ]  # fmt: skip
    for _ in range(3000):
        phrase = " ".join(rng.choice(vocabulary) for _ in range(rng.randint(0, 6)))
        words = list(durations._EN_WORD.finditer(phrase))
        assert durations._english_number(words) == _english_number_plainly(words)
