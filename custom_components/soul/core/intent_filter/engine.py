"""``filter_intents``: the §4.4 request in, the §4.4.2 response out.

The command is split into clauses; each clause is read once (built-in
entities, durations, clock times, catalog keyword hits, decision markers) and
every catalog intent is scored against it. The best intents per clause become
``intents``; when none can run, the §4.4.3 system intents say whether the
command is an emotional exclamation (``no_action``) or needs the language
model (``fallback_reasoning``). ``docs/intent-filter.md`` has the rules and the
confidence formula.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
import itertools
import re
import time
from typing import Any
import uuid
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .. import untrusted
from ..safe_regex import (
    RegexBudgetError,
    RegexTimeoutError,
    UnsafeRegexError,
    budget,
    search,
)
from .catalog import (
    Catalog,
    Intent,
    IntentFilterError,
    Slot,
    bigrams,
    cached_catalog,
    fold,
)
from .durations import Duration, find_durations
from .lexicon import (
    CONVERSATION,
    DEGREE,
    EXCLAMATION,
    GREETING,
    OPINION,
    POLITE_REQUEST,
    Entity,
    find_entities,
    is_negated,
    is_question,
    surfaces_of,
)
from .numbers import parse_number
from .segmenter import Segment, segment
from .text import Clause, Variant, detect_locale, make_clause, normalize_locale
from .timepoints import TimePoint, find_time_points

MAX_COMMAND_LENGTH = 2000
SYNONYM_WEIGHT = 0.9  # a keyword's other names count slightly less than the keyword
REGEX_TIMEOUT = 0.01  # seconds one catalog pattern may run on one clause
REGEX_BUDGET = 0.012  # seconds all catalog patterns may run on one command
FILTER_BUDGET = 0.015  # seconds for the whole command; later clauses are skipped
MAX_SEGMENTS = 32  # clauses read of one command
MAX_HITS_SCORED = 8  # keyword hits one intent scores in one clause
MAX_WARNINGS = 16
DEFAULT_TIMEZONE = "UTC"
DEFAULT_OPTIONS: dict[str, Any] = {
    "allow_multi_intent": True,
    "max_intents": 8,
    "max_intents_per_segment": 1,
    "min_confidence": 0.35,
    "enable_time_parser": True,
    "emit_system_intent_when_empty": True,
    "return_debug_candidates": False,
    "return_debug_entities": False,
}
_OPTION_RANGES = {"max_intents": (1, 32), "max_intents_per_segment": (1, 8)}

SYS_FALLBACK = "sys.fallback_reasoning"
SYS_NO_ACTION = "sys.no_action"
_SYSTEM_NAMES = {SYS_FALLBACK: "高级模型思考", SYS_NO_ACTION: "无需动作"}

# Slot names that take a built-in entity type when their own rules find nothing.
_AFFINITY = {
    "color": "color", "colour": "color", "light_color": "color", "rgb_color": "color",
    "mode": "action", "action": "action", "state": "action", "power": "action",
    "operation": "action", "switch": "action", "command": "action",
    "room": "room", "location": "room", "area": "room", "place": "room",
    "device": "device", "target": "device", "device_type": "device", "appliance": "device",
    "motion": "motion", "gesture": "motion",
}  # fmt: skip
_MODE_SLOTS = {"mode", "light_mode", "operation"}
_NUMBER_SLOTS = re.compile(
    r"(?:^|_)(?:brightness|volume|level|percent|percentage|count|times|number|value|"
    r"temperature|speed|step|amount)(?:$|_)"
)
_DURATION_LIKE = re.compile(r"duration|length|period|hold|keep|for_|_for|run_")
_NUMERIC = re.compile(r"\s*[0-9０-９.]+\s*|[零〇一二两兩三四五六七八九十百千万点點半]+")
_NUMBER_TOKEN = re.compile(r"[0-9]+(?:\.[0-9]+)?|[零〇一二两兩三四五六七八九十百千万]+")
_CONTENT = re.compile(r"[\w]", re.UNICODE)
_LATIN_SUFFIXES = ("", "s", "es", "ed", "ing", "er", "ers", "d")
_LATIN_TAIL = re.compile(r"[a-z]*")
_RUN_ID = uuid.uuid4().hex[:8]
_request_numbers = itertools.count(1)


@dataclass(slots=True)
class _Request:
    request_id: str
    command: str
    entries: Any
    options: dict[str, Any]
    now: datetime
    timezone: str
    locale: str | None


@dataclass(slots=True)
class _Hit:
    keyword: str
    start: int  # in the original command
    end: int


class _Markers:
    """The decision markers of a clause, read only when a decision needs them."""

    __slots__ = ("_text", "_values")

    def __init__(self, text: str) -> None:
        self._text = text
        self._values: dict[str, bool] = {}

    def _get(self, name: str, test: Any) -> bool:
        if (value := self._values.get(name)) is None:
            value = self._values[name] = bool(test(self._text))
        return value

    @property
    def negated(self) -> bool:
        return self._get("negated", is_negated)

    @property
    def question(self) -> bool:
        return self._get("question", is_question)

    @property
    def chatty(self) -> bool:
        """Opinion, conversation or exclamation markers."""
        return self._get(
            "chatty",
            lambda t: (
                OPINION.search(t)
                or CONVERSATION.search(t)
                or EXCLAMATION.search(t)
                or expresses_emotion(t)
            ),
        )

    @property
    def remark(self) -> bool:
        """Degree words that make a remark of a clause without an action ("灯太亮了")."""
        return self._get("remark", DEGREE.search)

    @property
    def polite(self) -> bool:
        """Request markers: "帮我", "请", "please"."""
        return self._get("polite", POLITE_REQUEST.search)


@dataclass(slots=True)
class _Reading:
    """Everything read from one clause, shared by every intent scored against it."""

    seg: Segment
    clause: Clause
    content_length: int
    entities: list[Entity]
    durations: list[Duration]
    time_points: list[TimePoint]
    numbers: list[tuple[float, int, int]]
    hits: list[_Hit]
    markers: _Markers
    types: set[str] = field(default_factory=set)
    borrowed: _Reading | None = None  # a neighbouring time-only clause
    # intent index → its (hit, rule) pairs: each intent sees only its own hits
    by_owner: dict[int, list[tuple[_Hit, str]]] = field(default_factory=dict)

    @property
    def has_action(self) -> bool:
        return "action" in self.types


@dataclass(slots=True)
class _Candidate:
    intent: Intent
    reading: _Reading
    confidence: float
    evidence: list[dict[str, Any]]
    parameters: dict[str, Any]
    normalized: dict[str, Any]
    missing: list[str]
    strong: bool
    status: str = "ready"


class _Context:
    """Per-request state: clock, locale, the catalog and regex warnings."""

    def __init__(self, request: _Request, catalog: Catalog, locale: str) -> None:
        self.request = request
        self.catalog = catalog
        self.locale = locale
        self.warnings: list[dict[str, str]] = []
        self._warned: set[tuple[str, str, str]] = set()
        self._durations: dict[str, list[Duration]] = {}
        # Patterns that timed out on this command are not run again on it.
        # Nothing is kept across commands: one user's command must not
        # disable an intent of a body (or of every body with that catalog).
        self._slow: set[str] = set()
        self._budget_spent = False

    def regex(self, intent: Intent, pattern: str, text: str) -> Any:
        """Search a catalog pattern within the command's time; never raises."""
        if self._budget_spent or pattern in self._slow:
            return None  # reported once, when it happened
        compiled = self.catalog.patterns.get(pattern, pattern)
        try:
            return search(compiled, text, timeout=REGEX_TIMEOUT)
        except RegexBudgetError as err:
            # The command's time is spent (not this pattern's fault): no
            # pattern runs any more on this command.
            self._budget_spent = True
            self._warn(intent, pattern, str(err))
        except RegexTimeoutError as err:
            self._slow.add(pattern)
            self._warn(intent, pattern, str(err))
        except UnsafeRegexError as err:  # compiled at validation; kept for safety
            self._warn(intent, pattern, str(err))
        return None

    def note(self, error: str) -> None:
        """Add a warning about the command as a whole."""
        self._warn(None, "", error)

    def _warn(self, intent: Intent | None, pattern: str, error: str) -> None:
        key = (intent.id if intent is not None else "", pattern, error)
        if key in self._warned or len(self.warnings) >= MAX_WARNINGS:
            return
        self._warned.add(key)
        warning = {"pattern": pattern, "error": error}
        if intent is not None:
            warning = {"intent_id": intent.id, **warning}
        self.warnings.append(warning)

    def durations(self, text: str) -> list[Duration]:
        if text not in self._durations:
            self._durations[text] = _merge(find_durations(text))
        return self._durations[text]


# --- request ----------------------------------------------------------------


def _bool_option(options: Mapping[str, Any], key: str) -> bool:
    value = options.get(key, DEFAULT_OPTIONS[key])
    if not isinstance(value, bool):
        raise IntentFilterError(f"options.{key} must be true or false")
    return value


_TIMEZONE_NAME = re.compile(r"[A-Za-z0-9_+-]+(?:/[A-Za-z0-9_+-]+){0,2}")


def valid_timezone_name(name: Any) -> bool:
    """Return whether ``name`` has the shape of an IANA zone ("Asia/Shanghai").

    Checked before a zone file is looked for: no absolute or parent paths,
    no trailing slash, at most 64 characters.
    """
    return (
        isinstance(name, str)
        and len(name) <= 64
        and _TIMEZONE_NAME.fullmatch(name) is not None
    )


def _parse_request(request: Any, default_timezone: str) -> _Request:
    if not isinstance(request, Mapping):
        raise IntentFilterError("the request body must be a JSON object")
    command = request.get("command")
    if not isinstance(command, str) or not command.strip():
        raise IntentFilterError("command is required and must be a non-empty string")
    if len(command) > MAX_COMMAND_LENGTH:
        raise IntentFilterError(
            f"command is longer than {MAX_COMMAND_LENGTH} characters"
        )
    try:
        untrusted.text(
            command, "command", max_length=MAX_COMMAND_LENGTH, multiline=True
        )
    except untrusted.UntrustedInputError as err:
        raise IntentFilterError(str(err)) from None
    if "intent_catalog" not in request:
        raise IntentFilterError("intent_catalog is required")
    raw_options = request.get("options")
    if raw_options is None:
        raw_options = {}
    if not isinstance(raw_options, Mapping):
        raise IntentFilterError("options must be an object")
    options = dict(DEFAULT_OPTIONS)
    for key, default in DEFAULT_OPTIONS.items():
        if key in _OPTION_RANGES:
            value = raw_options.get(key, default)
            low, high = _OPTION_RANGES[key]
            if (
                isinstance(value, bool)
                or not isinstance(value, int)
                or not low <= value <= high
            ):
                raise IntentFilterError(
                    f"options.{key} must be an integer from {low} to {high}"
                )
            options[key] = value
        elif key == "min_confidence":
            value = raw_options.get(key, default)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not 0 <= value <= 1
            ):
                raise IntentFilterError(
                    "options.min_confidence must be a number from 0 to 1"
                )
            options[key] = float(value)
        else:
            options[key] = _bool_option(raw_options, key)
    request_id = request.get("request_id")
    if request_id is not None and (
        not isinstance(request_id, str) or len(request_id) > 128
    ):
        raise IntentFilterError("request_id must be a string of at most 128 characters")
    tz_name = request.get("timezone") or default_timezone
    if not valid_timezone_name(tz_name):
        raise IntentFilterError("timezone must be an IANA time zone name")
    try:
        zone = ZoneInfo(tz_name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise IntentFilterError(f"unknown timezone {tz_name!r}") from None
    now_raw = request.get("now")
    if now_raw is None:
        now = datetime.now(zone)
    else:
        if not isinstance(now_raw, str):
            raise IntentFilterError("now must be an ISO 8601 date and time")
        try:
            parsed = datetime.fromisoformat(now_raw)
        except ValueError:
            raise IntentFilterError(
                f"now {now_raw!r} is not an ISO 8601 date and time"
            ) from None
        now = (
            parsed.replace(tzinfo=zone)
            if parsed.tzinfo is None
            else parsed.astimezone(zone)
        )
    locale = request.get("locale")
    if locale is not None and (
        not isinstance(locale, str) or (locale := normalize_locale(locale)) is None
    ):
        raise IntentFilterError(
            "locale must be one of zh-CN, zh-TW, en-US, ja-JP, ko-KR"
        )
    return _Request(
        request_id=request_id or f"ifr_{_RUN_ID}{next(_request_numbers):x}",
        command=command,
        entries=request["intent_catalog"],
        options=options,
        now=now,
        timezone=tz_name,
        locale=locale,
    )


# --- reading a clause ---------------------------------------------------------


def _merge(durations: list[Duration]) -> list[Duration]:
    """Join adjacent durations ("1小时30分钟后", "2 hours 10 minutes")."""
    merged: list[Duration] = []
    for duration in durations:
        if (
            merged
            and 0 <= duration.start - merged[-1].end <= 1
            and not merged[-1].relative
        ):
            last = merged[-1]
            merged[-1] = Duration(
                last.seconds + duration.seconds,
                last.start,
                duration.end,
                duration.relative,
            )
        else:
            merged.append(duration)
    return merged


def _keyword_hits(catalog: Catalog, clause: Clause) -> list[_Hit]:
    hits: dict[tuple[str, int], _Hit] = {}
    pattern = catalog.keyword_pattern
    if pattern is None:
        return []
    prefixes = catalog.keyword_prefixes
    for variant in clause.variants:
        text = variant.text if variant is not clause.original else variant.text.lower()
        for match in pattern.finditer(text):
            position = match.start()
            for keyword in prefixes[match.group(1)]:
                end = position + len(keyword)
                if keyword.isascii():
                    if position and text[position - 1].isalnum():
                        continue
                    tail = _LATIN_TAIL.match(text, end).group()  # type: ignore[union-attr]
                    if tail not in _LATIN_SUFFIXES:
                        continue
                start_o, end_o = variant.span(position, end)
                hits.setdefault((keyword, start_o), _Hit(keyword, start_o, end_o))
    return sorted(hits.values(), key=lambda h: (h.start, -len(h.keyword)))


def _read(ctx: _Context, seg: Segment) -> _Reading:
    clause = make_clause(ctx.request.command, seg.start, seg.end, ctx.locale)
    folded = clause.folded.text
    entities = [
        Entity(e.type, e.value, e.text, e.start + seg.start, e.end + seg.start)
        for e in find_entities(folded, ctx.locale)
    ]
    durations: list[Duration] = []
    time_points: list[TimePoint] = []
    if ctx.request.options["enable_time_parser"]:
        durations = [
            Duration(d.seconds, d.start + seg.start, d.end + seg.start, d.relative)
            for d in ctx.durations(folded)
        ]
        time_points = [
            TimePoint(t.at, t.start + seg.start, t.end + seg.start)
            for t in find_time_points(folded, ctx.request.now)
        ]
    timed = [(d.start, d.end) for d in durations] + [
        (t.start, t.end) for t in time_points
    ]
    numbers = []
    for match in _NUMBER_TOKEN.finditer(folded):
        start, end = match.start() + seg.start, match.end() + seg.start
        if any(s <= start < e for s, e in timed):
            continue
        if (value := parse_number(match.group())) is not None:
            numbers.append((value, start, end))
    types = {e.type for e in entities}
    if numbers:
        types.add("number")
    if durations:
        types.update(("duration", "time"))
    if time_points:
        types.update(("time_point", "time"))
    return _Reading(
        seg=seg,
        clause=clause,
        content_length=max(1, len(_CONTENT.findall(folded))),
        entities=entities,
        durations=durations,
        time_points=time_points,
        numbers=numbers,
        hits=_keyword_hits(ctx.catalog, clause),
        markers=_Markers(folded),
        types=types,
    )


# --- slots ------------------------------------------------------------------


def _json_number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else round(value, 3)


def _time_signals(reading: _Reading) -> tuple[list[Duration], list[TimePoint]]:
    if reading.durations or reading.time_points or reading.borrowed is None:
        return reading.durations, reading.time_points
    return reading.borrowed.durations, reading.borrowed.time_points


def _seconds_for(
    slot_name: str, reading: _Reading, now: datetime, command: str
) -> tuple[float, str] | None:
    """Pick the time signal a ``*_seconds`` slot means, as (seconds, text)."""
    durations, points = _time_signals(reading)
    if _DURATION_LIKE.search(slot_name):
        ordered = [d for d in durations if not d.relative] + [
            d for d in durations if d.relative
        ]
        if ordered:
            return ordered[0].seconds, command[ordered[0].start : ordered[0].end]
        return None
    relative = [d for d in durations if d.relative]
    if relative:
        return relative[0].seconds, command[relative[0].start : relative[0].end]
    if points:
        return points[0].seconds_from(now), command[points[0].start : points[0].end]
    if durations:
        return durations[0].seconds, command[durations[0].start : durations[0].end]
    return None


def _time_value(
    slot: Slot, reading: _Reading, now: datetime, command: str
) -> tuple[Any, str] | None:
    """Return the value of a slot bound with ``from_time_key`` / ``time_kind``."""
    durations, points = _time_signals(reading)
    key = slot.from_time_key or "seconds"
    if slot.time_kind != "time_point" and durations:
        d = durations[0]
        moment = now + timedelta(seconds=d.seconds)
        values = {
            "seconds": d.seconds,
            "seconds_from_now": d.seconds,
            "iso": moment.isoformat(),
            "timestamp": moment.timestamp(),
        }
        raw = command[d.start : d.end]
    elif slot.time_kind != "duration" and points:
        p = points[0]
        seconds = p.seconds_from(now)
        values = {
            "seconds": seconds,
            "seconds_from_now": seconds,
            "iso": p.at.isoformat(),
            "timestamp": p.at.timestamp(),
        }
        raw = command[p.start : p.end]
    else:
        return None
    value = raw if key == "text" else values[key]
    return (_json_number(value) if isinstance(value, float) else value), raw


def _normalize_capture(
    ctx: _Context,
    slot: Slot,
    raw: str,
    where: tuple[_Reading, Variant, tuple[int, int]] | None = None,
) -> Any:
    """Normalise a captured text; ``where`` is the clause, variant and span it came from."""
    folded = fold(raw).strip()
    if folded in slot.value_map:
        return slot.value_map[folded]
    if slot.name.endswith("_seconds"):
        if where is not None:
            reading, variant, span = where
            for duration in ctx.durations(variant.text):
                if duration.start <= span[0] and span[1] <= duration.end:
                    return _json_number(duration.seconds)
            # The clause's clock times, already read (in command coordinates).
            start, end = variant.span(*span)
            for point in reading.time_points:
                if point.start <= start and end <= point.end:
                    return _json_number(point.seconds_from(ctx.request.now))
        inside = ctx.durations(folded)
        if inside and (value := parse_number(folded)) is None:
            return _json_number(inside[0].seconds)
    if (
        _NUMERIC.fullmatch(folded)
        and (value := parse_number(folded.strip())) is not None
    ):
        return _json_number(value)
    kind = _AFFINITY.get(slot.name)
    if kind is not None:
        entities = find_entities(folded, ctx.locale)
        for entity in entities:
            if entity.type == kind:
                return entity.value
        if slot.name in _MODE_SLOTS and any(e.type == "color" for e in entities):
            return "set_color"
    return raw


def _fill_slots(
    ctx: _Context, intent: Intent, reading: _Reading
) -> tuple[dict[str, Any], dict[str, Any], list[str], int]:
    parameters: dict[str, Any] = {}
    normalized: dict[str, Any] = {}
    missing: list[str] = []
    from_text = 0
    now = ctx.request.now
    for slot in intent.slots:
        value: Any = None
        raw: str | None = None
        found = False
        if slot.regex is not None:
            for variant in reading.clause.variants:
                match = ctx.regex(intent, slot.regex, variant.text)
                if match is None:
                    continue
                captured = match.group(slot.group)
                if not captured:
                    continue
                raw = captured
                where = (reading, variant, match.span(slot.group))
                value = _normalize_capture(ctx, slot, captured, where)
                found = True
                break
        if (
            not found
            and (slot.from_time_key or slot.time_kind)
            and (timed := _time_value(slot, reading, now, ctx.request.command))
            is not None
        ):
            value, raw = timed
            found = True
        if not found and slot.from_entity_types:
            for entity in reading.entities:
                if entity.type in slot.from_entity_types:
                    raw = entity.text
                    value = entity.value if slot.use_normalized_entity else entity.text
                    found = True
                    break
            if not found and "number" in slot.from_entity_types and reading.numbers:
                number, start, end = reading.numbers[0]
                raw = ctx.request.command[start:end]
                value = _json_number(number) if slot.use_normalized_entity else raw
                found = True
            if (
                not found
                and {"duration", "time_point", "time"} & set(slot.from_entity_types)
                and (timed := _time_value(slot, reading, now, ctx.request.command))
                is not None
            ):
                value, raw = timed
                found = True
        if not found:
            found, value, raw = _implicit(ctx, intent, slot, reading)
        if found:
            if raw is not None:
                parameters[slot.name] = raw
                from_text += 1
            normalized[slot.name] = value
        elif slot.has_default:
            normalized[slot.name] = slot.default
        elif slot.required:
            missing.append(slot.name)
    return parameters, normalized, missing, from_text


def _align(
    ctx: _Context, intent: Intent, slot: Slot, entity: Entity
) -> tuple[str, str] | None:
    """Return what ``slot``'s pattern captures from a surface form of ``entity``."""
    if slot.regex is None:
        return None
    for surface in surfaces_of(ctx.locale, entity.type, str(entity.value)):
        match = ctx.regex(intent, slot.regex, surface)
        if match is not None and (captured := match.group(slot.group)):
            return captured, surface
    return None


def _implicit(
    ctx: _Context, intent: Intent, slot: Slot, reading: _Reading
) -> tuple[bool, Any, str | None]:
    """Fill a slot from what Soul understands by itself (time, entities, numbers)."""
    if slot.name.endswith("_seconds"):
        if (
            picked := _seconds_for(
                slot.name, reading, ctx.request.now, ctx.request.command
            )
        ) is not None:
            seconds, text = picked
            return True, _json_number(seconds), text or None
        return False, None, None
    kind = _AFFINITY.get(slot.name)
    if kind is not None:
        for entity in reading.entities:
            if entity.type == kind:
                return True, entity.value, entity.text
        if slot.name in _MODE_SLOTS and "color" in reading.types:
            return True, "set_color", None
    if slot.regex is not None:
        # Align what the user said with the catalog's own vocabulary: "nod" has
        # the surface "点头", which the slot's pattern accepts.
        for entity in reading.entities:
            key = (slot.regex, ctx.locale, entity.type, str(entity.value))
            if key not in ctx.catalog.alignments:
                ctx.catalog.alignments[key] = _align(ctx, intent, slot, entity)
            if (aligned := ctx.catalog.alignments[key]) is not None:
                captured, _surface = aligned
                return (
                    True,
                    _normalize_capture(ctx, slot, captured),
                    entity.text,
                )
    if _NUMBER_SLOTS.search(slot.name) and reading.numbers:
        number, start, end = reading.numbers[0]
        return True, _json_number(number), ctx.request.command[start:end]
    return False, None, None


# --- scoring ----------------------------------------------------------------


def _noisy_or(scores: list[float]) -> float:
    remaining = 1.0
    for score in scores:
        remaining *= 1.0 - max(0.0, min(1.0, score))
    return 1.0 - remaining


def _score(ctx: _Context, intent: Intent, reading: _Reading) -> _Candidate | None:
    """Score ``intent`` against one clause; None when a rule excludes it."""
    hits_any: list[_Hit] = []
    synonyms: list[_Hit] = []  # other names of a keyword's built-in entity
    found_all: set[str] = set()
    for hit, rule in reading.by_owner.get(intent.index, ()):
        if rule == "negative_keywords":
            return None
        if rule == "keywords_all":
            found_all.add(hit.keyword)
        elif rule == "keywords_any":
            hits_any.append(hit)
        else:
            synonyms.append(hit)
    if intent.keywords_all and len(found_all) < len(intent.keywords_all):
        return None
    if intent.entity_types_all and not set(intent.entity_types_all) <= reading.types:
        return None
    evidence: list[dict[str, Any]] = []
    scores: list[float] = []
    strong = False
    variants = reading.clause.variants
    for pattern in intent.regex_all:
        match = next(
            (m for v in variants if (m := ctx.regex(intent, pattern, v.text))), None
        )
        if match is None:
            return None
        evidence.append({"type": "regex_all", "value": pattern, "score": 0.75})
        scores.append(0.75)
        strong = True
    if intent.keywords_all:
        evidence.append(
            {"type": "keywords_all", "value": list(intent.keywords_all), "score": 0.7}
        )
        scores.append(0.7)
        strong = True
    # Only the hits count, never the length of the list: a long keywords_any
    # list cannot dilute a specific hit. The best hit scores by how much of
    # the clause it covers; other, non-overlapping hits add a little.
    best_coverage = 0.0
    covered: list[tuple[int, int]] = []
    ranked = sorted(hits_any, key=lambda h: -len(h.keyword)) + sorted(
        synonyms, key=lambda h: -len(h.keyword)
    )
    for position, hit in enumerate(ranked):
        if len(covered) >= MAX_HITS_SCORED:
            break  # more hits only add x0.5 each: a repeated word is not more sure
        if any(s < hit.end and hit.start < e for s, e in covered):
            continue
        synonym = position >= len(hits_any)
        coverage = min(1.0, len(hit.keyword.replace(" ", "")) / reading.content_length)
        score = (0.6 + 0.35 * coverage) * (SYNONYM_WEIGHT if synonym else 1.0)
        if covered:
            score *= 0.5
        best_coverage = max(best_coverage, coverage)
        covered.append((hit.start, hit.end))
        kind = "keyword_synonym" if synonym else "keyword_any"
        evidence.append({"type": kind, "value": hit.keyword, "score": round(score, 3)})
        scores.append(score)
    for pattern in intent.regex_any:
        for variant in variants:
            if (match := ctx.regex(intent, pattern, variant.text)) is not None:
                coverage = min(
                    1.0, (match.end() - match.start()) / max(1, len(variant.text))
                )
                score = 0.7 + 0.25 * coverage
                evidence.append(
                    {"type": "regex_any", "value": pattern, "score": round(score, 3)}
                )
                scores.append(score)
                strong = True
                break
    present = [t for t in intent.entity_types_any if t in reading.types]
    for position, kind in enumerate(present):
        score = 0.3 if position == 0 else 0.15
        evidence.append({"type": "entity_type", "value": kind, "score": score})
        scores.append(score)
    if intent.examples:
        clause_grams = bigrams(reading.clause.folded.text)
        best = max(
            (
                2 * len(clause_grams & example) / (len(clause_grams) + len(example))
                for example in intent.examples
                if clause_grams or example
            ),
            default=0.0,
        )
        if best >= 0.3:
            evidence.append(
                {"type": "example", "value": round(best, 3), "score": round(best, 3)}
            )
            scores.append(best)
            strong = strong or best >= 0.5
    if intent.entity_types_all:
        evidence.append(
            {
                "type": "entity_types_all",
                "value": list(intent.entity_types_all),
                "score": 0.5,
            }
        )
        scores.append(0.5)
    if not scores:
        return None
    parameters, normalized, missing, from_text = _fill_slots(ctx, intent, reading)
    for name in list(parameters)[:2]:
        evidence.append({"type": "slot", "value": name, "score": 0.15})
        scores.append(0.15)
    if intent.hint_score:
        evidence.append(
            {
                "type": "hint_score",
                "value": intent.hint_score,
                "score": intent.hint_score,
            }
        )
        scores.append(intent.hint_score)
    confidence = round(min(0.99, _noisy_or(scores)), 3)
    strong = not _mere_mention(reading, strong, best_coverage, from_text)
    return _Candidate(
        intent=intent,
        reading=reading,
        confidence=confidence,
        evidence=evidence,
        parameters=parameters,
        normalized=normalized,
        missing=missing,
        strong=strong,
        status="need_clarification" if missing else "ready",
    )


def _mere_mention(
    reading: _Reading, explicit: bool, coverage: float, from_text: int
) -> bool:
    """Whether a clause only talks about what an intent controls.

    "我喜欢红色", "哇，灯好漂亮" (opinions, exclamations) and "灯太亮了" (a remark)
    name the light without asking for anything; the language model answers them.
    Explicit evidence (a catalog pattern, ``keywords_all``, a close example) or
    a built-in action word always counts as a request.
    """
    if explicit or reading.has_action:
        return False
    if reading.markers.chatty and coverage < 1.0:
        return True
    return (
        reading.markers.remark
        and not reading.markers.polite
        and from_text == 0
        and coverage < 0.5
    )


def _rank(candidate: _Candidate) -> tuple[float, float, float]:
    """Confidence first; within 0.05 the higher priority wins."""
    return (
        -int(candidate.confidence * 20),
        -candidate.intent.priority,
        -candidate.confidence,
    )


# --- response ---------------------------------------------------------------


def _intent_body(candidate: _Candidate) -> dict[str, Any]:
    seg = candidate.reading.seg
    return {
        "intent_id": candidate.intent.id,
        "intent_name": candidate.intent.name,
        "confidence": candidate.confidence,
        "status": candidate.status,
        "segment_index": seg.index,
        "span": {"text": seg.text, "start": seg.start, "end": seg.end},
        "parameters": candidate.parameters,
        "normalized": candidate.normalized,
        "missing_parameters": candidate.missing,
        "evidence": candidate.evidence,
    }


def _system_body(
    intent_id: str, command: str, reason: str, confidence: float
) -> dict[str, Any]:
    stripped = command.strip()
    start = command.index(stripped) if stripped else 0
    return {
        "intent_id": intent_id,
        "intent_name": _SYSTEM_NAMES[intent_id],
        "confidence": confidence,
        "status": "system",
        "segment_index": 0,
        "span": {"text": stripped, "start": start, "end": start + len(stripped)},
        "parameters": {},
        "normalized": {},
        "missing_parameters": [],
        "evidence": [{"type": "rule", "value": reason, "score": confidence}],
    }


def expresses_emotion(text: str) -> bool:
    """Whether ``text`` expresses an emotion (``core.emotion``'s recognizer)."""
    # Imported here: the recognizer itself imports this package's text module.
    from ..emotion.recognizer import analyze_emotion  # noqa: PLC0415

    return analyze_emotion(text)["emotion"] != "neutral"


def _classify(command: str) -> tuple[str, str, float]:
    """Decide for a command without a catalog intent: (system intent, reason, confidence)."""
    folded = fold(command)
    if is_question(folded):
        return SYS_FALLBACK, "open_question", 0.8
    if CONVERSATION.search(folded) or GREETING.search(folded):
        return SYS_FALLBACK, "conversation", 0.7
    if (
        EXCLAMATION.search(folded) or expresses_emotion(command)
    ) and not OPINION.search(folded):
        return SYS_NO_ACTION, "emotional_expression", 0.75
    return SYS_FALLBACK, "no_catalog_match", 0.5


def filter_intents(
    request: Any,
    *,
    default_timezone: str = DEFAULT_TIMEZONE,
    compiled: Catalog | None = None,
) -> dict[str, Any]:
    """Filter one command against a catalog (§4.4); raises ``IntentFilterError`` on bad input.

    ``compiled`` is the request's catalog already compiled (a body's, compiled
    when it was published): it is used as is, whatever the compile cache holds.
    """
    started = time.perf_counter()
    req = _parse_request(request, default_timezone)
    catalog, cached = (
        (compiled, True) if compiled is not None else cached_catalog(req.entries)
    )
    locale = req.locale or detect_locale(req.command)
    # From here on (the catalog is compiled): the command's own time.
    deadline = time.perf_counter() + FILTER_BUDGET
    with budget(REGEX_BUDGET):  # every catalog pattern of this command, together
        ctx = _Context(req, catalog, locale)
        options = req.options
        command = req.command
        if options["allow_multi_intent"]:
            segments = segment(command)
        else:
            stripped = command.strip()
            start = command.index(stripped)
            segments = [Segment(0, stripped, start, start + len(stripped))]
        if not segments:  # only punctuation
            stripped = command.strip()
            start = command.index(stripped)
            segments = [Segment(0, stripped, start, start + len(stripped))]
        if len(segments) > MAX_SEGMENTS:
            ctx.note(
                f"the command has more than {MAX_SEGMENTS} clauses; "
                "the rest were not read"
            )
            segments = segments[:MAX_SEGMENTS]
        readings = [_read(ctx, seg) for seg in segments]
        # A clause that is only a time ("明天早上8点，叫我起床") lends it to its neighbours.
        for position, reading in enumerate(readings):
            if reading.hits or not (reading.durations or reading.time_points):
                continue
            for neighbour in (position + 1, position - 1):
                if (
                    0 <= neighbour < len(readings)
                    and readings[neighbour].borrowed is None
                ):
                    readings[neighbour].borrowed = reading

        selected: list[_Candidate] = []
        rejected: list[_Candidate] = []
        mentioned: list[_Candidate] = []
        debug: list[dict[str, Any]] = []
        per_segment = (
            options["max_intents_per_segment"] if options["allow_multi_intent"] else 1
        )
        for position, reading in enumerate(readings):
            if position and time.perf_counter() > deadline:
                ctx.note(
                    f"the command took longer than {FILTER_BUDGET * 1000:g} ms to "
                    f"filter; clauses from {position + 1} on were not read"
                )
                break
            # Only intents with a keyword hit, or rules beyond keywords, can match.
            for h in reading.hits:
                for owner, rule in catalog.keyword_owners[h.keyword]:
                    reading.by_owner.setdefault(owner, []).append((h, rule))
            candidates = [
                c
                for intent in catalog.intents
                if intent.index in reading.by_owner
                or intent.index in catalog.rule_intents
                if (c := _score(ctx, intent, reading)) is not None
            ]
            candidates.sort(key=_rank)
            chosen = 0
            for candidate in candidates:
                threshold = (
                    candidate.intent.min_confidence
                    if candidate.intent.min_confidence is not None
                    else options["min_confidence"]
                )
                passed = candidate.confidence >= threshold
                if options["return_debug_candidates"]:
                    debug.append(
                        {
                            "intent_id": candidate.intent.id,
                            "segment_index": reading.seg.index,
                            "confidence": candidate.confidence,
                            "passed_threshold": passed,
                            "strong": candidate.strong,
                        }
                    )
                if not passed:
                    continue
                if reading.markers.negated:
                    candidate.status = "rejected"
                    candidate.evidence.append(
                        {"type": "negation", "value": True, "score": 0}
                    )
                    rejected.append(candidate)
                    break
                if reading.markers.question or not candidate.strong:
                    mentioned.append(candidate)
                    break
                if chosen < per_segment:
                    selected.append(candidate)
                    chosen += 1
        selected = (
            selected[: options["max_intents"]]
            if options["allow_multi_intent"]
            else selected[:1]
        )

        emit = options["emit_system_intent_when_empty"]
        intents: list[dict[str, Any]]
        if selected:
            ready = [c for c in selected if c.status == "ready"]
            decision = {
                "action": "execute_intents",
                "trigger_intent_id": selected[0].intent.id,
                "reason": "matched_catalog_intents"
                if ready
                else "missing_required_slots",
            }
            intents = [_intent_body(c) for c in selected]
        else:
            if rejected:
                system, reason, confidence = SYS_NO_ACTION, "negated_command", 0.8
            elif any(c.reading.markers.question for c in mentioned):
                system, reason, confidence = SYS_FALLBACK, "question_about_device", 0.8
            else:
                system, reason, confidence = _classify(command)
            decision = {
                "action": "no_action"
                if system == SYS_NO_ACTION
                else "fallback_reasoning",
                "trigger_intent_id": system,
                "reason": reason,
            }
            intents = (
                [_system_body(system, command, reason, confidence)]
                + [_intent_body(c) for c in rejected]
                if emit
                else []
            )
        response: dict[str, Any] = {
            "request_id": req.request_id,
            "decision": decision,
            "intents": intents,
            "meta": {
                "latency_ms": round((time.perf_counter() - started) * 1000, 3),
                "segment_count": len(segments),
                "catalog_size": len(catalog.intents),
                "time_signals": sum(
                    len(r.durations) + len(r.time_points) for r in readings
                ),
                "timezone": req.timezone,
                "locale": locale,
                "now": req.now.isoformat(),
                "catalog_cached": cached,
            },
        }
        if ctx.warnings:
            response["meta"]["warnings"] = ctx.warnings
        if options["return_debug_candidates"]:
            response["debug_candidates"] = debug
        if options["return_debug_entities"]:
            response["debug_entities"] = [
                {
                    "segment_index": r.seg.index,
                    "entities": [
                        {
                            "type": e.type,
                            "value": e.value,
                            "text": e.text,
                            "start": e.start,
                            "end": e.end,
                        }
                        for e in r.entities
                    ],
                    "durations": [
                        {
                            "seconds": _json_number(d.seconds),
                            "relative": d.relative,
                            "start": d.start,
                            "end": d.end,
                        }
                        for d in r.durations
                    ],
                    "time_points": [
                        {"at": t.at.isoformat(), "start": t.start, "end": t.end}
                        for t in r.time_points
                    ],
                    "numbers": [
                        {"value": _json_number(v), "start": s, "end": e}
                        for v, s, e in r.numbers
                    ],
                }
                for r in readings
            ]
        return response
