r"""Untrusted input at Soul's boundaries: the one place that decides what may enter.

Everything from outside — MQTT payloads, HTTP bodies, WebSocket frames, action
data, config flows, model replies — passes through here before it reaches a
store, a registry or an entity:

- ``loads`` decodes JSON within a size, as strict UTF-8, refuses lone UTF-16
  surrogates (a valid JSON escape such as ``\\ud800`` that no store can
  serialise), an object whose names repeat, ``NaN`` and ``Infinity``
  (Python's, not JSON's), and nesting deeper than ``MAX_JSON_DEPTH``, and
  numbers Home Assistant cannot write back (an integer outside 64 bits, a
  number too large for a float: ``1e999``);
- ``text`` checks one string field: a string, within its documented length,
  free of lone surrogates and of control characters (a line allows none, free
  text allows tab and newlines);
- ``check_json`` does for an already decoded value (action data) what
  ``loads`` does for raw bytes;
- ``clean`` is for text Soul cannot refuse but must store or show (a model's
  reply, a body's description): bad characters become U+FFFD, and the text is
  cut to its length.

Every refusal is an ``UntrustedInputError`` whose message says what to fix
(fit for an HTTP 400, a Star ``VALIDATION_ERROR`` or one log line).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
import json
import math
import re
import sys
from typing import Any

import orjson

MAX_JSON_DEPTH = 32
# Objects and arrays in one input (counted on the raw text, before anything is
# built): bounds the depth check (~0.6 µs a container) and the garbage the
# collector must walk. A catalog of 256 intents has about 2,500.
MAX_JSON_CONTAINERS = 10_000
# JSON values an entry point that decodes large frames in a thread may accept,
# bounded by counting commas (those inside strings too): the C decoder holds
# the GIL, and so the event loop, while it builds them -- 65,536 small
# numbers or object members cost about 3-12 ms; a 1 MiB array of half a
# million integers 25 ms.
MAX_JSON_VALUES = 65_536
# Larger JSON is decoded in the executor by the callers (64 KiB of the worst
# shape costs the event loop about 9 ms), and so is JSON of more values than
# LOOP_JSON_VALUES (commas, about 0.25 ms of building): 64 KiB of 32,000 zeros
# took 2 ms, and a client's burst of 30 such Star frames slowed every other
# client's round trip to 30 ms (a black-box run).
LOOP_JSON_BYTES = 64 * 1024
LOOP_JSON_VALUES = 4096
# The integers Home Assistant's JSON writer (orjson) writes: a body's result
# holding 2**64 made every answer that carried it a 500 ("Integer exceeds
# 64-bit range"), and one body's snapshot broke the panel's body list for all.
MIN_JSON_INT = -(2**63)
MAX_JSON_INT = 2**64 - 1
# A JSON escape of a UTF-16 surrogate: only then can a decoded string hold a lone one.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
# What a one-line field (a name, an id, an option) may not contain: control
# characters (C0, DEL, C1), line and paragraph separators, the bidirectional
# marks, embeddings, overrides and isolates that make a name read as another
# ("a\u202eb" shows as "ab" reversed: a black-box run named a soul so), and
# the invisible characters (Unicode's default ignorables) that make two names
# look the same ("fr\u200biendly" passed for "friendly" in every soul list):
# soft hyphen, combining grapheme joiner, Hangul fillers, Khmer inherent
# vowels, the Mongolian vowel separator, zero-width space, word joiner and
# invisible operators, U+FEFF, U+FFF0-FFFB, shorthand format controls,
# musical formatting and tag characters. Kept, as words need them: the
# zero-width (non-)joiner (Persian, Indic scripts, emoji sequences) and
# variation selectors (emoji, CJK ideograph variants).
_BAD_IN_LINE = re.compile(
    "[\x00-\x1f\x7f-\x9f\xad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e"
    "\u200b\u200e\u200f\u2028-\u202e\u2060-\u206f\u3164\uffa0\ufeff"
    "\ufff0-\ufffb\ud800-\udfff\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0000-\U000e007f]"
)
# What free text (a chat message, a persona) may not contain: tab, LF, CR are fine.
_CONTROLS_IN_TEXT = r"\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff"
_BAD_IN_TEXT = re.compile(f"[{_CONTROLS_IN_TEXT}]")
# What free text Soul cannot refuse but shows (a model's reply, a body's
# description) loses as well: the bidirectional embeddings, overrides and
# isolates, which reorder what follows them ("\u202egnp.exe" shows as
# "exe.png" in Assist and the panel: black box, 2026-11-29). A user's own
# text keeps them (it may quote right-to-left text, and shows to that user
# and administrators); the marks (LRM, RLM, ALM) stay, as they reorder
# nothing.
_BAD_IN_SHOWN_TEXT = re.compile(f"[{_CONTROLS_IN_TEXT}\u202a-\u202e\u2066-\u2069]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
# The bidirectional controls that open or close a run, and what ends a
# paragraph (which closes every run): ``bidi_balanced``.
_BIDI_RUNS = re.compile("[\u202a-\u202e\u2066-\u2069\n\r\x1c-\x1e\x85\u2029]")
_ISOLATES = "\u2066\u2067\u2068"  # LRI, RLI, FSI: closed by PDI (U+2069)
_PDF, _PDI = "\u202c", "\u2069"
MAX_BIDI_RUNS = 16  # runs a text opens; later openers are dropped


class UntrustedInputError(ValueError):
    """Input Soul refuses; ``str()`` says what is wrong."""


def _describe(char: str) -> str:
    code = ord(char)
    if 0xD800 <= code <= 0xDFFF:
        return f"a lone UTF-16 surrogate (U+{code:04X})"
    if code < 0x20 or 0x7F <= code <= 0x9F:
        return f"the control character U+{code:04X}"
    return f"the invisible formatting character U+{code:04X}"


def text(
    value: Any,
    what: str,
    *,
    max_length: int,
    multiline: bool = False,
    required: bool = True,
) -> str:
    """Return ``value`` when it is acceptable text for the field ``what``; else raise.

    A line (``multiline=False``) may hold no control character at all; free
    text may hold tab, line feed and carriage return. ``required`` refuses an
    empty or blank string.
    """
    if not isinstance(value, str):
        raise UntrustedInputError(f"{what} must be a string")
    if len(value) > max_length:
        raise UntrustedInputError(f"{what} must be at most {max_length} characters")
    if (bad := (_BAD_IN_TEXT if multiline else _BAD_IN_LINE).search(value)) is not None:
        raise UntrustedInputError(f"{what} contains {_describe(bad.group())}")
    if required and not value.strip():
        raise UntrustedInputError(f"{what} must not be empty")
    return value


def optional_text(
    value: Any, what: str, *, max_length: int, multiline: bool = False
) -> str | None:
    """Return ``None`` for a missing or empty value, else ``text(value, …)``."""
    if value is None or value == "":
        return None
    return text(value, what, max_length=max_length, multiline=multiline)


def decodes_on_loop(raw: bytes | bytearray | str) -> bool:
    """Return whether ``loads`` of ``raw`` is cheap enough for the event loop.

    At most ``LOOP_JSON_BYTES`` and ``LOOP_JSON_VALUES`` commas; callers decode
    anything larger in the executor.
    """
    if len(raw) > LOOP_JSON_BYTES:
        return False
    commas = raw.count(",") if isinstance(raw, str) else raw.count(b",")
    return commas <= LOOP_JSON_VALUES


def is_text(value: Any, max_length: int) -> bool:
    """Return whether ``value`` would pass ``text`` as a non-empty line."""
    return (
        isinstance(value, str)
        and 0 < len(value) <= max_length
        and _BAD_IN_LINE.search(value) is None
    )


def shortened(value: str, limit: int) -> str:
    """Return ``value`` cut to ``limit`` characters, an ellipsis ending a cut one."""
    return value if len(value) <= limit else value[: limit - 1] + "…"


def clean(
    value: Any, max_length: int, *, multiline: bool = True, users_own: bool = False
) -> str:
    """Return ``value`` as storable text: bad characters replaced, cut to length.

    In free text (``multiline``) the bidirectional embeddings, overrides and
    isolates are bad characters too (``_BAD_IN_SHOWN_TEXT``), unless it is a
    user's own text (``users_own``: a stored chat turn of theirs), which
    ``text`` accepted with them, closed where they began (``bidi_balanced``,
    within ``max_length``).
    """
    if not isinstance(value, str):
        value = "" if value is None else str(value)
    value = value[:max_length]
    if not multiline:
        return _BAD_IN_LINE.sub("\ufffd", value)
    if users_own:
        return bidi_balanced(_BAD_IN_TEXT.sub("\ufffd", value), max_length)
    return _BAD_IN_SHOWN_TEXT.sub("\ufffd", value)


def bidi_balanced(value: str, max_length: int | None = None) -> str:
    """Return ``value`` with its bidirectional runs closed where they began.

    A user's own text keeps its embeddings, overrides and isolates (``clean``),
    but shown inside a page's isolated element, a closer it never opened
    closes the page's ("a\u2069\u202eb" reversed the panel's label after
    the user's words: black box, 2026-11-29), and a run it leaves open
    reaches into the words after it (a summary joins turns). Closers
    without an opener are dropped, and every run still open is closed
    before the paragraph ends, as Unicode's algorithm would close them at
    the end of the paragraph: the text reads the same on its own. A text
    opens at most ``MAX_BIDI_RUNS`` runs (so at most as many closers are
    added); later openers are dropped. With ``max_length`` the result is at
    most that long: when the closers would pass it, the text is cut first.
    """
    if _BIDI_RUNS.search(value) is None:
        return value
    balanced = _balanced(value)
    if max_length is not None and len(balanced) > max_length:
        return _balanced(value[: max(0, max_length - MAX_BIDI_RUNS)])
    return balanced


def _balanced(value: str) -> str:
    out: list[str] = []
    runs: list[str] = []  # openers, innermost last
    opened = 0
    at = 0
    for match in _BIDI_RUNS.finditer(value):
        char = match.group()
        out.append(value[at : match.start()])
        at = match.end()
        if char == _PDF:
            if not runs or runs[-1] in _ISOLATES:
                continue  # nothing of its own to close
            runs.pop()
        elif char == _PDI:
            if not any(run in _ISOLATES for run in runs):
                continue
            while runs.pop() not in _ISOLATES:
                pass  # a PDI closes the runs opened inside its isolate too
        elif char in _ISOLATES or "\u202a" <= char <= "\u202e":
            if opened == MAX_BIDI_RUNS:
                continue
            opened += 1
            runs.append(char)
        else:  # a paragraph ends: its runs end before it
            out.extend(_closer(run) for run in reversed(runs))
            runs.clear()
        out.append(char)
    out.append(value[at:])
    out.extend(_closer(run) for run in reversed(runs))
    return "".join(out)


def _closer(opener: str) -> str:
    return _PDI if opener in _ISOLATES else _PDF


def _too_deep(value: Any, max_depth: int) -> bool:
    """Return whether ``value`` nests containers deeper than ``max_depth``.

    Level by level and without recursion; a level's members are typed in C, so
    a flat array of half a million numbers costs well under a millisecond.
    """
    level = [value] if isinstance(value, dict | list) else []
    depth = 0
    while level:
        depth += 1
        if depth > max_depth:
            return True
        following: list[Any] = []
        for container in level:
            members = container.values() if isinstance(container, dict) else container
            kinds = set(map(type, members))
            if dict in kinds or list in kinds:
                following.extend(m for m in members if isinstance(m, dict | list))
        level = following
    return False


def _has_surrogate(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _repaired(value: Any) -> Any:
    """Return ``value`` with every lone surrogate (keys too) replaced by U+FFFD."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_repaired(item) for item in value]
    if isinstance(value, dict):
        return {_repaired(key): _repaired(item) for key, item in value.items()}
    return value


def _odd_numbers(decoded: str, value: Any) -> bool:
    """Whether ``value`` may hold an integer outside 64 bits or a float that is not finite.

    In C, a fraction of the decoding's time: orjson refuses such an integer
    and writes such a float as ``null``, so more nulls than the text has mean
    one (or a null the text escaped: the walk that follows finds none).
    """
    try:
        written = orjson.dumps(value)
    except orjson.JSONEncodeError:
        return True
    return written.count(b"null") != decoded.count("null")


def _bounded_numbers(value: Any, what: str, *, repair: bool) -> Any:
    """Return ``value`` whose numbers Home Assistant can write; else refuse it.

    ``repair``: an integer outside 64 bits becomes the nearest finite float,
    and a float that is not finite stays (as NaN and Infinity do).
    """
    kind = type(value)
    if kind is int:
        if MIN_JSON_INT <= value <= MAX_JSON_INT:
            return value
        if not repair:
            raise UntrustedInputError(f"{what} has an integer outside 64 bits")
        try:
            return float(value)
        except OverflowError:  # past the floats: the largest
            return sys.float_info.max if value > 0 else -sys.float_info.max
    if kind is float:
        if repair or math.isfinite(value):
            return value
        raise UntrustedInputError(f"{what} has a number too large for a float")
    if kind is list:
        return [_bounded_numbers(item, what, repair=repair) for item in value]
    if kind is dict:
        return {
            name: _bounded_numbers(item, what, repair=repair)
            for name, item in value.items()
        }
    return value


def _one_each(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """Return an object's members as a dict; refuse a name that comes twice.

    RFC 8259 leaves an object with a repeated name to each reader ("the
    behavior ... is unpredictable"): a gateway that reads the first
    ``terminal_id`` and Soul reading the last would not agree on the sender.
    """
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for name, _member in pairs:  # pragma: no branch - a name repeats
            if name in seen:
                shown = name if len(name) <= 40 else name[:40] + "…"
                raise ValueError(f"the name {shown!r} comes twice in one object")
            seen.add(name)
    return value


def _no_constant(name: str) -> Any:
    """Refuse ``NaN``, ``Infinity`` and ``-Infinity``: Python writes them, JSON has none.

    A Star client relayed them to others, whose ``JSON.parse`` fails on them.
    """
    raise ValueError(f"{name} is not a JSON number")


# The C scanners ``json.loads`` runs, without ``JSONDecoder.decode``'s two
# whitespace searches around them (half of a small envelope's decoding; set
# by ``JSONDecoder.__init__``, which typeshed does not declare): one refuses
# an object whose names repeat and NaN or Infinity, the other (for text Soul
# cannot refuse, ``repair``) takes them as ``json.loads`` does (the last of
# the names wins).
_STRICT_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder(
    object_pairs_hook=_one_each, parse_constant=_no_constant
).scan_once  # type: ignore[attr-defined]
_LENIENT_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _decode(text: str, *, repair: bool) -> Any:
    """Return ``json.loads(text)`` (strict: names unique): the same value, or error."""
    try:
        value, end = (_LENIENT_SCAN if repair else _STRICT_SCAN)(text, 0)
    except StopIteration:  # leading whitespace, a BOM, nothing: json.loads says
        value, end = None, -1
    if end == len(text) or (end >= 0 and not text[end:].strip(" \t\n\r")):
        return value
    # json.loads' own error (extra data, a BOM), or its value after whitespace
    if repair:
        return json.loads(text)
    return json.loads(text, object_pairs_hook=_one_each, parse_constant=_no_constant)


def loads(
    raw: bytes | bytearray | str,
    *,
    max_bytes: int,
    max_depth: int = MAX_JSON_DEPTH,
    max_containers: int = MAX_JSON_CONTAINERS,
    max_values: int | None = None,
    what: str = "the payload",
    repair: bool = False,
    bound_numbers: bool = True,
) -> Any:
    """Decode JSON from an untrusted source; raise ``UntrustedInputError``.

    ``repair``: lone surrogates become U+FFFD instead of refusing the input,
    of an object's repeated names the last wins, and NaN and Infinity are
    numbers (for text Soul cannot refuse, such as a model's reply); otherwise
    a repeated name, NaN and Infinity are refused.

    Bytes must be UTF-8 (no overlong forms, no encoded surrogates); the size
    counts bytes. No string of the result holds a lone surrogate, no
    container nests deeper than ``max_depth``, and at most ``max_containers``
    objects and arrays are built (brackets are counted before decoding, those
    inside strings included). With ``max_values``, at most that many commas
    (an upper bound of the values, less one per container) may appear.
    Every integer is within 64 bits and every float finite (``repair``: an
    integer outside becomes a float). ``bound_numbers=False`` leaves that to
    the caller, who cuts the value first (``repair_numbers``).
    """
    if isinstance(raw, str):
        if len(raw) > max_bytes or (
            len(raw) * 3 > max_bytes
            and len(raw.encode("utf-8", "surrogatepass")) > max_bytes
        ):
            raise UntrustedInputError(f"{what} is larger than {max_bytes} bytes")
        decoded = raw
    else:
        if len(raw) > max_bytes:
            raise UntrustedInputError(f"{what} is larger than {max_bytes} bytes")
        try:
            decoded = bytes(raw).decode("utf-8")
        except UnicodeDecodeError:
            raise UntrustedInputError(f"{what} is not valid UTF-8") from None
    brackets = decoded.count("[") + decoded.count("{")
    if brackets > max_containers:
        raise UntrustedInputError(
            f"{what} has more than {max_containers} objects and arrays"
        )
    if max_values is not None and decoded.count(",") > max_values:
        raise UntrustedInputError(f"{what} has more than {max_values} values (commas)")
    try:
        value = _decode(decoded, repair=repair)
    except RecursionError:
        raise UntrustedInputError(
            f"{what} nests deeper than {max_depth} levels"
        ) from None
    except ValueError as err:
        if "int_max_str_digits" in str(err):  # Python's guard against slow ints
            raise UntrustedInputError(
                f"{what} has a number of more than {sys.get_int_max_str_digits()} "
                "digits"
            ) from None
        raise UntrustedInputError(f"{what} is not valid JSON: {err}") from None
    if brackets > max_depth and _too_deep(value, max_depth):
        raise UntrustedInputError(f"{what} nests deeper than {max_depth} levels")
    # The scans only where they can match (a "\u" escape; a character that
    # is not ASCII): every MQTT payload, HTTP body and Star frame comes here.
    if (
        ("\\u" in decoded and _SURROGATE_ESCAPE.search(decoded))
        or (not decoded.isascii() and _SURROGATE.search(decoded))
    ) and _has_surrogate(value):
        if not repair:
            raise UntrustedInputError(f"{what} contains a lone UTF-16 surrogate")
        value = _repaired(value)
    if bound_numbers:
        if repair:  # only an integer to repair: a float stays, as NaN does
            value = repair_numbers(value)
        elif _odd_numbers(decoded, value):
            value = _bounded_numbers(value, what, repair=False)
    return value


def repair_numbers(value: Any) -> Any:
    """Return ``value`` with each integer outside 64 bits the nearest finite float.

    What ``loads(..., repair=True)`` does to numbers, for a value decoded with
    ``bound_numbers=False`` and cut since: an MCP server's result of 8,191
    parts is checked after it is cut to its first 1,024 (the whole message
    took 1.5-2.5 ms more, over the 20 ms of hostile class 10b).
    """
    try:
        orjson.dumps(value)
    except orjson.JSONEncodeError:
        return _bounded_numbers(value, "the value", repair=True)
    return value


async def loads_off_loop(
    raw: bytes | bytearray | str,
    run_blocking: Callable[[Callable[[], Any]], Awaitable[Any]],
    *,
    max_bytes: int,
    max_containers: int = MAX_JSON_CONTAINERS,
    what: str = "the payload",
    repair: bool = False,
) -> Any:
    """Return ``loads`` of ``raw``, through ``run_blocking`` unless ``decodes_on_loop``.

    Even in a thread the C decoder holds the GIL while it builds the values,
    and so the event loop (512 KiB of zeros held it 11-22 ms, 2 MiB 55 ms):
    at most ``MAX_JSON_VALUES`` commas.
    """
    decode = partial(
        loads,
        raw,
        max_bytes=max_bytes,
        max_containers=max_containers,
        max_values=MAX_JSON_VALUES,
        what=what,
        repair=repair,
    )
    return decode() if decodes_on_loop(raw) else await run_blocking(decode)


def check_json[V](
    value: V,
    *,
    max_bytes: int,
    max_depth: int = MAX_JSON_DEPTH,
    what: str = "the value",
) -> V:
    """Check a decoded value as ``loads`` checks raw JSON; return it unchanged.

    It must be plain JSON (objects with string keys, arrays, strings, finite
    numbers, integers within 64 bits, booleans, null) within ``max_bytes`` of
    UTF-8 and ``max_depth``.
    """
    try:  # the size first: one C pass, before any walk in Python
        encoded = json.dumps(value, ensure_ascii=False, allow_nan=False).encode()
    except UnicodeEncodeError:
        raise UntrustedInputError(f"{what} contains a lone UTF-16 surrogate") from None
    except (TypeError, ValueError, RecursionError):
        raise UntrustedInputError(f"{what} must be plain JSON") from None
    if len(encoded) > max_bytes:
        raise UntrustedInputError(f"{what} is larger than {max_bytes} bytes")
    try:  # what json.dumps writes and Home Assistant's writer does not
        orjson.dumps(value)
    except orjson.JSONEncodeError:
        raise UntrustedInputError(
            f"{what} must be plain JSON (names are strings, integers within 64 bits)"
        ) from None
    if encoded.count(b"[") + encoded.count(b"{") > MAX_JSON_CONTAINERS:
        raise UntrustedInputError(
            f"{what} has more than {MAX_JSON_CONTAINERS} objects and arrays"
        )
    if _too_deep(value, max_depth):
        raise UntrustedInputError(f"{what} nests deeper than {max_depth} levels")
    return value


def clean_json(value: Any) -> Any:
    """Return a decoded JSON value whose strings, names too, are clean free text.

    What ``clean`` does to free text, at any depth and without cutting: a
    control character other than tab, line feed and carriage return, and a
    bidirectional embedding, override or isolate, becomes U+FFFD. For a
    value Soul passes on rather than refuses (a body's result ``output``);
    its size and depth are its decoder's (``loads``).
    """
    if isinstance(value, str):
        return (
            _BAD_IN_SHOWN_TEXT.sub("\ufffd", value)
            if _BAD_IN_SHOWN_TEXT.search(value)
            else value
        )
    if isinstance(value, list):
        return [clean_json(item) for item in value]
    if isinstance(value, dict):
        return {clean_json(name): clean_json(item) for name, item in value.items()}
    return value
