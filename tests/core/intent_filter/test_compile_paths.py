"""The catalog compile's fast paths give what the plain paths give.

Each fast path of a cold compile (strings checked all at once, the texts to
fold gathered in one list, weak shared parts without callbacks, examples read
once a catalog, the pattern checks' quicker walks) is compared here with the
plain code it replaced, on generated inputs, errors included.
"""

from __future__ import annotations

import gc
import random
from re import _constants as sre_constants, _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

import pytest

from custom_components.soul.core import regex_chars, safe_regex, shared as shared_module
from custom_components.soul.core.intent_filter import (
    IntentFilterError,
    catalog as catalog_module,
    compile_catalog,
    entries as entries_module,
)
from custom_components.soul.core.intent_filter.entries import (
    MAX_EXAMPLE_LENGTH,
    MAX_LIST_ITEMS,
    MAX_SLOTS,
    bigrams,
)
from custom_components.soul.core.untrusted import is_text

# Items a list of strings may hold: good ones, and each way of being refused.
_ITEMS = ["灯", " 开灯 ", "lamp", "x" * 64, "y" * 65, "", "   ", "a\nb", "\ud800", "\x7f",
          "tab\there", 5, None, ["灯"], "臺燈", "Ｌａｍｐ", "é"]  # fmt: skip


def _strings_item_by_item(value: Any, where: str, length: int) -> list[str]:
    """``_strings`` as it was: every item on its own (the reference)."""
    if not isinstance(value, list):
        raise IntentFilterError(f"{where} must be a list of strings")
    if len(value) > MAX_LIST_ITEMS:
        raise IntentFilterError(f"{where} has more than {MAX_LIST_ITEMS} items")
    out = []
    for item in value:
        if not isinstance(item, str) or not (stripped := item.strip()):
            raise IntentFilterError(f"{where} must contain non-empty strings")
        if len(item) > length:
            raise IntentFilterError(f"{where} item longer than {length} characters")
        if not is_text(item, length):
            raise IntentFilterError(
                f"{where} item {item[:40]!r} holds a control character or "
                "a lone surrogate"
            )
        out.append(stripped)
    return out


def _outcome(call: Any) -> Any:
    try:
        return call()
    except IntentFilterError as err:
        return ("error", str(err))


def test_strings_checked_at_once_as_one_by_one() -> None:
    rng = random.Random(11)  # noqa: S311 - reproducible test data, not secrets
    for _ in range(3000):
        value = [rng.choice(_ITEMS) for _ in range(rng.randint(0, 6))]
        if rng.random() < 0.7:  # mostly good lists, so the fast path is taken
            value = [item for item in value if item in ("灯", " 开灯 ", "lamp", "臺燈")]
        length = rng.choice([64, 200])
        assert _outcome(
            lambda v=value, n=length: entries_module._strings(v, "k", length=n)
        ) == _outcome(lambda v=value, n=length: _strings_item_by_item(v, "k", n))


def _catalog_texts_before(entries: list[Any]) -> set[str]:
    """``_catalog_texts`` as it was (the reference)."""
    texts: set[str] = set()
    for raw in entries:
        if not isinstance(raw, dict):
            continue
        match = raw.get("match")
        if isinstance(match, dict):
            for rule in (
                "keywords_any",
                "keywords_all",
                "negative_keywords",
                "examples",
            ):
                items = match.get(rule)
                if isinstance(items, list):
                    texts.update(
                        item.strip()
                        for item in items[: MAX_LIST_ITEMS + 1]
                        if isinstance(item, str) and len(item) <= MAX_EXAMPLE_LENGTH
                    )
        slots = raw.get("slots")
        for slot in slots[: MAX_SLOTS + 1] if isinstance(slots, list) else ():
            value_map = slot.get("value_map") if isinstance(slot, dict) else None
            if isinstance(value_map, dict) and len(value_map) <= MAX_LIST_ITEMS:
                texts.update(
                    key
                    for key in value_map
                    if isinstance(key, str) and len(key) <= MAX_EXAMPLE_LENGTH
                )
    return texts


def test_texts_to_fold_are_gathered_as_before() -> None:
    rng = random.Random(12)  # noqa: S311 - reproducible test data, not secrets
    odd: list[Any] = [None, 3, "灯", [], {}, ["灯"], {"灯": 1}]
    for _ in range(500):
        entries: list[Any] = []
        for _ in range(rng.randint(1, 5)):
            match = {
                rule: rng.choice([[rng.choice(_ITEMS) for _ in range(3)], *odd])
                for rule in rng.sample(
                    ["keywords_any", "keywords_all", "negative_keywords", "examples"], 2
                )
            }
            slots = [
                rng.choice(
                    [{"name": "s", "value_map": {rng.choice(["红", " 臺 ", "x"]): 1,
                                                  "z" * 201: 2}},
                     {"name": "s", "value_map": rng.choice(odd)}, *odd]
                )
                for _ in range(rng.randint(0, 3))
            ]  # fmt: skip
            entries.append(
                rng.choice(
                    [
                        {"id": "a", "match": match, "slots": slots},
                        {"match": match},
                        *odd,
                    ]
                )
            )
        assert catalog_module._catalog_texts(entries) == _catalog_texts_before(entries)


def test_shared_weak_parts_last_while_a_catalog_holds_them() -> None:
    shared: shared_module.Shared[Any] = shared_module.Shared(8, weak=True)

    class Part:
        pass

    held = [Part() for _ in range(20)]
    for n, part in enumerate(held):
        assert shared.keep(n, part) is part
        assert shared.keep(n, Part()) is part  # the first copy is the one kept
        assert len(shared._items) <= 8  # bounded, even by living parts
    assert shared.get(19) is held[19]
    dying = Part()
    shared.keep("dying", dying)
    del dying
    gc.collect()
    assert shared.get("dying") is None  # a dead part is never handed out
    fresh = Part()
    assert shared.keep("dying", fresh) is fresh
    for n in range(100):  # dead entries are swept: the table stays bounded
        shared.keep(("gone", n), Part())
        assert len(shared._items) <= 8
    bounded: shared_module.Shared[Any] = shared_module.Shared(3)
    for n in range(10):
        bounded.keep(n, n)
    assert list(bounded._items) == [7, 8, 9]


def test_a_repeated_example_is_read_once_and_alike() -> None:
    entries = [
        {
            "id": f"i{n}",
            "match": {"examples": ["把灯打开", f"帮我开灯{n % 3}", "臺燈 開"]},
        }
        for n in range(12)
    ]
    catalog = compile_catalog(entries)
    for intent, raw in zip(catalog.intents, entries, strict=True):
        assert intent.examples == tuple(bigrams(e) for e in raw["match"]["examples"])
    assert catalog.intents[0].examples[0] is catalog.intents[5].examples[0]


def _expansion_before(items: Any, limit: int) -> int:
    """``safe_regex._expansion`` as it was (the reference)."""
    total = 0
    for op, arg in getattr(items, "data", items):
        if op in regex_chars.REPEATS:
            low, _high, body = arg
            total += max(1, low) * _expansion_before(body, limit)
        elif op is sre_constants.SUBPATTERN:
            total += _expansion_before(arg[-1], limit)
        elif op is sre_constants.BRANCH:
            total += sum(_expansion_before(branch, limit) for branch in arg[1])
        elif op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
            total += _expansion_before(arg[1], limit)
        elif op is getattr(sre_constants, "ATOMIC_GROUP", None):
            total += _expansion_before(arg, limit)
        elif op is sre_constants.GROUPREF_EXISTS:
            total += sum(_expansion_before(part, limit) for part in arg[1:] if part)
        else:
            total += 1
        if total > limit:
            return total
    return total


_PIECES = ["a", "灯", "(?:ab|c)", "(x)", "[a-c]", "\\d", "+", "*", "?", "{2,5}", "{9}",
           "|", "(?=a)", "(?!b)", "(?>ab)", "(?P<n>a)", "(?(1)a|b)", "[[:alpha:]]",
           "{e<=1}", "&&", "--", "||", "~~", "[[", "{", "}", ".", "^", "$", "\\b",
           "(?i)", "(?:(?:a{3}){4}){5}"]  # fmt: skip


@pytest.mark.filterwarnings("ignore::FutureWarning")  # re on "[[", "&&"…
@pytest.mark.parametrize("seed", range(3))
def test_pattern_checks_read_patterns_as_before(seed: int) -> None:
    """The quicker walks of the pattern checks agree with the ones they replaced."""
    rng = random.Random(seed)  # noqa: S311 - reproducible test data, not secrets
    for _ in range(3000):
        pattern = "".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 8)))
        assert regex_chars.read_apart(pattern) == (
            "[:" in pattern or "{" in regex_chars._REPEAT_BRACES.sub("", pattern)
        )
        assert (safe_regex._SET_OPERATOR.search(pattern) is not None) == any(
            operator in pattern for operator in safe_regex._SET_OPERATORS
        )
        try:
            tree = sre_parse.parse(pattern)
        except (sre_constants.error, RecursionError, OverflowError):
            tree = None  # refused: nothing to walk
        for limit in () if tree is None else (4, 4096):
            assert safe_regex._expansion(tree, limit) == _expansion_before(tree, limit)
