"""Validate and compile an intent catalog (§3.10 / §4.4.1 and Soul's extensions).

Catalogs come from bodies, so everything is checked and bounded: sizes, types,
and every regular expression (compiled with :mod:`..safe_regex`, matched with a
time limit). A compiled catalog is cached by content — a body sends its catalog
once per connection while commands arrive constantly.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
import marshal
import re
import threading
from typing import Any

import orjson

from ..safe_regex import UntrustedPattern, check_untrusted
from ..shared import Shared
from ..trie_regex import BUCKETS, compile_trie, trie
from .entries import (
    KEYWORD_RULES,
    MAX_EXAMPLE_LENGTH,
    MAX_LIST_ITEMS,
    MAX_SLOTS,
    Intent,
    IntentFilterError,
    clear_shared_entries,
    entry_intent,
    fold_all,
    is_mapping,
)
from .lexicon import lexicon, surfaces_of

MAX_INTENTS = 256
# Distinct keyword forms of a whole catalog (folded forms and synonyms count).
MAX_KEYWORDS = 4096
# Distinct patterns of a whole catalog (regex_any, regex_all, slot regexes).
MAX_CATALOG_PATTERNS = 256
CACHE_SIZE = 64
FEW_FIRSTS = 128  # distinct first characters of the keywords: one trie, no buckets
SYNONYM_TYPES = frozenset({"device", "color", "motion", "room"})
_FOLDED_RULES = (*KEYWORD_RULES, "examples")


@dataclass(slots=True)
class Catalog:
    """A compiled catalog: its intents and a keyword index shared by all of them."""

    intents: tuple[Intent, ...]
    # Finds, at every position, the longest keyword starting there …
    keyword_pattern: re.Pattern[str] | None
    # … and that keyword → every keyword that is a prefix of it (itself included).
    keyword_prefixes: dict[str, tuple[str, ...]]
    # keyword → ((intent index, rule), …)
    keyword_owners: dict[str, tuple[tuple[int, str], ...]]
    # intents with rules besides keywords (patterns, entity types, examples)
    rule_intents: frozenset[int]
    # every pattern of the catalog, checked once (when the catalog is) and
    # compiled by ``regex`` on its first use
    patterns: dict[str, UntrustedPattern] = field(default_factory=dict)
    # (pattern, entity type, value) → what the pattern captures from a surface
    alignments: dict[tuple[str, str, str, str], tuple[str, str] | None] = field(
        default_factory=dict
    )
    # intents a time alone may imply (``implied``): a moment slot, no hard rule
    moment_intents: tuple[int, ...] = ()
    # the first character of every keyword: a clause holding none has no hit
    keyword_firsts: frozenset[str] = frozenset()


# A catalog's keyword index (by its intents' keywords), its patterns (by its
# intents' patterns), its sets of intent indexes.
_shared_indexes: Shared[KeywordIndex] = Shared(64)
_shared_patterns: Shared[dict[str, UntrustedPattern]] = Shared(64)
_shared_sets: Shared[Any] = Shared(256)


def _catalog_texts(entries: list[Any] | tuple[Any, ...]) -> set[str]:
    """Return the keywords, examples and value-map keys ``_intent`` will fold.

    Read before validation, so bounded as validation bounds them: strings of
    at most ``MAX_EXAMPLE_LENGTH`` characters (``fold_all`` leaves out any
    zhconv cannot take, a lone surrogate); anything else is refused later.
    """
    texts: list[str] = []
    for raw in entries:
        if not is_mapping(raw):
            continue
        match = raw.get("match")
        if is_mapping(match):
            for rule in _FOLDED_RULES:
                items = match.get(rule)
                if isinstance(items, list):
                    if len(items) > MAX_LIST_ITEMS:
                        items = items[: MAX_LIST_ITEMS + 1]
                    texts += [
                        item.strip()
                        for item in items
                        if isinstance(item, str) and len(item) <= MAX_EXAMPLE_LENGTH
                    ]
        slots = raw.get("slots")
        if not isinstance(slots, list):
            continue
        for slot in slots if len(slots) <= MAX_SLOTS else slots[: MAX_SLOTS + 1]:
            value_map = slot.get("value_map") if is_mapping(slot) else None
            if (
                value_map  # most slots have none
                and is_mapping(value_map)
                and len(value_map) <= MAX_LIST_ITEMS
            ):
                texts += [
                    key
                    for key in value_map
                    if isinstance(key, str) and len(key) <= MAX_EXAMPLE_LENGTH
                ]
    return set(texts)


def _prefixes(keywords: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """Return each keyword's prefixes that are keywords too, longest first.

    In sorted order a keyword's prefixes come before it, each a prefix of the
    next: a stack of them is kept (what is no prefix of a keyword is no prefix
    of any later one). Linear in the catalog but for the sort.
    """
    prefixes: dict[str, tuple[str, ...]] = {}
    stack: list[str] = []
    for keyword in sorted(keywords):
        while stack and not keyword.startswith(stack[-1]):
            stack.pop()
        prefixes[keyword] = (keyword, *reversed(stack)) if stack else (keyword,)
        stack.append(keyword)
    return prefixes


def compile_catalog(entries: Any) -> Catalog:
    """Validate ``entries`` (the ``intent_catalog`` array) and compile it."""
    if not isinstance(entries, list | tuple):
        raise IntentFilterError("intent_catalog must be an array of intents")
    if not entries:
        raise IntentFilterError("intent_catalog must not be empty")
    if len(entries) > MAX_INTENTS:
        raise IntentFilterError(f"intent_catalog has more than {MAX_INTENTS} intents")
    seen: set[str] = set()
    folder = fold_all(_catalog_texts(entries))
    grams: dict[str, frozenset[str]] = {}  # an example repeated is read once
    intents = tuple(
        [entry_intent(i, raw, seen, folder, grams) for i, raw in enumerate(entries)]
    )
    keywords = tuple(
        (intent.keywords_any, intent.keywords_all, intent.negative_keywords)
        for intent in intents
    )
    index = _shared_indexes.get(keywords)
    if index is None:
        index = _shared_indexes.keep(keywords, _keyword_index(intents))
    pattern, prefixes, owners, firsts = index
    rule_patterns = tuple(
        (
            intent.regex_any,
            intent.regex_all,
            tuple(slot.regex for slot in intent.slots if slot.regex is not None),
        )
        for intent in intents
    )
    patterns = _shared_patterns.get(rule_patterns)
    if patterns is None:
        patterns = _shared_patterns.keep(rule_patterns, _patterns(intents))
    rule_intents = frozenset(
        intent.index
        for intent in intents
        if intent.regex_any
        or intent.regex_all
        or intent.entity_types_any
        or intent.entity_types_all
        or intent.examples
    )
    moment_intents = tuple(
        intent.index
        for intent in intents
        if intent.moment_slots and not intent.has_hard_rules
    )
    return Catalog(
        intents,
        pattern,
        prefixes,
        owners,
        _shared_sets.keep(rule_intents, rule_intents),
        patterns,
        moment_intents=_shared_sets.keep(moment_intents, moment_intents),
        keyword_firsts=firsts,
    )


type KeywordIndex = tuple[
    re.Pattern[str] | None,
    dict[str, tuple[str, ...]],
    dict[str, tuple[tuple[int, str], ...]],
    frozenset[str],
]


# (intent index, rule): at most MAX_INTENTS x 4 pairs, one copy each.
_pairs: dict[tuple[int, str], tuple[int, str]] = {}


def _pair(index: int, rule: str) -> tuple[int, str]:
    pair = (index, rule)
    return _pairs.setdefault(pair, pair)


def _keyword_index(intents: tuple[Intent, ...]) -> KeywordIndex:
    """Return the keyword pattern, prefixes and owners of ``intents``."""
    owners: dict[str, list[tuple[int, str]]] = {}
    vocabulary = lexicon("zh-CN").table
    for intent in intents:
        for rule in KEYWORD_RULES:
            if keywords := getattr(intent, rule):
                pair = _pair(intent.index, rule)
                for keyword in keywords:
                    owners.setdefault(keyword, []).append(pair)
        # A keyword that names a built-in entity ("灯", "闹钟", "点头") also
        # matches the entity's other names ("lamp", "アラーム", "nod"), so one
        # catalog serves every supported language.
        for keyword in intent.keywords_any:
            entry = vocabulary.get(keyword)
            if entry is None or entry[0] not in SYNONYM_TYPES:
                continue
            for surface in surfaces_of("zh-CN", *entry):
                if surface not in intent.keywords_any:
                    owners.setdefault(surface, []).append(
                        _pair(intent.index, "synonym")
                    )
    if len(owners) > MAX_KEYWORDS:
        raise IntentFilterError(
            f"intent_catalog has more than {MAX_KEYWORDS} keywords "
            "(with their folded forms and synonyms)"
        )
    # Our own pattern of escaped literals, as a trie: a zero-width lookahead
    # reports the longest keyword at each position in one C-level scan.
    # Lookahead buckets pay off only for many first characters: below that,
    # ``re``'s own first-character check on one trie is several times faster.
    firsts = frozenset(keyword[0] for keyword in owners)
    buckets = 1 if len(firsts) <= FEW_FIRSTS else BUCKETS
    root = trie(owners)
    pattern = compile_trie(root, buckets=buckets) if owners else None
    return (
        pattern,
        _prefixes(owners),
        {keyword: tuple(found) for keyword, found in owners.items()},
        firsts,
    )


def _patterns(intents: tuple[Intent, ...]) -> dict[str, UntrustedPattern]:
    """Return every distinct pattern of ``intents``, checked."""
    patterns: dict[str, UntrustedPattern] = {}
    for intent in intents:
        for rule_pattern in (
            *intent.regex_any,
            *intent.regex_all,
            *(slot.regex for slot in intent.slots if slot.regex is not None),
        ):
            if rule_pattern not in patterns:
                if len(patterns) >= MAX_CATALOG_PATTERNS:
                    raise IntentFilterError(
                        f"intent_catalog has more than {MAX_CATALOG_PATTERNS} "
                        "distinct patterns"
                    )
                patterns[rule_pattern] = check_untrusted(rule_pattern)
    return patterns


# orjson's bytes are a catalog's key when they say its content exactly; else
# (tuples, NaN: orjson writes them as lists and null) marshal's, after a NUL
# (no JSON text begins with one). An orjson key comes with the content it
# stands for (what orjson reads back from it): a request hits only when its
# catalog equals that content, and marshal's key needs no such check.
_cache: OrderedDict[bytes, tuple[Any, Catalog]] = OrderedDict()
_cache_lock = threading.Lock()
# Subclasses, dates and dataclasses are not plain JSON: orjson refuses them
# (then marshal decides, as before). It takes enums, UUIDs and fragments,
# which never equal what it reads back, and which marshal refuses.
_ORJSON_OPTIONS = (
    orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
)


def _marshal_key(entries: Any) -> bytes:
    try:
        # Version 2 writes no object references, so equal content gives equal
        # bytes however the objects were made.
        return b"\0" + marshal.dumps(entries, 2)
    except (TypeError, ValueError):
        raise IntentFilterError("intent_catalog must be plain JSON") from None


def _cached(key: bytes, entries: Any, exact: bool) -> Catalog | None:
    with _cache_lock:
        if (item := _cache.get(key)) is None or not (exact or item[0] == entries):
            return None
        _cache.move_to_end(key)
        return item[1]


def _keep(key: bytes, content: Any, catalog: Catalog) -> None:
    with _cache_lock:
        _cache[key] = (content, catalog)
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)


def cached_catalog(entries: Any) -> tuple[Catalog, bool]:
    """Return the compiled catalog for ``entries`` and whether it came from the cache.

    Cached by content: a catalog's orjson bytes (5x faster than marshal)
    when orjson reads back the very same content, its marshal bytes otherwise.
    """
    try:
        key: bytes | None = orjson.dumps(entries, option=_ORJSON_OPTIONS)
    except TypeError:  # orjson.JSONEncodeError: not JSON, or not as orjson writes it
        key = None
    if key is not None and (catalog := _cached(key, entries, False)) is not None:
        return catalog, True
    if key is not None:
        content = orjson.loads(key)
        # Equal to what orjson reads back, the catalog is lists, dicts,
        # strings, integers, finite floats, booleans and None, all of their
        # own type (orjson refuses subclasses; tuples, enums, UUIDs and NaN
        # equal nothing it reads): plain JSON, which marshal would take.
        if content != entries:  # tuples, NaN: only marshal's bytes say them
            key = None
    if key is None:
        exact = _marshal_key(entries)  # refuses what is not plain JSON, as before
        if (catalog := _cached(exact, entries, True)) is not None:
            return catalog, True
        key, content = exact, None
    catalog = compile_catalog(entries)
    _keep(key, content, catalog)
    return catalog, False


def clear_compile_cache() -> None:
    """Forget every compiled catalog (benchmarks use it to measure cold compiles).

    And the parts catalogs share, but for the keyword indexes: their compiled
    pattern is what ``re``'s own cache kept across compiles before they were
    built as trees (and, like the checked patterns, it is not the catalog's).
    """
    with _cache_lock:
        _cache.clear()
    clear_shared_entries()
    for shared in (_shared_patterns, _shared_sets):
        shared.clear()
