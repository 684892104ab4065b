"""The Star Protocol hub's routing core, independent of any transport.

A transport (Home Assistant's HTTP server, or ``devtools.star_server``)
accepts a WebSocket, authenticates it, and registers it with ``connect``
(``Connections``, ``connections.py``: identities, ownership, the connection
cap, writing, heartbeats). Every frame goes to ``receive`` (or
``receive_now`` / ``receive_steps``). The hub validates the envelope, checks
that the sender is the connection's own identity, routes by recipient type
and id inside the sender's environment (``"*"`` broadcasts to every client
of that type there), answers problems with the spec's error envelope,
rate-limits each client, and never parses ``payload`` beyond its size.

Interop (docs/star.md): a party whose ``type`` is not one of the spec's is
answered ``INVALID_CLIENT_TYPE``; a frame holding a JSON array is a batch
(the spec's "批量消息"): each of its at most ``MAX_BATCH`` envelopes is
validated, rate-limited and routed as if sent alone, and errors name the
envelope (``original_message_id``, ``batch_index``); ``receive_steps`` lets
the transport yield between them.

Fairness: a client's burst (``burst`` frames; environments twice that) fits
any receiver's send queue, so a burst within the limit never cuts an
actively reading receiver off; a client over its limit gets one
``RATE_LIMITED`` error per stretch of refused frames (not one per frame, so
its own queue does not fill with errors).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
import json
from typing import Any

from .. import untrusted
from ..logs import trace_logger
from .connections import (
    DEFAULT_BURST,
    DEFAULT_RATE,
    ENVIRONMENT_BURST_FACTOR,
    ENVIRONMENT_RATE_FACTOR,
    HEARTBEAT_INTERVAL,
    IDLE_TIMEOUT,
    MAX_CONNECTIONS,
    USER_BURST_FACTOR,
    USER_RATE_FACTOR,
    Connection,
    Connections,
    HubFullError,
    HubStats,
    IdentityError,
    LocalHandler,
)
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
    framed,
    loads,
    message_id,
    problems,
    utf8_size,
    valid_id,
    well_formed_from,
)

# Importable from here, as before envelope.py and connections.py were split off.
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
    "USER_BURST_FACTOR",
    "USER_RATE_FACTOR",
    "VALIDATION_ERROR",
    "Connection",
    "Frame",
    "HubFullError",
    "HubStats",
    "Identity",
    "IdentityError",
    "LocalHandler",
    "StarHub",
    "decode_frame",
    "valid_id",
]


_LOGGER = trace_logger(__name__)


class StarHub(Connections):
    """Routes envelopes between connections; see the module docstring."""

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

        For frames the transport decodes on the loop
        (``untrusted.decodes_on_loop``): the same answers as ``receive_steps``,
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
        if tokens < 1 or self.user_budget_spent(connection):
            connection.tokens = tokens
            connection.dropped += 1
            if not connection.limited:  # once per stretch, not once per frame
                connection.limited = True
                self._error(
                    connection,
                    RATE_LIMITED,
                    "too many messages; slow down"
                    if tokens < 1
                    else "too many messages from this user's clients together; "
                    "slow down",
                    message_id,
                    index=index,
                    suggested="wait and resend",
                )
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
            matches = self._across_environments(recipient)
            if len({c.user_id for c in matches}) > 1:
                # One id in several environments, connected by several users:
                # the sender's own user's, else nobody's (a black-box run's
                # agent in its own environment took a message another
                # user's human meant for that user's agent of the same id).
                matches = [c for c in matches if c.user_id == sender.user_id]
            return matches[:1]
        found = self._by_key.get((env, recipient["type"], recipient["id"]))
        return [found] if found is not None else []

    def _across_environments(self, recipient: dict[str, str]) -> list[Connection]:
        """Return the connections of the recipient's type and id, in any environment."""
        return [
            c
            for c in self._by_key.values()
            if c.identity.client_type == recipient["type"]
            and c.identity.client_id == recipient["id"]
        ]

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
            why = f"{recipient_type} {recipient_id!r} is not connected"
            if identity.client_type == "human" and self._across_environments(recipient):
                why = (
                    f"{recipient_type} {recipient_id!r} is connected in several "
                    "environments by other users: it is not clear which one"
                )
            self._error(
                sender,
                RECIPIENT_NOT_FOUND,
                why,
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
