"""The intent filter's fast paths give the answers of the plain ones; caches stay honest.

No timing here: the figures are in ``benchmarks/intent_filter.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
import random
import re
from typing import Any

import pytest
import regex

from benchmarks.intent_filter import big_catalog, body_catalogs
from custom_components.soul.core import safe_regex, trie_regex
from custom_components.soul.core.intent_filter import (
    IntentFilterError,
    cached_catalog,
    catalog as catalog_module,
    clear_compile_cache,
    compile_catalog,
    filter_intents,
    lexicon,
)
from custom_components.soul.core.intent_filter.catalog import CACHE_SIZE
from custom_components.soul.core.intent_filter.entries import fold, fold_all
from custom_components.soul.core.intent_filter.reading import Context
from custom_components.soul.core.regex_chars import first_chars
from custom_components.soul.core.safe_regex import RegexBudgetError, budget, search
from custom_components.soul.core.trie_regex import alternation, compile_keywords

from .marker_source import marker_words

sre_compiler: Any = re._compiler  # type: ignore[attr-defined]
sre_parse: Any = re._parser  # type: ignore[attr-defined]

EVAL = Path(__file__).resolve().parents[2] / "data" / "eval"
COMMANDS = [
    json.loads(line)["command"]
    for line in (EVAL / "intents_dev.jsonl").read_text(encoding="utf-8").splitlines()
    if line.strip()
]
DESK_ROBOT = json.loads((EVAL / "catalog_desk_robot.json").read_text(encoding="utf-8"))


# -- first characters of untrusted patterns -------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("(红色|红|绿)", {"红", "绿"}),
        (r"([0-9]+(?:\.[0-9]+)?)\s*分钟", set("0123456789")),
        ("^(a|aa)+$", {"a"}),
        ("x*y?z", {"x", "y", "z"}),
        ("(?:ab|)c", {"a", "c"}),
        ("[a-c]d", {"a", "b", "c"}),
        ("(?>ab)", {"a"}),
        # Nothing is known: these run on every text, as before.
        ("a*", None),  # matches the empty string
        ("(?i)abc", None),
        ("(?i:a)b", None),
        ("[^a]", None),
        (".b", None),
        (r"\db", None),
        ("(?=a)a", None),
        (r"(a)\1", {"a"}),  # what follows the first character does not matter
        ("a{e<=1}", None),  # fuzzy matching in regex, literal text in re
        ("[[:alpha:]]", None),  # a POSIX class in regex
        ("[\u0000-\uffff]", None),  # too many characters to list
    ],
)
def test_first_chars(pattern: str, expected: set[str] | None) -> None:
    found = first_chars(pattern)
    assert (None if found is None else set(found)) == expected


def _patterns(rng: random.Random, count: int) -> list[str]:
    atoms = ["a", "b", "灯", "[ab]", "[a-c]", "[^a]", ".", r"\d", "^", "$", "(?=a)"]
    atoms += [r"\b", "é", "{e<=1}", "(?i)a", r"\{"]

    def make(depth: int) -> str:
        roll = rng.random()
        if depth > 3 or roll < 0.35:
            text = rng.choice(atoms)
        elif roll < 0.55:
            text = "(" + make(depth + 1) + ")"
        elif roll < 0.75:
            branches = [make(depth + 1) for _ in range(rng.randint(1, 3))]
            text = "(?:" + "|".join(branches) + ")"
        else:
            text = make(depth + 1) + make(depth + 1)
        if rng.random() < 0.3:
            text = "(?:" + text + ")" + rng.choice(["*", "+", "?", "{2}", "{0,2}"])
        return text

    return [make(0) for _ in range(count)]


def test_a_skipped_search_could_not_have_matched() -> None:
    rng = random.Random(7)  # noqa: S311 - reproducible test data
    skipped = 0
    for pattern in _patterns(rng, 1500):
        try:
            compiled = safe_regex.compile_untrusted(pattern)
        except safe_regex.UnsafeRegexError:
            continue
        firsts = first_chars(pattern)
        for _ in range(20):
            text = "".join(
                rng.choice("ab灯é{}xyz 019") for _ in range(rng.randint(0, 8))
            )
            if firsts is not None and firsts.isdisjoint(text):
                skipped += 1
                assert compiled.search(text) is None, (pattern, text)
            assert (search(compiled, text) is None) == (compiled.search(text) is None)
    assert skipped > 1000  # the check did run


def test_a_skipped_search_still_honours_the_budget() -> None:
    with budget(0.0), pytest.raises(RegexBudgetError):
        search("(红色|红)", "no red here")


def test_the_regex_timeout_still_applies_to_what_runs() -> None:
    # The hostile pattern begins with "a": a text of a's still runs it, bounded.
    with pytest.raises(safe_regex.RegexTimeoutError):
        search("(a|aa)+$", "a" * 40 + "#", timeout=0.001)


# -- marker lists as tries ---------------------------------------------------------------


def _longest_first(words: list[str]) -> re.Pattern[str]:
    """The marker pattern as it was: one alternation, longest words first."""
    latin = [w for w in words if lexicon._LATIN_WORD.match(w.replace(" ", "_"))]
    other = [w for w in words if w not in latin]
    parts = []
    if other:
        parts.append("|".join(map(re.escape, sorted(other, key=len, reverse=True))))
    if latin:
        body = "|".join(
            re.escape(w).replace(r"\ ", r"\s+")
            for w in sorted(latin, key=len, reverse=True)
        )
        parts.append(rf"\b(?:{body})\b")
    return re.compile("|".join(parts), re.IGNORECASE)


MARKERS = ["NEGATION", "POSITIVE_NEGATIONS", "POLITE_REQUEST", "QUESTION"]
MARKERS += ["CONVERSATION", "OPINION", "DEGREE", "GREETING", "EXCLAMATION"]


@pytest.mark.parametrize("name", MARKERS)
def test_marker_tries_find_what_the_alternation_found(name: str) -> None:
    pattern: re.Pattern[str] = getattr(lexicon, name)
    words = marker_words()[name]
    reference = _longest_first(words)
    rng = random.Random(name)  # noqa: S311 - reproducible test data
    texts = list(COMMANDS)
    for _ in range(3000):
        pieces = [rng.choice([*words, " ", ",", "x", "灯", "S", "ſ"]) for _ in range(4)]
        text = rng.choice(["", " "]).join(pieces)
        texts.append(text.upper() if rng.random() < 0.3 else text)
    for text in texts:
        ours, theirs = pattern.search(text), reference.search(text)
        assert (ours and ours.span()) == (theirs and theirs.span()), text


def _entities_longest_first(table: dict[str, Any]) -> re.Pattern[str]:
    """The built-in entities' pattern as it was: alternations, longest surfaces first."""
    cjk = sorted((s for s in table if not s.isascii()), key=len, reverse=True)
    latin = sorted((s for s in table if s.isascii()), key=len, reverse=True)
    latin_alternatives = "|".join(re.escape(s).replace(r"\ ", r"\s+") for s in latin)
    return re.compile(
        "|".join(map(re.escape, cjk))
        + r"|\b(?:"
        + latin_alternatives
        + r")(?:s|es)?\b",
        re.IGNORECASE,
    )


@pytest.mark.parametrize("locale", ["zh-CN", "zh-TW", "en-US", "ja-JP", "ko-KR"])
def test_entity_trie_finds_what_the_alternation_found(locale: str) -> None:
    lex = lexicon.lexicon(locale)
    reference = _entities_longest_first(lex.table)
    surfaces = list(lex.table)
    rng = random.Random(locale)  # noqa: S311 - reproducible test data
    others = ["s", "es", "ing", " ", "  ", "x", "a", "the ", "。", "灯", "ſ"]
    # every surface alone, then with each ending glued on, and in capitals
    texts = [*COMMANDS, *(s + end for s in surfaces for end in ["", *others])]
    texts += [text.upper() for text in texts]
    for _ in range(4000):
        pieces = [rng.choice(surfaces + others) for _ in range(rng.randint(1, 4))]
        text = rng.choice(["", " "]).join(pieces)
        texts.append(text.upper() if rng.random() < 0.3 else text)
    for text in texts:
        ours = [(m.span(), m.group()) for m in lex.pattern.finditer(text)]
        theirs = [(m.span(), m.group()) for m in reference.finditer(text)]
        assert ours == theirs, text


def _vocabulary() -> list[str]:
    """Every word of every marker list."""
    return [w for words in marker_words().values() for w in words]


# -- folding a catalog at once ---------------------------------------------------------


def test_folding_at_once_is_folding_one_by_one() -> None:
    texts = {*COMMANDS, *_vocabulary(), "把燈打開", "鬧鐘", "TURN ON", "乾燥機", "後天"}
    texts.add("一個半小時後叫我")
    folder = fold_all(texts)
    for text in texts:
        assert folder(text) == fold(text)
    assert folder("not given before") == fold("not given before")


def test_folding_at_once_takes_any_text() -> None:
    """Control characters fold as alone; a lone surrogate is left to the checks."""
    texts = {"開\t燈", "鬧\x00鐘", "乾\r燥機", "", " ", "後\u2028天", "燈\n燈"}
    folder = fold_all(texts)
    for text in texts:
        assert folder(text) == fold(text)
    folder = fold_all({*texts, "燈\ud800"})  # zhconv cannot take it
    for text in texts:
        assert folder(text) == fold(text)
    with pytest.raises(IntentFilterError, match="surrogate"):
        compile_catalog([{"id": "a", "match": {"keywords_any": ["燈\ud800"]}}])


def test_a_catalog_compiles_as_before_with_traditional_keywords() -> None:
    entries = [
        {
            "id": "lamp",
            "match": {"keywords_any": ["開燈", "Lamp"], "examples": ["把燈打開"]},
            "slots": [{"name": "mode", "value_map": {"開": "on", "關": "off"}}],
        }
    ]
    catalog = compile_catalog(entries)
    assert catalog.intents[0].keywords_any == ("開燈", "开灯", "lamp")
    assert catalog.intents[0].slots[0].value_map == {"开": "on", "关": "off"}
    response = filter_intents({"command": "開燈", "intent_catalog": entries})
    assert response["decision"]["action"] == "execute_intents"


# -- caches ------------------------------------------------------------------------------


def test_ten_bodies_catalogs_stay_cached() -> None:
    clear_compile_cache()
    catalogs = body_catalogs(DESK_ROBOT, 10)
    assert len({json.dumps(c, sort_keys=True) for c in catalogs}) == 10
    assert CACHE_SIZE >= 10
    compiled = [cached_catalog(c) for c in catalogs]
    assert not any(cached for _, cached in compiled)
    again = [cached_catalog(json.loads(json.dumps(c))) for c in catalogs]
    assert all(cached for _, cached in again)
    assert [a for a, _ in again] == [c for c, _ in compiled]
    for body, catalog in enumerate(catalogs):
        response = filter_intents({"command": "开灯", "intent_catalog": catalog})
        assert response["meta"]["catalog_cached"]
        prefix = f"body{body}." if body else ""
        assert response["intents"][0]["intent_id"] == f"{prefix}intent_light_control"


def test_the_big_catalog_compiles() -> None:
    catalog = compile_catalog(big_catalog(salt="t"))
    assert len(catalog.intents) == 256


def test_an_alignment_is_not_kept_from_a_search_that_ran_out_of_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One command out of time must not leave the body without its alignment."""
    entries: list[dict[str, Any]] = [
        {
            "id": "head",
            "match": {"keywords_any": ["nod"]},
            "slots": [{"name": "action", "required": True, "regex": "(点头|摇头)"}],
        }
    ]
    clear_compile_cache()
    catalog, _ = cached_catalog(entries)
    real = Context.regex

    def out_of_time(self: Context, *args: Any) -> Any:
        self.incomplete += 1
        return None

    monkeypatch.setattr(Context, "regex", out_of_time)
    first = filter_intents({"command": "nod", "intent_catalog": entries})
    assert first["intents"][0]["missing_parameters"] == ["action"]
    assert not catalog.alignments
    monkeypatch.setattr(Context, "regex", real)
    second = filter_intents({"command": "nod", "intent_catalog": entries})
    assert second["intents"][0]["normalized"]["action"] == "点头"
    assert catalog.alignments


def test_regex_module_compiles_what_first_chars_reads() -> None:
    """Every pattern of the desk robot gets its first characters (it is skipped often)."""
    for intent in DESK_ROBOT:
        for slot in intent.get("slots", []):
            if "regex" in slot:
                assert first_chars(slot["regex"]) is not None
                assert regex.compile(slot["regex"], regex.VERSION0)


@pytest.mark.parametrize("buckets", [1, 3, 8])
def test_keywords_compile_to_the_program_of_their_source(buckets: int) -> None:
    """``compile_keywords`` hands ``re`` the tree its parser makes of the source.

    The same program (``re``'s compiled code), so the same matches at the same
    speed, for words full of characters the source must escape.
    """
    rng = random.Random(buckets)  # noqa: S311 - reproducible test data, not secrets
    alphabet = "ab灯开关-[]{}()*+?.^$|\\ #的x"
    built: list[Any] = []
    compile_tree = trie_regex._sre_compiler.compile

    def keep(tree: Any, flags: int = 0) -> Any:
        built.append(tree)
        return compile_tree(tree, flags)

    for _ in range(150):
        words = {
            "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 5)))
            for _ in range(rng.randint(1, 40))
        }
        source = "(?=(" + alternation(words, buckets=buckets) + "))"
        built.clear()
        trie_regex._sre_compiler.compile = keep
        try:
            pattern = compile_keywords(words, buckets=buckets)
        finally:
            trie_regex._sre_compiler.compile = compile_tree
        parsed = sre_parse.parse(source)
        assert sre_compiler._code(built[0], 0) == sre_compiler._code(parsed, 0)
        reference = re.compile(source)
        assert (pattern.flags, pattern.groups) == (reference.flags, reference.groups)
        text = "".join(rng.choice(alphabet) for _ in range(60))
        assert [m.group(1) for m in pattern.finditer(text)] == [
            m.group(1) for m in reference.finditer(text)
        ]


def test_keyword_prefixes_are_the_keywords_they_begin_with() -> None:
    rng = random.Random(5)  # noqa: S311 - reproducible test data, not secrets
    for _ in range(200):
        words = {
            "".join(rng.choice("ab开灯") for _ in range(rng.randint(1, 5)))
            for _ in range(rng.randint(1, 30))
        }
        assert catalog_module._prefixes(words) == {
            word: tuple(
                word[:end] for end in range(len(word), 0, -1) if word[:end] in words
            )
            for word in words
        }
