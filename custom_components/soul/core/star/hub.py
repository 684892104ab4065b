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
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
import json
import time
from typing import Any

from .. import untrusted
from ..access import Principal
from ..logs import trace_logger
from .envelope import (
    CLIENT_TYPES,
    CLOSE_GOING_AWAY,
    CLOSE_POLICY,
    CLOSE_TOO_BIG,
    CLOSE_TRY_LATER,
    CONNECTION_FAILED,
    ENVELOPE_TYPES,
    HUB_ID,
    ID_RE,
    INVALID_CLIENT_TYPE,
    MAX_BATCH,
    MAX_JSON_DEPTH,
    MAX_MESSAGE_BYTES,
    MESSAGE_TOO_LARGE,
    PARTY_TYPES,
    PERMISSION_DENIED,
    RATE_LIMITED,
    RECIPIENT_NOT_FOUND,
    VALIDATION_ERROR,
    Frame,
    Identity,
    decode_frame,
    error_text,
    framed,
    heartbeat_text,
    loads,
    message_id,
    problems,
    utf8_size,
    valid_id,
    well_formed_from,
)

# The envelope's names, importable from here as before the split.
__all__ = [
    "CLIENT_TYPES",
    "CLOSE_GOING_AWAY",
    "CLOSE_POLICY",
    "CLOSE_TOO_BIG",
    "CLOSE_TRY_LATER",
    "CONNECTION_FAILED",
    "DEFAULT_BURST",
    "DEFAULT_RATE",
    "ENVELOPE_TYPES",
    "HEARTBEAT_INTERVAL",
    "HUB_ID",
    "IDLE_TIMEOUT",
    "ID_RE",
    "INVALID_CLIENT_TYPE",
    "MAX_BATCH",
    "MAX_CONNECTIONS",
    "MAX_JSON_DEPTH",
    "MAX_MESSAGE_BYTES",
    "MESSAGE_TOO_LARGE",
    "PARTY_TYPES",
    "PERMISSION_DENIED",
    "RATE_LIMITED",
    "RECIPIENT_NOT_FOUND",
    "VALIDATION_ERROR",
    "Connection",
    "Frame",
    "HubFullError",
    "HubStats",
    "Identity",
    "IdentityError",
    "StarHub",
    "decode_frame",
    "valid_id",
]

_LOGGER = trace_logger(__name__)

HEARTBEAT_INTERVAL = 30.0
IDLE_TIMEOUT = 60.0
DEFAULT_RATE = 200.0  # messages per second, sustained
DEFAULT_BURST = 100  # environments: twice; at most the transport's send queue
ENVIRONMENT_RATE_FACTOR = 10
ENVIRONMENT_BURST_FACTOR = 2
MAX_CONNECTIONS = 256  # remote clients at once (Home Assistant: about 2,048 files)


class IdentityError(PermissionError):
    """A connection may not take this identity; ``str()`` says why."""


class HubFullError(Exception):
    """The hub already serves ``max_connections`` clients; ``str()`` says so."""


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
    # ``identity.as_party()`` when it passes the sender checks (then a sender
    # equal to it is valid), else None.
    party: dict[str, str] | None = None

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
            self._clock(),
            local=True,
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
        connection.party = identity.as_party() if identity.is_valid_party() else None
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
        yield from self._steps(
            connection,
            decoded
            if decoded is not None
            else decode_frame(raw, self.max_message_bytes),
        )

    def receive_now(self, connection: Connection, raw: str | bytes) -> Iterable[None]:
        """Handle a frame now; return the steps left (a batch's further envelopes).

        For frames the transport decodes on the loop (at most
        ``untrusted.LOOP_JSON_BYTES``): the same answers as ``receive_steps``,
        but a frame of one envelope is handled at once and the steps are
        empty (no generator, no ``Frame``).
        """
        if type(raw) is not str:
            return self.receive_steps(connection, raw)
        if connection.closed or not self.admit(connection, raw):
            return ()
        try:
            value = loads(raw, self.max_message_bytes)
        except untrusted.UntrustedInputError as err:
            return self._steps(connection, Frame(err, ""))
        if type(value) is dict:
            self._envelope(connection, value, raw)
            return ()
        return self._steps(connection, framed(value, raw))

    def _steps(self, connection: Connection, frame: Frame) -> Iterator[None]:
        """Handle an admitted frame's envelopes, stopping between a batch's."""
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
                if not self._allow(connection, self._clock(), message_id(item), index):
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
        party = connection.party
        if not (
            # The usual case, cheaply: well formed and sent as the connection.
            type(envelope) is dict
            and party is not None
            and well_formed_from(envelope, party)
        ) and not self._checked(connection, envelope, index):
            return
        kind = envelope["type"]
        if kind != "message":
            if kind == "heartbeat":
                return  # a client's pong: last_seen is updated
            self.stats.errors += 1  # a client's error
        self._route(connection, envelope, text, now, index=index)

    def _checked(
        self, connection: Connection, envelope: Any, index: int | None
    ) -> bool:
        """Validate fully and check the sender; answer the first problem found."""
        code, found = problems(envelope)
        if found:
            self._error(
                connection,
                code,
                "invalid client type"
                if code == INVALID_CLIENT_TYPE
                else "invalid envelope",
                message_id(envelope),
                found,
                index=index,
                suggested=f"use one of {', '.join(PARTY_TYPES)}"
                if code == INVALID_CLIENT_TYPE
                else None,
            )
            return False
        if not connection.identity.is_party(envelope["sender"]):
            self._error(
                connection,
                PERMISSION_DENIED,
                "sender must be this connection's own identity",
                message_id(envelope),
                index=index,
                suggested=f"send as {connection.identity.as_party()}",
            )
            return False
        return True

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
        size = len(raw)
        if size * 4 > self.max_message_bytes and isinstance(raw, str):
            size = utf8_size(raw, self.max_message_bytes)  # maybe too large
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
        # An environment answers every agent of its world: ten times the budget.
        if connection.identity.client_type == "environment":
            scale, burst = (
                ENVIRONMENT_RATE_FACTOR,
                self.burst * ENVIRONMENT_BURST_FACTOR,
            )
        else:
            scale, burst = 1, self.burst
        tokens = min(
            float(burst),
            connection.tokens + (now - connection.token_time) * self.rate * scale,
        )
        connection.token_time = now
        if tokens < 1:
            connection.tokens = tokens
            connection.dropped += 1
            if not connection.limited:  # once per stretch, not once per frame
                connection.limited = True
                self._error(connection, RATE_LIMITED, "too many messages; slow down",
                            message_id, index=index,
                            suggested="wait and resend")  # fmt: skip
            return False
        connection.tokens = tokens - 1
        connection.limited = False
        return True

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
               started: float, *, index: int | None = None,
               local: bool = False) -> None:  # fmt: skip
        recipient = envelope["recipient"]
        recipient_type, recipient_id = recipient["type"], recipient["id"]
        identity = sender.identity
        if (
            recipient_id != "*"
            and identity.client_type != "human"
            and recipient_type != "human"
        ):
            # One recipient in the sender's environment (``_targets``'s answer
            # without building it): the usual case.
            env = identity.env_id
            if recipient_type != "environment":
                target = self._by_key.get((env, recipient_type, recipient_id))
            elif recipient_id == env:
                target = self._by_key.get((env, "environment", recipient_id))
            else:
                target = None
            if target is not None and target.local is None:  # the usual case
                self._send(target, text)
                stats = self.stats
                stats.routed += 1
                stats.latencies.append(self._clock() - started)
                return
            targets: tuple[Connection, ...] = () if target is None else (target,)
        else:
            targets = tuple(self._targets(sender, recipient))
        if not targets:
            if recipient_id == "*":
                return  # a broadcast nobody hears is not an error
            self._error(
                sender,
                RECIPIENT_NOT_FOUND,
                f"{recipient_type} {recipient_id!r} is not connected",
                envelope.get("message_id") if local else message_id(envelope),
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
        return heartbeat_text(identity)

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
        self._send(
            connection,
            error_text(
                connection.identity,
                code,
                message,
                original_message_id,
                validation_errors,
                index=index,
                suggested=suggested,
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
