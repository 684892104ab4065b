"""Events as the journal's rows and back (``journal.SqliteJournal``'s encoding).

An event becomes plain, storable text in the writer thread: ids cut to
``MAX_ID_CHARS`` and cleaned of lone surrogates, payload and psyche state as
JSON (``ensure_ascii=False``; keys that are not strings, NaN, cycles and deep
nesting take a slow path that makes them plain; more than
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
    try:
        timestamp = float(event.timestamp)
    except (TypeError, ValueError):
        timestamp = clock()
    if not math.isfinite(timestamp):
        timestamp = clock()
    return (
        _id_text(event.trace_id) or "",
        _id_text(event.type) or "",
        _id_text(event.source) or "",
        _id_text(event.soul_id),
        _id_text(event.session_id),
        _id_text(event.terminal_id),
        timestamp,
        _json_text(event.payload),
        None if event.psyche_state is None else _json_text(event.psyche_state),
        _id_text(event.user_id),
    )


def _id_text(value: object) -> str | None:
    """Return an id column's text: a plain string, clean, at most ``MAX_ID_CHARS``."""
    if value is None:
        return None
    text = value if type(value) is str else _safe_str(value)
    if len(text) <= MAX_ID_CHARS and text.isascii():
        return text
    return _SURROGATE.sub("\ufffd", text[:MAX_ID_CHARS])


def _json_text(value: object) -> str:
    """Return ``value`` as JSON text fit for the database (see the module doc)."""
    if type(value) is not dict and isinstance(value, Mapping):
        value = dict(value)
    try:
        text = _ENCODER.encode(value) if _C_ENCODE is None else _C_ENCODE(value)
    except (TypeError, ValueError, RecursionError):
        # Keys that are not strings, NaN, cycles, deep nesting: the slow path.
        text = _ENCODER.encode(_plain(value, 0))
    else:
        if text.count("{") + text.count("[") > MAX_DEPTH:
            # Possibly nested deeper than MAX_DEPTH (brackets inside strings
            # count too): the slow path bounds the depth.
            text = _ENCODER.encode(_plain(value, 0))
    # ASCII (most psyche states): no surrogate, one byte a character.
    if text.isascii() and len(text) <= MAX_PAYLOAD_BYTES:
        return text
    try:
        data = text.encode()
    except UnicodeEncodeError:
        text = _SURROGATE.sub("\ufffd", text)
        data = text.encode()
    if len(data) > MAX_PAYLOAD_BYTES:
        preview = data[:PREVIEW_BYTES].decode(errors="ignore")
        text = json.dumps(
            {"truncated": True, "bytes": len(data), "preview": preview},
            ensure_ascii=False,
        )
    return text


def _plain(value: object, depth: int) -> Any:
    """Return ``value`` as plain JSON data: str keys, finite numbers, bounded depth."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
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


# One encoder for every payload (``json.dumps`` with options builds one a call).
_ENCODER: Final = json.JSONEncoder(
    ensure_ascii=False, allow_nan=False, separators=(",", ":"), default=_safe_str
)
# The C encoder _ENCODER uses, made once: ``JSONEncoder.encode`` builds it anew
# for every call, which costs more than encoding an event's small dicts. No
# circular check (``markers``): a cycle ends in RecursionError, and the slow
# path (``_plain``) handles it as before.


def _c_encoder() -> Callable[[object], str] | None:
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - CPython has it
        return None
    encode = make(
        None, _safe_str, json.encoder.encode_basestring, None, ":", ",",
        False, False, False,
    )  # fmt: skip

    def c_encode(value: object) -> str:
        return "".join(encode(value, 0))

    return c_encode


_C_ENCODE: Final = _c_encoder()


def stored_form(event: Event) -> dict[str, Any]:
    """Return ``event`` as a read of the journal gives it back, without an ``id``.

    Cleaned as stored (module docstring): fit for any JSON encoder, for the
    live stream of an event whose payload JSON cannot hold.
    """
    stored = row_to_dict((None, *encode_row(event, time.time)[:9]))
    del stored["id"]
    return stored


def _decode(text: str | None) -> Any:
    """Return stored JSON text as data (a damaged value as a preview)."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return {"undecodable": True, "preview": str(text)[:PREVIEW_BYTES]}


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
        "trace_id": trace_id,
        "type": type_,
        "source": source,
        "payload": _decode(payload),
        "meta": {"timestamp": timestamp, "psyche_state": _decode(psyche_state)},
        "soul_id": soul_id,
        "session_id": session_id,
        "terminal_id": terminal_id,
    }
