"""The Star Protocol hub's routing core, independent of any transport.

A transport (Home Assistant's HTTP server, or ``devtools.star_server``) accepts
a WebSocket, authenticates it, and calls ``StarHub.connect`` with the
connection's identity and two callbacks: ``send(text) -> bool`` (False when
its bounded queue is full) and ``close(code, reason)``. Every frame goes to
``receive``. The hub validates the envelope, checks that the sender is the
connection's own identity, routes by recipient type and id inside the
sender's environment (``"*"`` broadcasts to every client of that type there),
answers problems with the spec's error envelope, rate-limits each client, and
never parses ``payload`` beyond its size. ``tick`` sends heartbeats and
returns the connections silent for too long.

Interop (docs/star.md): a party whose ``type`` is not one of the spec's is
answered ``INVALID_CLIENT_TYPE``; a frame holding a JSON array is a batch
(the spec's "批量消息"): each of its at most ``MAX_BATCH`` envelopes is
validated, rate-limited and routed as if sent alone, and errors name the
envelope (``original_message_id``, ``batch_index``); ``receive_steps`` lets
the transport yield between them. At most ``max_connections`` remote clients
are connected at once; ``connect`` refuses one more with ``HubFullError``
(the transport answers ``CONNECTION_FAILED`` and closes with 1013), except
for a client taking over its own identity.

Identities (docs/security.md): a connection may carry the ``Principal`` of
its token. ``reserved`` identities (Soul's own agents) are refused to every
client; an identity connected by one user cannot be taken over by another;
a human id belongs to the first user who used it (``human_owners``, kept by
the glue across restarts). In-process agents (``connect_local``) get frames
as parsed envelopes with their sender, never time out and are not
rate-limited.

Fairness: a client's burst (``burst`` frames; environments twice that) fits
any receiver's send queue, so a burst within the limit never cuts an
actively reading receiver off; a client over its limit gets one
``RATE_LIMITED`` error per stretch of refused frames (not one per frame, so
its own queue does not fill with errors).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
import json
import re
import time
from typing import Any

from .. import untrusted
from ..access import Principal
from ..logs import trace_logger
from ..protocol import utc_ts

_LOGGER = trace_logger(__name__)

HUB_ID = "hub"
CLIENT_TYPES = ("agent", "environment", "human")
PARTY_TYPES = (*CLIENT_TYPES, HUB_ID)  # what sender.type and recipient.type may be
ENVELOPE_TYPES = ("heartbeat", "message", "error")
ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{2,49}")
MAX_MESSAGE_BYTES = 1024 * 1024
HEARTBEAT_INTERVAL = 30.0
IDLE_TIMEOUT = 60.0
DEFAULT_RATE = 200.0  # messages per second, sustained
DEFAULT_BURST = 100  # environments: twice; at most the transport's send queue
ENVIRONMENT_RATE_FACTOR = 10
ENVIRONMENT_BURST_FACTOR = 2
MAX_JSON_DEPTH = 32
MAX_BATCH = 100  # envelopes in one batch frame: an agent's whole burst
MAX_CONNECTIONS = 256  # remote clients at once (Home Assistant: about 2,048 files)
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


class IdentityError(PermissionError):
    """A connection may not take this identity; ``str()`` says why."""


class HubFullError(Exception):
    """The hub already serves ``max_connections`` clients; ``str()`` says so."""


@dataclass(frozen=True, slots=True)
class Frame:
    """A decoded frame: ``decode_frame``'s result."""

    value: Any  # the JSON value, or the ``UntrustedInputError`` refusing it
    text: str  # the frame as text ("" when refused)
    # A batch's envelopes as JSON text ("" for an item that is no object), made
    # where the frame was decoded (a thread for large frames, not the loop).
    parts: tuple[str, ...] = ()


type LocalHandler = Callable[[dict[str, Any], "Connection"], None]


@dataclass(eq=False)
class Connection:
    """One connected client, as the hub sees it."""

    identity: Identity
    send: Callable[[str], bool]
    close: Callable[[int, str], None]
    connected_at: float
    last_seen: float
    tokens: float = DEFAULT_BURST
    token_time: float = 0.0
    received: int = 0
    sent: int = 0
    closed: bool = False
    # Who connected it (None: a transport without Home Assistant users).
    principal: Principal | None = None
    # In-process agents get parsed envelopes here instead of ``send``.
    local: LocalHandler | None = None
    # Refusing its frames right now: one RATE_LIMITED error per stretch.
    limited: bool = False
    dropped: int = 0

    @property
    def user_id(self) -> str | None:
        """Return the Home Assistant user who connected it, if any."""
        return None if self.principal is None else self.principal.user_id


@dataclass
class HubStats:
    """Counters for sensors and diagnostics."""

    routed: int = 0
    errors: int = 0
    dropped_slow: int = 0
    refused_full: int = 0  # connections refused because the hub was full
    latencies: deque[float] = field(default_factory=lambda: deque(maxlen=1000))


class StarHub:
    """Routes envelopes between connections; see the module docstring."""

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
        rate: float = DEFAULT_RATE,
        burst: int = DEFAULT_BURST,
        idle_timeout: float = IDLE_TIMEOUT,
        max_connections: int = MAX_CONNECTIONS,
        reserved: Callable[[Identity], bool] = lambda _identity: False,
        on_owners_changed: Callable[[], None] = lambda: None,
    ) -> None:
        """Create an empty hub; ``reserved`` names identities no client may take.

        ``max_connections`` bounds the remote clients (in-process ones are
        not counted).
        """
        if max_connections < 1:
            raise ValueError("max_connections must be at least 1")
        self._clock = clock
        self.max_message_bytes = max_message_bytes
        self.rate = rate
        self.burst = burst
        self.idle_timeout = idle_timeout
        self.max_connections = max_connections
        self._full_logged = False
        self.reserved = reserved
        self._on_owners_changed = on_owners_changed
        self._by_key: dict[tuple[str | None, str, str], Connection] = {}
        # human id → the Home Assistant user it belongs to
        self.human_owners: dict[str, str] = {}
        self.stats = HubStats()
        self._listeners: list[Callable[[], None]] = []

    # -- connections ------------------------------------------------------------

    def subscribe(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener`` when a client connects or leaves."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def _changed(self) -> None:
        for listener in list(self._listeners):
            listener()

    @staticmethod
    def _key(identity: Identity) -> tuple[str | None, str, str]:
        return (identity.env_id, identity.client_type, identity.client_id)

    def check_identity(
        self, identity: Identity, principal: Principal | None = None
    ) -> None:
        """Raise ``IdentityError`` unless ``principal`` may connect as ``identity``."""
        if self.reserved(identity):
            raise IdentityError(
                f"{identity.client_type} {identity.client_id!r} is reserved for Soul"
            )
        user_id = None if principal is None else principal.user_id
        old = self._by_key.get(self._key(identity))
        if old is not None and not old.closed and old.user_id != user_id:
            raise IdentityError(
                f"{identity.client_type} {identity.client_id!r} is connected by "
                "another user"
            )
        owner = self.human_owners.get(identity.client_id)
        if identity.client_type == "human" and owner is not None and owner != user_id:
            raise IdentityError(f"human {identity.client_id!r} belongs to another user")

    def connect(
        self,
        identity: Identity,
        send: Callable[[str], bool],
        close: Callable[[int, str], None],
        *,
        principal: Principal | None = None,
    ) -> Connection:
        """Register a connection; the same user's earlier one is taken over.

        Raises ``IdentityError`` for a reserved identity, one connected by
        another user, or a human id that belongs to another user; and
        ``HubFullError`` when ``max_connections`` clients are connected
        (a takeover frees its place first, so it is never refused).
        """
        self.check_identity(identity, principal)
        self._check_room(identity)
        if (
            identity.client_type == "human"
            and principal is not None
            and principal.user_id is not None
            and identity.client_id not in self.human_owners
        ):
            self.human_owners[identity.client_id] = principal.user_id
            self._on_owners_changed()
        now = self._clock()
        connection = Connection(
            identity,
            send,
            close,
            now,
            now,
            tokens=self._burst_of(identity),
            token_time=now,
            principal=principal,
        )
        return self._register(connection)

    def _check_room(self, identity: Identity) -> None:
        old = self._by_key.get(self._key(identity))
        if old is not None and old.local is None:
            return  # a takeover: the old connection's place is the new one's
        remote = sum(1 for c in self._by_key.values() if c.local is None)
        if remote < self.max_connections:
            self._full_logged = False
            return
        self.stats.refused_full += 1
        if not self._full_logged:  # once per stretch of refusals
            self._full_logged = True
            _LOGGER.warning(
                "Star hub is full (%d clients); refusing new connections",
                self.max_connections,
            )
        raise HubFullError(
            f"the hub is full ({self.max_connections} clients connected);"
            " try again later"
        )

    def connect_local(self, identity: Identity, handler: LocalHandler) -> Connection:
        """Register an in-process client: ``handler(envelope, sender)`` gets its frames."""
        now = self._clock()
        connection = Connection(
            identity,
            lambda _text: True,
            lambda _code, _reason: None,
            now,
            now,
            local=handler,
        )
        return self._register(connection, greet=False)

    def send_local(self, connection: Connection, envelope: dict[str, Any]) -> None:
        """Route an envelope an in-process client sends (trusted: no checks)."""
        if connection.closed:
            return
        envelope = {**envelope, "sender": connection.identity.as_party()}
        self._route(
            connection,
            envelope,
            json.dumps(envelope, ensure_ascii=False),
            envelope.get("message_id"),
            self._clock(),
        )

    def _burst_of(self, identity: Identity) -> float:
        if identity.client_type == "environment":
            return float(self.burst * ENVIRONMENT_BURST_FACTOR)
        return float(self.burst)

    def _register(self, connection: Connection, *, greet: bool = True) -> Connection:
        identity = connection.identity
        if (old := self._by_key.get(self._key(identity))) is not None:
            _LOGGER.info(
                "Star client %s reconnected; closing its old connection", identity
            )
            old.closed = True
            old.close(CLOSE_GOING_AWAY, "replaced by a new connection")
        self._by_key[self._key(identity)] = connection
        if greet:
            self._send(connection, self._heartbeat(identity))
        self._changed()
        return connection

    def disconnect(self, connection: Connection) -> None:
        """Forget a connection (if it is still the current one for its identity)."""
        connection.closed = True
        key = self._key(connection.identity)
        if self._by_key.get(key) is connection:
            del self._by_key[key]
            self._changed()

    def connections(self) -> list[Connection]:
        """Return the current connections."""
        return list(self._by_key.values())

    def counts(self) -> dict[str, int]:
        """Return connected clients by type."""
        counts = dict.fromkeys(CLIENT_TYPES, 0)
        for connection in self._by_key.values():
            counts[connection.identity.client_type] += 1
        return counts

    # -- frames -------------------------------------------------------------------

    def receive(
        self,
        connection: Connection,
        raw: str | bytes,
        *,
        decoded: Frame | None = None,
        admitted: bool = False,
    ) -> None:
        """Handle one frame from ``connection`` (a batch all at once).

        ``decoded`` is ``decode_frame(raw, …)``'s result when the transport
        already decoded a large frame off the event loop, after ``admit``
        (then ``admitted`` is True).
        """
        for _ in self.receive_steps(
            connection, raw, decoded=decoded, admitted=admitted
        ):
            pass

    def receive_steps(
        self,
        connection: Connection,
        raw: str | bytes,
        *,
        decoded: Frame | None = None,
        admitted: bool = False,
    ) -> Iterator[None]:
        """Handle one frame, stopping between the envelopes of a batch.

        As ``receive``, but a generator: it handles the frame (or a batch's
        first envelope) on the first ``next`` and each further envelope of a
        batch on the next one, so the transport can let the event loop run
        in between. Each envelope after a batch's first takes its own token
        from the rate limit (the frame's admission paid for the first).
        """
        if connection.closed or (not admitted and not self.admit(connection, raw)):
            return
        frame = (
            decoded
            if decoded is not None
            else decode_frame(raw, self.max_message_bytes)
        )
        if isinstance(frame.value, untrusted.UntrustedInputError):
            self._error(
                connection,
                VALIDATION_ERROR,
                "malformed JSON",
                None,
                [str(frame.value)[:200]],
            )
            return
        if not isinstance(frame.value, list):
            self._envelope(connection, frame.value, frame.text)
            return
        items: list[Any] = frame.value
        if not 1 <= len(items) <= MAX_BATCH:
            self._error(
                connection,
                VALIDATION_ERROR,
                f"a batch holds 1 to {MAX_BATCH} envelopes",
                None,
                [f"this batch holds {len(items)}"],
                suggested=f"send at most {MAX_BATCH} envelopes in one frame",
            )
            return
        for index, item in enumerate(items):
            if index:
                yield
                if self._gone(connection):  # closed while the loop ran
                    return
                connection.received += 1
                if not self._allow(connection, self._clock(), _message_id(item), index):
                    continue
            text = (
                frame.parts[index]
                if index < len(frame.parts)
                else json.dumps(item, ensure_ascii=False)
            )
            self._envelope(connection, item, text, index)

    @staticmethod
    def _gone(connection: Connection) -> bool:
        return connection.closed

    def _envelope(
        self,
        connection: Connection,
        envelope: Any,
        text: str,
        index: int | None = None,
    ) -> None:
        """Validate, check and route one envelope (``index``: its place in a batch)."""
        now = self._clock()
        code, problems = self._validate(envelope)
        message_id = _message_id(envelope)
        if problems:
            self._error(
                connection,
                code,
                "invalid client type"
                if code == INVALID_CLIENT_TYPE
                else "invalid envelope",
                message_id,
                problems,
                index=index,
                suggested=f"use one of {', '.join(PARTY_TYPES)}"
                if code == INVALID_CLIENT_TYPE
                else None,
            )
            return
        if not connection.identity.is_party(envelope["sender"]):
            self._error(
                connection,
                PERMISSION_DENIED,
                "sender must be this connection's own identity",
                message_id,
                index=index,
                suggested=f"send as {connection.identity.as_party()}",
            )
            return
        if envelope["type"] == "heartbeat":
            return  # a client's pong: last_seen is updated
        if envelope["type"] == "error":
            self.stats.errors += 1
        self._route(connection, envelope, text, message_id, now, index=index)

    def seen(self, connection: Connection) -> None:
        """Note that a client is alive without a frame (a WebSocket ping)."""
        if not connection.closed:
            connection.last_seen = self._clock()

    def admit(self, connection: Connection, raw: str | bytes) -> bool:
        """Count a frame against the size and rate limits; False when refused.

        Cheap: the transport calls it before decoding a large frame, so a
        flooder's frames are refused before any work.
        """
        if connection.closed:
            return False
        now = self._clock()
        connection.last_seen = now
        connection.received += 1
        size = (
            len(raw)
            if isinstance(raw, bytes)
            else _utf8_size(raw, self.max_message_bytes)
        )
        if size > self.max_message_bytes:
            self._error(
                connection,
                MESSAGE_TOO_LARGE,
                f"message larger than {self.max_message_bytes} bytes",
                None,
            )
            connection.closed = True
            connection.close(CLOSE_TOO_BIG, "message too large")
            self.disconnect(connection)
            return False
        return self._allow(connection, now)

    def _allow(
        self,
        connection: Connection,
        now: float,
        message_id: str | None = None,
        index: int | None = None,
    ) -> bool:
        """Take a token for one envelope; False (and maybe RATE_LIMITED) when none."""
        if not self._take_token(connection, now):
            connection.dropped += 1
            if not connection.limited:  # once per stretch, not once per frame
                connection.limited = True
                self._error(connection, RATE_LIMITED, "too many messages; slow down",
                            message_id, index=index,
                            suggested="wait and resend")  # fmt: skip
            return False
        connection.limited = False
        return True

    def _take_token(self, connection: Connection, now: float) -> bool:
        # An environment answers every agent of its world: ten times the budget.
        scale = (
            ENVIRONMENT_RATE_FACTOR
            if connection.identity.client_type == "environment"
            else 1
        )
        connection.tokens = min(
            self._burst_of(connection.identity),
            connection.tokens + (now - connection.token_time) * self.rate * scale,
        )
        connection.token_time = now
        if connection.tokens < 1:
            return False
        connection.tokens -= 1
        return True

    @staticmethod
    def _validate(envelope: Any) -> tuple[str, list[str]]:
        """Return the error code and the envelope's problems (none: it is valid).

        The code is ``INVALID_CLIENT_TYPE`` when a sender or recipient names a
        type that is not the spec's (its problems still list all the others),
        ``VALIDATION_ERROR`` otherwise.
        """
        if _well_formed(envelope):
            return VALIDATION_ERROR, []
        if not isinstance(envelope, dict):
            return VALIDATION_ERROR, ["the message must be a JSON object"]
        code = VALIDATION_ERROR
        problems = []
        if envelope.get("type") not in ENVELOPE_TYPES:
            problems.append(f"type must be one of {', '.join(ENVELOPE_TYPES)}")
        for part in ("sender", "recipient"):
            party = envelope.get(part)
            if not isinstance(party, dict):
                problems.append(f"{part} must be an object with id and type")
                continue
            if "type" not in party:
                problems.append(f"{part}.type is required")
            elif party["type"] not in PARTY_TYPES:
                code = INVALID_CLIENT_TYPE
                problems.append(f"{part}.type must be agent, environment, human or hub")
            if not (
                valid_id(party.get("id"))
                or (part == "recipient" and party.get("id") == "*")
            ):
                problems.append(
                    f"{part}.id must be 3-50 characters of A-Z a-z 0-9 _ . -"
                )
        if "payload" not in envelope:
            problems.append("payload is required")
        problems.extend(
            f"{optional} must be a string"
            for optional in ("timestamp", "message_id")
            if optional in envelope and not isinstance(envelope[optional], str)
        )
        return code, problems

    def _targets(
        self, sender: Connection, recipient: dict[str, str]
    ) -> list[Connection]:
        env = sender.identity.env_id
        if sender.identity.client_type == "human" or recipient["type"] == "human":
            envs: set[str | None] | None = None  # humans talk across environments
        else:
            envs = {env}
        if recipient["id"] == "*":
            return [
                c
                for c in self._by_key.values()
                if c.identity.client_type == recipient["type"]
                and c is not sender
                and (envs is None or c.identity.env_id in envs)
            ]
        if recipient["type"] == "environment":
            key = (recipient["id"], "environment", recipient["id"])
            found = self._by_key.get(key)
            if found is not None and (envs is None or recipient["id"] in envs):
                return [found]
            return []
        if envs is None:
            return [
                c
                for c in self._by_key.values()
                if c.identity.client_type == recipient["type"]
                and c.identity.client_id == recipient["id"]
            ][:1]
        found = self._by_key.get((env, recipient["type"], recipient["id"]))
        return [found] if found is not None else []

    def _route(self, sender: Connection, envelope: dict[str, Any], text: str,
               message_id: str | None, started: float, *,
               index: int | None = None) -> None:  # fmt: skip
        recipient = envelope["recipient"]
        targets = self._targets(sender, recipient)
        if not targets and recipient["id"] == "*":
            return  # a broadcast nobody hears is not an error
        if not targets:
            self._error(
                sender,
                RECIPIENT_NOT_FOUND,
                f"{recipient['type']} {recipient['id']!r} is not connected"
                if recipient["id"] != "*"
                else f"no {recipient['type']} is connected",
                message_id,
                index=index,
                suggested="check the recipient id and environment",
            )
            return
        for target in targets:
            if target.local is not None:
                try:
                    target.local(envelope, sender)
                except Exception:
                    _LOGGER.exception("Star agent %s failed", target.identity)
            else:
                self._send(target, text)
        self.stats.routed += len(targets)
        self.stats.latencies.append(self._clock() - started)

    # -- sending ------------------------------------------------------------------

    def _send(self, connection: Connection, text: str) -> None:
        if connection.closed:
            return
        if connection.send(text):
            connection.sent += 1
            return
        # The bounded queue is full: a slow consumer is cut off.
        self.stats.dropped_slow += 1
        _LOGGER.warning(
            "Star client %s is too slow; disconnecting it", connection.identity
        )
        connection.closed = True
        connection.close(CLOSE_TRY_LATER, "send queue full (slow consumer)")
        self.disconnect(connection)

    def _heartbeat(self, identity: Identity) -> str:
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

    def _error(
        self,
        connection: Connection,
        code: str,
        message: str,
        original_message_id: str | None,
        validation_errors: list[str] | None = None,
        *,
        index: int | None = None,
        suggested: str | None = None,
    ) -> None:
        self.stats.errors += 1
        details: dict[str, Any] = {"original_message_id": original_message_id}
        if validation_errors:
            details["validation_errors"] = validation_errors
        if suggested:
            details["suggested_action"] = suggested
        if index is not None:
            details["batch_index"] = index  # which envelope of the batch
        self._send(
            connection,
            json.dumps(
                {
                    "type": "error",
                    "sender": {"id": HUB_ID, "type": HUB_ID},
                    "recipient": connection.identity.as_party(),
                    "payload": {
                        "error_code": code,
                        "message": message,
                        "details": details,
                    },
                    "timestamp": utc_ts(time.time()),
                },
                ensure_ascii=False,
            ),
        )

    def tick(self) -> None:
        """Send heartbeats; close connections silent for longer than the timeout."""
        now = self._clock()
        for connection in self.connections():
            if connection.local is not None:
                continue  # in-process: alive as long as Soul is
            if now - connection.last_seen > self.idle_timeout:
                _LOGGER.info("Star client %s timed out", connection.identity)
                connection.closed = True
                connection.close(CLOSE_POLICY, "no traffic or pong for too long")
                self.disconnect(connection)
            else:
                self._send(connection, self._heartbeat(connection.identity))


def decode_frame(raw: str | bytes, max_bytes: int) -> Frame:
    """Return the decoded frame; its ``value`` is the ``UntrustedInputError`` if refused.

    Thread-safe: the transport runs it off the event loop for large frames,
    and a batch's envelopes are serialized here too (they are forwarded one
    by one). Binary frames must be UTF-8 text, as text frames are.
    """
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        value = untrusted.loads(
            text,
            max_bytes=max_bytes,
            max_depth=MAX_JSON_DEPTH,
            max_values=untrusted.MAX_JSON_VALUES,
        )
    except UnicodeDecodeError:
        return Frame(untrusted.UntrustedInputError("binary frame is not UTF-8"), "")
    except untrusted.UntrustedInputError as err:
        return Frame(err, "")
    if isinstance(value, list) and len(value) <= MAX_BATCH:
        parts = tuple(
            json.dumps(item, ensure_ascii=False) if isinstance(item, dict) else ""
            for item in value
        )
        return Frame(value, text, parts)
    return Frame(value, text)


def _well_formed(envelope: Any) -> bool:
    """Return whether ``StarHub._validate`` finds no problem, cheaply (the usual case)."""
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


_MISSING = object()


def _message_id(envelope: Any) -> str | None:
    """Return an envelope's ``message_id`` (or the spec example's ``id``), if any."""
    if not isinstance(envelope, dict):
        return None
    for key in ("message_id", "id"):
        if isinstance(value := envelope.get(key), str):
            return value
    return None


def _utf8_size(text: str, limit: int) -> int:
    """Return the UTF-8 size of ``text`` (cheaply when it is clearly under ``limit``)."""
    if len(text) * 4 <= limit:
        return len(text)  # at most 4 bytes a character: under the limit anyway
    return len(text.encode("utf-8", "surrogatepass"))
