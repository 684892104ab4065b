"""Slot filling: an intent's parameters from one clause.

A slot takes, in order, its pattern's capture, a time signal, a built-in entity
of its types, and what Soul understands by itself (``_implicit``); captured
text is normalised (value maps, numbers, durations, entities).
"""

from __future__ import annotations

from datetime import datetime, timedelta
import re
from typing import Any

from ..untrusted import MAX_JSON_INT, MIN_JSON_INT
from .durations import Duration
from .entries import Intent, Slot, fold
from .lexicon import Entity, find_entities, surfaces_of
from .numbers import parse_number
from .reading import Context, Reading
from .text import Variant
from .timepoints import TimePoint

_NUMERIC = re.compile(r"\s*[0-9０-９.]+\s*|[零〇一二两兩三四五六七八九十百千万点點半]+")


def json_number(value: float) -> int | float:
    """Return ``value`` as JSON shows it: an integer when whole, else 3 decimals.

    A whole number past 64 bits stays a float: Home Assistant cannot write
    such an integer ("音量调到" and thirty nines was a 500).
    """
    if float(value).is_integer():
        return int(value) if MIN_JSON_INT <= value <= MAX_JSON_INT else float(value)
    return round(value, 3)


def time_signals(reading: Reading) -> tuple[list[Duration], list[TimePoint]]:
    """Return the clause's durations and clock times, or those lent by a neighbour."""
    if reading.durations or reading.time_points or reading.borrowed is None:
        return reading.durations, reading.time_points
    return reading.borrowed.durations, reading.borrowed.time_points


def _seconds_for(
    slot: Slot, reading: Reading, now: datetime, command: str
) -> tuple[float, str] | None:
    """Pick the time signal a ``*_seconds`` slot means, as (seconds, text)."""
    durations, points = time_signals(reading)
    if slot.named.length:
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


def _time_value(slot: Slot, reading: Reading, ctx: Context) -> tuple[Any, str] | None:
    """Return the value of a slot bound with ``from_time_key`` / ``time_kind``.

    The clause's durations come first, then its clock times, as in the
    DesktopRobot filter: the first time signal of the slot's ``time_kind`` that
    has the key gives the value (a clock time has no ``duration_seconds``; a
    duration has no ``timezone``).
    """
    durations, points = time_signals(reading)
    key = slot.from_time_key or "seconds"
    now, command = ctx.request.now, ctx.request.command
    if slot.time_kind != "time_point" and durations and key != "timezone":
        d = durations[0]
        moment = now + timedelta(seconds=d.seconds)
        seconds: float = d.seconds
        kind, raw = "duration", command[d.start : d.end]
    elif slot.time_kind != "duration" and points and key != "duration_seconds":
        p = points[0]
        moment, seconds = p.at, p.seconds_from(now)
        kind, raw = "time_point", command[p.start : p.end]
    else:
        return None
    value: Any
    if key in ("text", "raw"):
        value = raw
    elif key == "kind":
        value = kind
    elif key == "timezone":
        value = ctx.request.timezone
    elif key in ("iso", "trigger_at"):
        value = moment.isoformat()
    elif key == "timestamp":
        value = moment.timestamp()
    else:  # seconds, seconds_from_now, duration_seconds
        value = seconds
    return (json_number(value) if isinstance(value, float) else value), raw


def _normalize_capture(
    ctx: Context,
    slot: Slot,
    raw: str,
    where: tuple[Reading, Variant, tuple[int, int]] | None = None,
) -> Any:
    """Normalise a captured text; ``where`` is the clause, variant and span it came from."""
    folded = fold(raw).strip()
    if folded in slot.value_map:
        return slot.value_map[folded]
    if slot.named.seconds:
        if where is not None:
            reading, variant, span = where
            for duration in ctx.durations(variant.text):
                if duration.start <= span[0] and span[1] <= duration.end:
                    return json_number(duration.seconds)
            # The clause's clock times, already read (in command coordinates).
            start, end = variant.span(*span)
            for point in reading.time_points:
                if point.start <= start and end <= point.end:
                    return json_number(point.seconds_from(ctx.request.now))
        inside = ctx.durations(folded)
        if inside and (value := parse_number(folded)) is None:
            return json_number(inside[0].seconds)
    if (
        _NUMERIC.fullmatch(folded)
        and (value := parse_number(folded.strip())) is not None
    ):
        return json_number(value)
    if (kind := slot.named.affinity) is not None:
        entities = find_entities(folded, ctx.locale)
        for entity in entities:
            if entity.type == kind:
                return entity.value
        if slot.named.mode and any(e.type == "color" for e in entities):
            return "set_color"
    return raw


def fill_slots(
    ctx: Context, intent: Intent, reading: Reading
) -> tuple[dict[str, Any], dict[str, Any], list[str], int]:
    """Fill ``intent``'s slots from a clause.

    Returns (parameters as said, normalized values, missing required slots,
    how many slots came from the clause's text).
    """
    parameters: dict[str, Any] = {}
    normalized: dict[str, Any] = {}
    missing: list[str] = []
    from_text = 0
    variants = reading.clause.variants
    for slot in intent.slots:
        if slot.inert:  # only its default or ``required`` count (most "skill"s)
            if slot.has_default:
                normalized[slot.name] = slot.default
            elif slot.required:
                missing.append(slot.name)
            continue
        value: Any = None
        raw: str | None = None
        found = False
        if slot.regex is not None:
            for variant in variants:
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
            and (timed := _time_value(slot, reading, ctx)) is not None
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
                value = json_number(number) if slot.use_normalized_entity else raw
                found = True
            if (
                not found
                and {"duration", "time_point", "time"} & set(slot.from_entity_types)
                and (timed := _time_value(slot, reading, ctx)) is not None
            ):
                value, raw = timed
                found = True
        if not found and slot.implicit:
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
    ctx: Context, intent: Intent, slot: Slot, entity: Entity
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
    ctx: Context, intent: Intent, slot: Slot, reading: Reading
) -> tuple[bool, Any, str | None]:
    """Fill a slot from what Soul understands by itself (time, entities, numbers)."""
    if slot.named.seconds:
        if (
            picked := _seconds_for(slot, reading, ctx.request.now, ctx.request.command)
        ) is not None:
            seconds, text = picked
            return True, json_number(seconds), text or None
        return False, None, None
    if (kind := slot.named.affinity) is not None:
        for entity in reading.entities:
            if entity.type == kind:
                return True, entity.value, entity.text
        if slot.named.mode and "color" in reading.types:
            return True, "set_color", None
    if slot.regex is not None and reading.entities:
        # Align what the user said with the catalog's own vocabulary: "nod" has
        # the surface "点头", which the slot's pattern accepts.
        alignments = ctx.catalog.alignments
        for entity in reading.entities:
            key = (slot.regex, ctx.locale, entity.type, str(entity.value))
            if key in alignments:
                aligned = alignments[key]
            else:
                incomplete = ctx.incomplete
                aligned = _align(ctx, intent, slot, entity)
                # Kept for every later command only when the pattern really
                # ran: one command that ran out of time must not leave a body
                # without its alignment.
                if ctx.incomplete == incomplete:
                    alignments[key] = aligned
            if aligned is not None:
                captured, _surface = aligned
                return (
                    True,
                    _normalize_capture(ctx, slot, captured),
                    entity.text,
                )
    if reading.numbers and slot.named.numbered:
        number, start, end = reading.numbers[0]
        return True, json_number(number), ctx.request.command[start:end]
    return False, None, None
