"""Events as the journal's rows and back (``journal.SqliteJournal``'s encoding).

An event becomes plain, storable text in the writer thread: ids cut to
``MAX_ID_CHARS`` and cleaned of lone surrogates, payload and psyche state as
compact UTF-8 JSON (orjson; keys that are not strings, lone surrogates, cycles
and deep nesting take a slow path that makes them plain; NaN and infinities
are stored as null; values JSON cannot hold as their ``str``; more than
``MAX_PAYLOAD_BYTES`` is stored as a truncated preview), and a timestamp that
is a finite float (the clock's otherwise). ``row_to_dict`` reads a row back in
the spec's shape; ``stored_form`` is what reading an event back would give.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
import json
import math
import re
import time
from typing import Any, Final

import orjson

from .events import Event

# A payload or psyche state larger than this (UTF-8 JSON) is stored truncated.
MAX_PAYLOAD_BYTES: Final = 64 * 1024
PREVIEW_BYTES: Final = 1024
# Text columns (ids, type, source) are cut to this many characters.
MAX_ID_CHARS: Final = 256
MAX_DEPTH: Final = 32

_SURROGATE = re.compile(r"[\ud800-\udfff]")

# trace_id, type, source, soul_id, session_id, terminal_id, timestamp,
# payload, psyche_state, user_id: the columns ``journal_sql.INSERT`` names.
type Row = tuple[
    str,
    str,
    str,
    str | None,
    str | None,
    str | None,
    float,
    str,
    str | None,
    str | None,
]


def encode_row(event: Event, clock: Callable[[], float]) -> Row:
    """Return ``event`` as a row of storable text (writer thread)."""
    timestamp = event.timestamp
    if type(timestamp) is not float or not math.isfinite(timestamp):
        timestamp = _finite_timestamp(timestamp, clock)
    psyche = event.psyche_state
    return (
        _id_text(event.trace_id) or "",
        _id_text(event.type) or "",
        _id_text(event.source) or "",
        _id_text(event.soul_id),
        _id_text(event.session_id),
        _id_text(event.terminal_id),
        timestamp,
        _json_text(event.payload),
        None if psyche is None else _json_text(psyche),
        _id_text(event.user_id),
    )


def _finite_timestamp(value: object, clock: Callable[[], float]) -> float:
    """Return ``value`` as a finite float, or the clock's time."""
    try:
        timestamp = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return clock()
    return timestamp if math.isfinite(timestamp) else clock()


def _id_text(value: object) -> str | None:
    """Return an id column's text: a plain string, clean, at most ``MAX_ID_CHARS``."""
    if type(value) is str:
        text = value
    elif value is None:
        return None
    else:
        text = _safe_str(value)
    if len(text) <= MAX_ID_CHARS and text.isascii():
        return text
    return _SURROGATE.sub("\ufffd", text[:MAX_ID_CHARS])


def _json_text(value: object) -> str:
    """Return ``value`` as JSON text fit for the database (see the module doc)."""
    if type(value) is not dict and isinstance(value, Mapping):
        value = dict(value)
    try:
        data = orjson.dumps(value, default=_safe_str, option=_ORJSON_OPTIONS)
    except (TypeError, ValueError, RecursionError):
        # Keys that are not strings, lone surrogates, cycles, deep nesting,
        # integers past 64 bits: the slow path.
        data = _slow_json(value)
    else:
        if data.count(b"{") + data.count(b"[") > MAX_DEPTH:
            # Possibly nested deeper than MAX_DEPTH (brackets inside strings
            # count too): the slow path bounds the depth.
            data = _slow_json(value)
    if len(data) > MAX_PAYLOAD_BYTES:
        preview = data[:PREVIEW_BYTES].decode(errors="ignore")
        data = orjson.dumps({"truncated": True, "bytes": len(data), "preview": preview})
    return data.decode()


def _slow_json(value: object) -> bytes:
    """Return ``value`` made plain (``_plain``) as UTF-8 JSON, surrogates replaced."""
    text = _ENCODER.encode(_plain(value, 0))
    try:
        return text.encode()
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text).encode()


def _plain(value: object, depth: int) -> Any:
    """Return ``value`` as plain JSON data: str keys, finite numbers, bounded depth."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if depth >= MAX_DEPTH:
        return _safe_str(value)[:PREVIEW_BYTES]
    if isinstance(value, Mapping):
        return {_safe_str(key): _plain(item, depth + 1) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item, depth + 1) for item in value]
    return _safe_str(value)


def _safe_str(value: object) -> str:
    """Return ``str(value)``, or a placeholder when even that fails."""
    if isinstance(value, str):
        return value
    try:
        return str(value)
    except Exception:  # noqa: BLE001 - a hostile __str__ must not stop the writer
        return f"<unprintable {type(value).__name__}>"


# The slow path's encoder (``_plain`` has made the value plain already).
_ENCODER: Final = json.JSONEncoder(
    ensure_ascii=False, allow_nan=False, separators=(",", ":"), default=_safe_str
)
# orjson (Home Assistant's own JSON library) for the common case: a third of
# the json module's time, the same compact text. Dates and dataclasses go
# through ``default`` (``str``) as the slow path gives them; non-finite
# numbers become null, as in Home Assistant's JSON.
_ORJSON_OPTIONS: Final = (
    orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
)


def stored_form(event: Event) -> dict[str, Any]:
    """Return ``event`` as a read of the journal gives it back, without an ``id``.

    Cleaned as stored (module docstring): fit for any JSON encoder, for the
    live stream of an event whose payload JSON cannot hold.
    """
    stored = row_to_dict((None, *encode_row(event, time.time)[:9]))
    del stored["id"]
    return stored


def _decode(text: object) -> Any:
    """Return stored JSON text as the object Soul wrote, else a preview of it.

    A row may have been damaged or edited (a fuzz of the journal's rows,
    2026-11-29): what is not a JSON object that Home Assistant's writer
    takes (orjson: integers within 64 bits, no lone surrogate, 255 levels
    at most) would have failed every page holding it with a 500.
    """
    if text is None:
        return None
    if isinstance(text, str):
        try:
            value = orjson.loads(text)
            orjson.dumps(value)
        except (orjson.JSONDecodeError, orjson.JSONEncodeError):
            pass
        else:
            if type(value) is dict:
                return value
    return {"undecodable": True, "preview": _shown(text, PREVIEW_BYTES) or ""}


def _shown(value: object, limit: int = MAX_ID_CHARS) -> str | None:
    """Return a text column as read: a string, at most ``limit`` characters."""
    if isinstance(value, str):
        return value[:limit]
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return None  # a blob: no writer of Soul's stores one


def _time(value: object) -> float | None:
    """Return a stored timestamp as a finite float, or None."""
    if type(value) is float:
        return value if math.isfinite(value) else None
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return None


def row_to_dict(row: tuple[Any, ...]) -> dict[str, Any]:
    """Return a stored row in ``Event.as_dict()``'s shape plus its ``id``."""
    (
        event_id,
        trace_id,
        type_,
        source,
        soul_id,
        session_id,
        terminal_id,
        timestamp,
        payload,
        psyche_state,
    ) = row
    return {
        "id": event_id,
        "trace_id": _shown(trace_id),
        "type": _shown(type_),
        "source": _shown(source),
        "payload": _decode(payload),
        "meta": {"timestamp": _time(timestamp), "psyche_state": _decode(psyche_state)},
        "soul_id": _shown(soul_id),
        "session_id": _shown(session_id),
        "terminal_id": _shown(terminal_id),
    }
