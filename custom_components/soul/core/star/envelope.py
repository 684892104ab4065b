"""The Star Protocol's envelopes as the hub reads and writes them: no routing here.

The spec's vocabulary (party and envelope types, error codes, close codes,
limits), ids (``valid_id``), a connection's ``Identity``, decoding an
untrusted frame (``decode_frame``: size, depth, values and lone surrogates
are ``untrusted.loads``'s checks), validating an envelope (``well_formed``,
the quick check of the usual case, and ``problems``, the full one that
names every problem), and the hub's own envelopes (``heartbeat_text``,
``error_text``).
"""

from __future__ import annotations

from dataclasses import dataclass
import json
import re
import time
from typing import Any

from .. import untrusted
from ..protocol import utc_ts

HUB_ID = "hub"
CLIENT_TYPES = ("agent", "environment", "human")
PARTY_TYPES = (*CLIENT_TYPES, HUB_ID)  # what sender.type and recipient.type may be
ENVELOPE_TYPES = ("heartbeat", "message", "error")
ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{2,49}")
MAX_MESSAGE_BYTES = 1024 * 1024
MAX_JSON_DEPTH = 32
MAX_BATCH = 100  # envelopes in one batch frame: an agent's whole burst
CLOSE_GOING_AWAY = 1001
CLOSE_POLICY = 1008
CLOSE_TOO_BIG = 1009
CLOSE_TRY_LATER = 1013

VALIDATION_ERROR = "VALIDATION_ERROR"
PERMISSION_DENIED = "PERMISSION_DENIED"
RECIPIENT_NOT_FOUND = "RECIPIENT_NOT_FOUND"
RATE_LIMITED = "RATE_LIMITED"
MESSAGE_TOO_LARGE = "MESSAGE_TOO_LARGE"
INVALID_CLIENT_TYPE = "INVALID_CLIENT_TYPE"
CONNECTION_FAILED = "CONNECTION_FAILED"


# Ids already found valid: the same few ids come in every envelope.
_VALID_IDS: set[str] = set()
_VALID_IDS_KEPT = 4096


def valid_id(value: Any) -> bool:
    """Return whether ``value`` is a 3–50 character id of the safe alphabet."""
    if type(value) is not str:
        return isinstance(value, str) and ID_RE.fullmatch(value) is not None
    if value in _VALID_IDS:
        return True
    if ID_RE.fullmatch(value) is None:
        return False
    if len(_VALID_IDS) >= _VALID_IDS_KEPT:
        _VALID_IDS.clear()
    _VALID_IDS.add(value)
    return True


@dataclass(frozen=True, slots=True)
class Identity:
    """Who a connection is: its type, id and environment."""

    client_type: str
    client_id: str
    env_id: str | None  # None for humans (they may address any environment)

    def as_party(self) -> dict[str, str]:
        """Return the envelope's ``sender`` object for this identity."""
        return {"id": self.client_id, "type": self.client_type}

    def is_party(self, party: Any) -> bool:
        """Return whether ``party == self.as_party()``, without building it."""
        return (
            type(party) is dict
            and len(party) == 2
            and party.get("id") == self.client_id
            and party.get("type") == self.client_type
        )

    def is_valid_party(self) -> bool:
        """Return whether ``as_party()`` passes the envelope's sender checks."""
        return self.client_type in PARTY_TYPES and valid_id(self.client_id)


@dataclass(frozen=True, slots=True)
class Frame:
    """A decoded frame: ``decode_frame``'s result."""

    value: Any  # the JSON value, or the ``UntrustedInputError`` refusing it
    text: str  # the frame as text ("" when refused)
    # A batch's envelopes as JSON text ("" for an item that is no object), made
    # where the frame was decoded (a thread for large frames, not the loop).
    parts: tuple[str, ...] = ()


def loads(text: str, max_bytes: int) -> Any:
    """Decode a frame's text with the untrusted-JSON limits; raise ``UntrustedInputError``."""
    return untrusted.loads(
        text,
        max_bytes=max_bytes,
        max_depth=MAX_JSON_DEPTH,
        max_values=untrusted.MAX_JSON_VALUES,
    )


def decode_frame(raw: str | bytes, max_bytes: int) -> Frame:
    """Return the decoded frame; its ``value`` is the ``UntrustedInputError`` if refused.

    Thread-safe: the transport runs it off the event loop for large frames,
    and a batch's envelopes are serialized here too (they are forwarded one
    by one). Binary frames must be UTF-8 text, as text frames are.
    """
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        value = loads(text, max_bytes)
    except UnicodeDecodeError:
        return Frame(untrusted.UntrustedInputError("binary frame is not UTF-8"), "")
    except untrusted.UntrustedInputError as err:
        return Frame(err, "")
    return framed(value, text)


def framed(value: Any, text: str) -> Frame:
    """Return the ``Frame`` of a decoded value (a batch's parts serialized)."""
    if isinstance(value, list) and len(value) <= MAX_BATCH:
        parts = tuple(
            json.dumps(item, ensure_ascii=False) if isinstance(item, dict) else ""
            for item in value
        )
        return Frame(value, text, parts)
    return Frame(value, text)


_MISSING = object()


def well_formed(envelope: Any) -> bool:
    """Return whether ``problems`` finds none, cheaply (the usual case)."""
    if type(envelope) is not dict:
        return False
    get = envelope.get
    sender, recipient = get("sender"), get("recipient")
    return (
        type(sender) is dict
        and type(recipient) is dict
        and get("type") in ENVELOPE_TYPES
        and "payload" in envelope
        and sender.get("type", _MISSING) in PARTY_TYPES
        and recipient.get("type", _MISSING) in PARTY_TYPES
        and valid_id(sender.get("id"))
        and (recipient.get("id") == "*" or valid_id(recipient.get("id")))
        and type(get("timestamp", "")) is str
        and type(get("message_id", "")) is str
    )


def well_formed_from(envelope: dict[str, Any], party: dict[str, str]) -> bool:
    """Return whether ``envelope`` is well formed and its sender is ``party``.

    ``well_formed(envelope) and envelope["sender"] == party`` for a ``party``
    that passes the sender checks (``Identity.is_valid_party``): the sender
    is then compared, not validated.
    """
    get = envelope.get
    recipient = get("recipient")
    if not (
        get("sender") == party
        and type(recipient) is dict
        and get("type") in ENVELOPE_TYPES
        and "payload" in envelope
        and recipient.get("type", _MISSING) in PARTY_TYPES
        and type(get("timestamp", "")) is str
        and type(get("message_id", "")) is str
    ):
        return False
    recipient_id = recipient.get("id")
    if type(recipient_id) is str and recipient_id in _VALID_IDS:
        return True
    return recipient_id == "*" or valid_id(recipient_id)


def problems(envelope: Any) -> tuple[str, list[str]]:
    """Return the error code and the envelope's problems (none: it is valid).

    The code is ``INVALID_CLIENT_TYPE`` when a sender or recipient names a
    type that is not the spec's (its problems still list all the others),
    ``VALIDATION_ERROR`` otherwise.
    """
    if well_formed(envelope):
        return VALIDATION_ERROR, []
    if not isinstance(envelope, dict):
        return VALIDATION_ERROR, ["the message must be a JSON object"]
    code = VALIDATION_ERROR
    found = []
    if envelope.get("type") not in ENVELOPE_TYPES:
        found.append(f"type must be one of {', '.join(ENVELOPE_TYPES)}")
    for part in ("sender", "recipient"):
        party = envelope.get(part)
        if not isinstance(party, dict):
            found.append(f"{part} must be an object with id and type")
            continue
        if "type" not in party:
            found.append(f"{part}.type is required")
        elif party["type"] not in PARTY_TYPES:
            code = INVALID_CLIENT_TYPE
            found.append(f"{part}.type must be agent, environment, human or hub")
        if not (
            valid_id(party.get("id"))
            or (part == "recipient" and party.get("id") == "*")
        ):
            found.append(f"{part}.id must be 3-50 characters of A-Z a-z 0-9 _ . -")
    if "payload" not in envelope:
        found.append("payload is required")
    found.extend(
        f"{optional} must be a string"
        for optional in ("timestamp", "message_id")
        if optional in envelope and not isinstance(envelope[optional], str)
    )
    return code, found


def message_id(envelope: Any) -> str | None:
    """Return an envelope's ``message_id`` (or the spec example's ``id``), if any."""
    if not isinstance(envelope, dict):
        return None
    for key in ("message_id", "id"):
        if isinstance(value := envelope.get(key), str):
            return value
    return None


def utf8_size(text: str, limit: int) -> int:
    """Return the UTF-8 size of ``text`` (cheaply when it is clearly under ``limit``)."""
    if len(text) * 4 <= limit:
        return len(text)  # at most 4 bytes a character: under the limit anyway
    return len(text.encode("utf-8", "surrogatepass"))


def heartbeat_text(identity: Identity) -> str:
    """Return the hub's heartbeat to ``identity``, as sent."""
    return json.dumps(
        {
            "type": "heartbeat",
            "sender": {"id": HUB_ID, "type": HUB_ID},
            "recipient": identity.as_party(),
            "payload": {
                "timestamp": utc_ts(time.time()),
                "server_status": "running",
                "ping": "pong",
            },
        }
    )


def error_text(
    identity: Identity,
    code: str,
    message: str,
    original_message_id: str | None,
    validation_errors: list[str] | None = None,
    *,
    index: int | None = None,
    suggested: str | None = None,
) -> str:
    """Return the spec's error envelope to ``identity``, as sent."""
    details: dict[str, Any] = {"original_message_id": original_message_id}
    if validation_errors:
        details["validation_errors"] = validation_errors
    if suggested:
        details["suggested_action"] = suggested
    if index is not None:
        details["batch_index"] = index  # which envelope of the batch
    return json.dumps(
        {
            "type": "error",
            "sender": {"id": HUB_ID, "type": HUB_ID},
            "recipient": identity.as_party(),
            "payload": {"error_code": code, "message": message, "details": details},
            "timestamp": utc_ts(time.time()),
        },
        ensure_ascii=False,
    )
