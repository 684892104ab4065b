"""Check one catalog entry and make it an ``Intent`` (``catalog``'s first step).

Everything a body sends is checked and bounded here: ids, names, numbers,
lists of strings (one pass, item by item only to name the first error),
patterns (``safe_regex.check_untrusted``), entity types, slots and their time
keys. Intents and slots of equal content are shared between catalogs
(``shared.Shared``, weak): bodies of one model announce the same ones. Text
is folded (``fold``: lower case, Simplified Chinese) as clauses are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
import functools
import math
import re
from typing import Any, NamedTuple, TypeGuard

from zhconv_rs import zhconv

from ..language import to_simplified
from ..safe_regex import UnsafeRegexError, UntrustedPattern, check_untrusted
from ..shared import Shared, content_key
from ..untrusted import is_text
from .lexicon import ENTITY_TYPES

MAX_LIST_ITEMS = 512
MAX_KEYWORD_LENGTH = 64
MAX_PATTERNS = 32
MAX_SLOTS = 32
MAX_EXAMPLES = 64
MAX_EXAMPLE_LENGTH = 200
MAX_ID_LENGTH = 128
DEFAULT_PRIORITY = 50
TIME_KINDS = ("duration", "time_point")
# Soul's keys, then the DesktopRobot intent filter's (its time signals' fields):
# ``duration_seconds`` (a duration's length), ``trigger_at`` (the ISO moment),
# ``raw`` (the text), ``kind`` and ``timezone``.
TIME_KEYS = (
    "seconds",
    "seconds_from_now",
    "iso",
    "timestamp",
    "text",
    "duration_seconds",
    "trigger_at",
    "raw",
    "kind",
    "timezone",
)
# Keys whose value says when something happens (a moment), not how long.
MOMENT_KEYS = frozenset({"seconds_from_now", "iso", "timestamp", "trigger_at"})
# The DesktopRobot intent filter's names of the time entity types.
ENTITY_TYPE_ALIASES = {"time_duration": "duration", "time_time_point": "time_point"}
ENTITY_TYPE_NAMES = ENTITY_TYPES | {"time"}
# A ``*_seconds`` slot named like a length takes a plain duration ("点头3秒").
LENGTH_NAME = re.compile(r"duration|length|period|hold|keep|for_|_for|run_")
# Slot names that take a built-in entity type when their own rules find nothing.
SLOT_AFFINITY = {
    "color": "color", "colour": "color", "light_color": "color", "rgb_color": "color",
    "mode": "action", "action": "action", "state": "action", "power": "action",
    "operation": "action", "switch": "action", "command": "action",
    "room": "room", "location": "room", "area": "room", "place": "room",
    "device": "device", "target": "device", "device_type": "device", "appliance": "device",
    "motion": "motion", "gesture": "motion",
}  # fmt: skip
# Slots that say "set_color" when the clause names a color and no action.
MODE_SLOTS = frozenset({"mode", "light_mode", "operation"})
# Slot names that take the clause's first number.
NUMBER_SLOTS = re.compile(
    r"(?:^|_)(?:brightness|volume|level|percent|percentage|count|times|number|value|"
    r"temperature|speed|step|amount)(?:$|_)"
)
KEYWORD_RULES = ("keywords_any", "keywords_all", "negative_keywords")
REGEX_RULES = ("regex_any", "regex_all")
_MAPPINGS = (dict, Mapping)  # a dict first: the ABC check is slow
_MATCH_KEYS = {
    *KEYWORD_RULES,
    *REGEX_RULES,
    "entity_types_any",
    "entity_types_all",
    "examples",
    "min_confidence",
}


class IntentFilterError(ValueError):
    """An invalid request or catalog; the message says what to fix."""


@dataclass(frozen=True, slots=True, weakref_slot=True)
class Slot:
    """One parameter of an intent and where its value comes from."""

    name: str
    required: bool = False
    has_default: bool = False
    default: Any = None
    regex: str | None = None
    group: int | str = 1
    from_entity_types: tuple[str, ...] = ()
    use_normalized_entity: bool = True
    from_time_key: str | None = None
    time_kind: str | None = None
    value_map: Mapping[str, Any] = field(default_factory=dict)
    # Whether the slot takes the moment a time expression names ("10分钟后",
    # "明天8点"), rather than a length or a text.
    moment: bool = False
    # What its name and rules say, read once here rather than at every command
    # (``slots.fill_slots``); none of it depends on what the user said.
    named: SlotName = field(init=False, repr=False, compare=False)
    # ``slots._implicit`` may fill it: it has a pattern, or a name it
    # understands (``*_seconds``, an entity type's, a number's); for any other
    # (``skill``, ``label``) it finds nothing
    implicit: bool = field(init=False, repr=False, compare=False)
    # Nothing in a clause can fill it (no pattern, time, entity type, nor a
    # name ``_implicit`` understands): only its default or ``required`` count.
    inert: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        """Read the slot's name and rules once (a frozen dataclass: set directly)."""
        named = slot_name(self.name)
        implicit = (
            self.regex is not None
            or named.seconds
            or named.affinity is not None
            or named.numbered
        )
        object.__setattr__(self, "named", named)
        object.__setattr__(self, "implicit", implicit)
        object.__setattr__(
            self,
            "inert",
            not (
                implicit
                or self.from_time_key
                or self.time_kind
                or self.from_entity_types
            ),
        )


class SlotName(NamedTuple):
    """What a slot's name says about the values it takes (``slot_name``)."""

    seconds: bool  # "*_seconds": a time signal's seconds
    length: bool  # named like a length (``LENGTH_NAME``): a plain duration
    affinity: str | None  # the built-in entity type it takes (``SLOT_AFFINITY``)
    mode: bool  # "set_color" when the clause names a color (``MODE_SLOTS``)
    numbered: bool  # the clause's first number (``NUMBER_SLOTS``)


@functools.lru_cache(maxsize=1024)
def slot_name(name: str) -> SlotName:
    """Read a slot's name; kept by name, as catalogs reuse a few ("mode", "color")."""
    return SlotName(
        name.endswith("_seconds"),
        LENGTH_NAME.search(name) is not None,
        SLOT_AFFINITY.get(name),
        name in MODE_SLOTS,
        NUMBER_SLOTS.search(name) is not None,
    )


@dataclass(frozen=True, slots=True, weakref_slot=True)
class Intent:
    """One catalog entry, folded and compiled for matching."""

    index: int
    id: str
    name: str
    priority: float
    hint_score: float
    min_confidence: float | None
    keywords_any: tuple[str, ...]
    keywords_all: tuple[str, ...]
    negative_keywords: tuple[str, ...]
    regex_any: tuple[str, ...]
    regex_all: tuple[str, ...]
    entity_types_any: tuple[str, ...]
    entity_types_all: tuple[str, ...]
    examples: tuple[frozenset[str], ...]
    slots: tuple[Slot, ...]
    example_texts: tuple[str, ...] = ()

    @property
    def moment_slots(self) -> tuple[str, ...]:
        """The names of the slots that take a moment."""
        return tuple(slot.name for slot in self.slots if slot.moment)

    @property
    def has_hard_rules(self) -> bool:
        """Whether a rule must hold for the intent to match at all."""
        return bool(self.keywords_all or self.regex_all or self.entity_types_all)


def fold(text: str) -> str:
    """Fold text the way clauses are folded: lower case, Simplified Chinese."""
    return to_simplified(text.lower())


def fold_all(texts: Iterable[str]) -> Callable[[str], str]:
    """Return ``fold`` for many texts at once: one ``zhconv`` call for all of them.

    A catalog holds a thousand keywords and examples; converting them one by
    one costs more than the rest of its compile. The conversion (longest
    dictionary match, left to right) cannot reach across a line break, which no
    keyword or example holds, so each line of the joined text converts as it
    would alone; a line whose length changed is folded alone, as ``fold`` does.
    """
    lowered = {text: text.lower() for text in texts if "\n" not in text}
    try:
        converted = zhconv("\n".join(lowered.values()), "zh-Hans").split("\n")
    except UnicodeEncodeError:  # a lone surrogate (refused by the checks later)
        lowered = {
            text: low
            for text, low in lowered.items()
            if is_text(text, MAX_EXAMPLE_LENGTH)
        }
        converted = zhconv("\n".join(lowered.values()), "zh-Hans").split("\n")
    known: dict[str, str] = {}
    if len(converted) == len(lowered):
        for (text, low), simple in zip(lowered.items(), converted, strict=True):
            known[text] = simple if len(simple) == len(low) else to_simplified(low)

    def folder(text: str) -> str:
        folded = known.get(text)
        return fold(text) if folded is None else folded

    return folder


def bigrams(text: str, folder: Callable[[str], str] = fold) -> frozenset[str]:
    """Character bigrams of ``text`` without spaces (examples similarity)."""
    compact = "".join(folder(text).split())
    if len(compact) < 2:
        return frozenset({compact}) if compact else frozenset()
    return frozenset([compact[i : i + 2] for i in range(len(compact) - 1)])


def is_mapping(value: Any) -> TypeGuard[Mapping[Any, Any]]:
    """``isinstance(value, Mapping)``, without the ABC check for a dict."""
    return isinstance(value, _MAPPINGS)


def _where(intent_id: str | None, key: str) -> str:
    return f"intent {intent_id!r}: {key}" if intent_id else key


# Where a value is, for an error: text, or (intent id, key) written out only
# when there is an error (a catalog checks thousands of values).
type Where = str | tuple[str | None, str]


def _say(where: Where) -> str:
    return where if isinstance(where, str) else _where(*where)


def _number(value: Any, where: Where, low: float, high: float) -> float:
    if type(value) is int and low <= value <= high:
        return float(value)  # the common case, sooner
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not low <= value <= high
    ):
        raise IntentFilterError(
            f"{_say(where)} must be a number from {low:g} to {high:g}"
        )
    return float(value)


def _strings(
    value: Any,
    where: Where,
    *,
    limit: int = MAX_LIST_ITEMS,
    length: int = MAX_KEYWORD_LENGTH,
) -> list[str]:
    if not isinstance(value, list):
        raise IntentFilterError(f"{_say(where)} must be a list of strings")
    if not value:
        return []
    if len(value) > limit:
        raise IntentFilterError(f"{_say(where)} has more than {limit} items")
    # Every item at once (one search of them all, joined by a space, which
    # ``is_text`` accepts); on any doubt, item by item for the first error.
    out = [item.strip() for item in value if type(item) is str and len(item) <= length]
    if len(out) == len(value) and all(out) and is_text(" ".join(value), 1 << 62):
        return out
    out = []
    for item in value:
        if not isinstance(item, str) or not (stripped := item.strip()):
            raise IntentFilterError(f"{_say(where)} must contain non-empty strings")
        if len(item) > length:
            raise IntentFilterError(
                f"{_say(where)} item longer than {length} characters"
            )
        if not is_text(item, length):
            raise IntentFilterError(
                f"{_say(where)} item {item[:40]!r} holds a control character or "
                "a lone surrogate"
            )
        out.append(stripped)
    return out


def _pattern(pattern: str, where: Where) -> UntrustedPattern:
    try:
        return check_untrusted(pattern)
    except UnsafeRegexError as err:
        raise IntentFilterError(f"{_say(where)}: {err}") from None


def _entity_types(value: Any, where: Where) -> tuple[str, ...]:
    if value == [] and isinstance(value, list):
        return ()
    types = [ENTITY_TYPE_ALIASES.get(t, t) for t in _strings(value, where, limit=16)]
    unknown = sorted(set(types) - ENTITY_TYPE_NAMES)
    if unknown:
        raise IntentFilterError(
            f"{_say(where)}: unknown entity type {unknown[0]!r} "
            f"(known: {', '.join(sorted(ENTITY_TYPE_NAMES))})"
        )
    return tuple(dict.fromkeys(types))


def _is_moment(
    name: str, time_key: str | None, time_kind: str | None, types: tuple[str, ...]
) -> bool:
    """Whether a slot takes a moment ("10分钟后", "明天8点"), not a length or a text."""
    if time_key in MOMENT_KEYS:
        return True
    if time_key is not None and time_key != "seconds":
        return False  # duration_seconds is a length; text, raw, kind, timezone
    if time_kind == "time_point" or "time_point" in types:
        return True
    if time_key == "seconds" or time_kind is not None or name.endswith("_seconds"):
        # read the way slots.py reads a *_seconds slot
        return LENGTH_NAME.search(name) is None
    return False


_shared_slots: Shared[Slot] = Shared(4096, weak=True)
_shared_intents: Shared[Intent] = Shared(4096, weak=True)


def clear_shared_entries() -> None:
    """Forget the intents and slots shared between catalogs (cold compiles)."""
    _shared_slots.clear()
    _shared_intents.clear()


def _slot(
    raw: Any, intent_id: str, seen: set[str], folder: Callable[[str], str] = fold
) -> Slot:
    key = content_key(raw, digest=False)  # a slot is small
    if key is not None and (slot := _shared_slots.get(key)) is not None:
        if slot.name in seen:
            raise IntentFilterError(_where(intent_id, f"duplicate slot {slot.name!r}"))
        seen.add(slot.name)
        return slot
    slot = _checked_slot(raw, intent_id, seen, folder)
    return slot if key is None else _shared_slots.keep(key, slot)


def _checked_slot(
    raw: Any, intent_id: str, seen: set[str], folder: Callable[[str], str]
) -> Slot:
    if not is_mapping(raw):
        raise IntentFilterError(_where(intent_id, "every slot must be an object"))
    name = raw.get("name")
    if not isinstance(name, str) or not name or len(name) > MAX_ID_LENGTH:
        raise IntentFilterError(_where(intent_id, "every slot needs a string name"))
    if not is_text(name, MAX_ID_LENGTH):
        raise IntentFilterError(
            _where(
                intent_id,
                f"slot name {name[:40]!r} holds a control character or a lone "
                "surrogate",
            )
        )
    if name in seen:
        raise IntentFilterError(_where(intent_id, f"duplicate slot {name!r}"))
    seen.add(name)
    where = _where(intent_id, f"slot {name!r}")
    required = raw.get("required", False)
    if not isinstance(required, bool):
        raise IntentFilterError(f"{where}: required must be true or false")
    regex = raw.get("regex")
    if regex is not None:
        if not isinstance(regex, str) or not regex:
            raise IntentFilterError(f"{where}: regex must be a non-empty string")
        compiled = _pattern(regex, f"{where} regex")
    group: int | str = 1 if regex is not None and compiled.groups else 0
    if "regex_group" in raw:
        group = raw["regex_group"]
        if isinstance(group, bool) or not isinstance(group, int | str):
            raise IntentFilterError(f"{where}: regex_group must be a number or a name")
        if regex is not None:
            valid = (
                0 <= group <= compiled.groups
                if isinstance(group, int)
                else group in compiled.groupindex
            )
            if not valid:
                raise IntentFilterError(
                    f"{where}: regex_group {group!r} is not a group of {regex!r}"
                )
    from_types = raw.get("from_entity_types")
    time_kind = raw.get("time_kind")
    if time_kind is not None and time_kind not in TIME_KINDS:
        raise IntentFilterError(
            f"{where}: time_kind must be one of {', '.join(TIME_KINDS)}"
        )
    time_key = raw.get("from_time_key")
    if time_key is not None and time_key not in TIME_KEYS:
        raise IntentFilterError(
            f"{where}: from_time_key must be one of {', '.join(TIME_KEYS)}"
        )
    value_map = raw.get("value_map", {})
    if not isinstance(value_map, Mapping) or len(value_map) > MAX_LIST_ITEMS:
        raise IntentFilterError(
            f"{where}: value_map must be an object of at most {MAX_LIST_ITEMS} entries"
        )
    for key in value_map:
        # As keywords and examples: a key is folded like them, and zhconv
        # cannot take a lone surrogate.
        if (text := str(key)) and not is_text(text, len(text)):
            raise IntentFilterError(
                f"{where}: value_map key {text[:40]!r} holds a control character "
                "or a lone surrogate"
            )
    use_normalized = raw.get("use_normalized_entity", True)
    if not isinstance(use_normalized, bool):
        raise IntentFilterError(f"{where}: use_normalized_entity must be true or false")
    entity_types = (
        ()
        if from_types is None
        else _entity_types(from_types, f"{where} from_entity_types")
    )
    return Slot(
        name=name,
        required=required,
        has_default="default" in raw,
        default=raw.get("default"),
        regex=regex,
        group=group,
        from_entity_types=entity_types,
        use_normalized_entity=use_normalized,
        from_time_key=time_key,
        time_kind=time_kind,
        value_map={folder(str(k)): v for k, v in value_map.items()},
        moment=_is_moment(name, time_key, time_kind, entity_types),
    )


def entry_intent(
    index: int,
    raw: Any,
    seen: set[str],
    folder: Callable[[str], str] = fold,
    grams: dict[str, frozenset[str]] | None = None,
) -> Intent:
    """Return catalog entry ``index`` as an ``Intent``; raise ``IntentFilterError``.

    ``seen`` holds the ids of the entries before it; an entry of equal content
    at the same index is taken from an earlier catalog.
    """
    content = content_key(raw)
    key = None if content is None else (index, content)
    if key is not None and (intent := _shared_intents.get(key)) is not None:
        if intent.id in seen:
            raise IntentFilterError(
                f"duplicate intent id {intent.id!r} in intent_catalog"
            )
        seen.add(intent.id)
        return intent
    intent = _checked_intent(index, raw, seen, folder, {} if grams is None else grams)
    return intent if key is None else _shared_intents.keep(key, intent)


def _checked_intent(
    index: int,
    raw: Any,
    seen: set[str],
    folder: Callable[[str], str],
    grams: dict[str, frozenset[str]],
) -> Intent:
    """Check and fold one intent; ``grams``: examples' bigrams found so far."""
    if not is_mapping(raw):
        raise IntentFilterError("every intent_catalog entry must be an object")
    intent_id = raw.get("id")
    if not isinstance(intent_id, str) or not intent_id.strip():
        raise IntentFilterError(
            "every intent_catalog entry needs a non-empty string id"
        )
    if not is_text(intent_id, MAX_ID_LENGTH):
        raise IntentFilterError(
            f"intent id {intent_id[:40]!r} is not one line of text of at most "
            f"{MAX_ID_LENGTH} characters"
        )
    if len(intent_id) > MAX_ID_LENGTH:
        raise IntentFilterError(f"intent id longer than {MAX_ID_LENGTH} characters")
    if intent_id in seen:
        raise IntentFilterError(f"duplicate intent id {intent_id!r} in intent_catalog")
    seen.add(intent_id)
    name = raw.get("name", intent_id)
    if not is_text(name, MAX_ID_LENGTH):
        raise IntentFilterError(
            _where(
                intent_id,
                f"name must be one line of at most {MAX_ID_LENGTH} characters",
            )
        )
    match = raw.get("match", {})
    if not is_mapping(match):
        raise IntentFilterError(_where(intent_id, "match must be an object"))
    unknown = () if _MATCH_KEYS.issuperset(match) else sorted(set(match) - _MATCH_KEYS)
    if unknown:
        raise IntentFilterError(_where(intent_id, f"unknown match rule {unknown[0]!r}"))
    keywords: dict[str, tuple[str, ...]] = {}
    for rule in KEYWORD_RULES:
        if rule not in match:
            keywords[rule] = ()
            continue
        forms: list[str] = []
        for k in _strings(match[rule], (intent_id, rule)):
            forms.append(k.lower())
            forms.append(folder(k))
        keywords[rule] = tuple(dict.fromkeys(forms))
    patterns = {
        rule: tuple(
            [
                _pattern(p, (intent_id, rule)).pattern
                for p in _strings(
                    match[rule],
                    (intent_id, rule),
                    limit=MAX_PATTERNS,
                    length=4096,
                )
            ]
        )
        if rule in match
        else ()
        for rule in REGEX_RULES
    }
    examples = _strings(
        match.get("examples", []),
        (intent_id, "examples"),
        limit=MAX_EXAMPLES,
        length=MAX_EXAMPLE_LENGTH,
    )
    min_confidence = match.get("min_confidence")
    slots_raw = raw.get("slots", [])
    if not isinstance(slots_raw, list) or len(slots_raw) > MAX_SLOTS:
        raise IntentFilterError(
            _where(intent_id, f"slots must be a list of at most {MAX_SLOTS} objects")
        )
    slot_names: set[str] = set()
    return Intent(
        index=index,
        id=intent_id,
        name=name,
        priority=_number(
            raw.get("priority", DEFAULT_PRIORITY),
            (intent_id, "priority"),
            -1e6,
            1e6,
        ),
        hint_score=_number(raw.get("hint_score", 0), (intent_id, "hint_score"), 0, 1),
        min_confidence=None
        if min_confidence is None
        else _number(min_confidence, (intent_id, "min_confidence"), 0, 1),
        keywords_any=keywords["keywords_any"],
        keywords_all=keywords["keywords_all"],
        negative_keywords=keywords["negative_keywords"],
        regex_any=patterns["regex_any"],
        regex_all=patterns["regex_all"],
        entity_types_any=_entity_types(
            match.get("entity_types_any", []), (intent_id, "entity_types_any")
        ),
        entity_types_all=_entity_types(
            match.get("entity_types_all", []), (intent_id, "entity_types_all")
        ),
        examples=tuple(
            [
                found
                if (found := grams.get(e)) is not None
                else grams.setdefault(e, bigrams(e, folder))
                for e in examples
            ]
        ),
        slots=tuple([_slot(s, intent_id, slot_names, folder) for s in slots_raw]),
        example_texts=tuple(examples),
    )
