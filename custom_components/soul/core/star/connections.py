"""Who is connected to the Star hub, and writing to them: ``Connections``.

A transport calls ``connect`` with the connection's identity and two
callbacks: ``send(text) -> bool`` (False when its bounded queue is full: the
slow client is then cut off) and ``close(code, reason)``. At most
``max_connections`` remote clients are connected at once, and at most
``max_per_user`` (half of them) of one Home Assistant user; ``connect``
refuses one more with ``HubFullError`` (the transport answers
``CONNECTION_FAILED`` and closes with 1013), except for a client taking over
its own identity, or one of a user who may act holding at least two fewer
than the user holding the most (administrators aside), which takes the place
of that user's oldest, at most once a minute. ``tick`` sends heartbeats and
closes the connections silent for too long. ``StarHub`` (``hub.py``) adds the frames.

Identities (docs/security.md): a connection may carry the ``Principal`` of
its token. ``reserved`` identities (Soul's own agents) are refused to every
client; an identity connected by one user cannot be taken over by another;
a human id belongs to the first user who used it (``human_owners``, kept by
the glue across restarts). In-process agents (``connect_local``) get frames
as parsed envelopes with their sender, never time out and are not
rate-limited.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
import time
from typing import Any

from .. import stored
from ..access import Principal
from ..buckets import TokenBuckets
from ..logs import trace_logger
from .envelope import (
    CLIENT_TYPES,
    CLOSE_GOING_AWAY,
    CLOSE_POLICY,
    CLOSE_TRY_LATER,
    ID_RE,
    MAX_MESSAGE_BYTES,
    Identity,
    error_text,
    heartbeat_text,
)

_LOGGER = trace_logger(__name__)

HEARTBEAT_INTERVAL = 30.0
IDLE_TIMEOUT = 60.0
DEFAULT_RATE = 200.0  # messages per second, sustained
DEFAULT_BURST = 100  # environments: twice; at most the transport's send queue
ENVIRONMENT_RATE_FACTOR = 10
ENVIRONMENT_BURST_FACTOR = 2
# All of one Home Assistant user's clients together: twenty clients (or two
# environments) at the full rate. Per client alone, a user's 128 places let
# 25,600 messages a second through (a black-box run, 2026-11-29: 6,500 a
# second from one user held Home Assistant's pings up to 87 ms).
USER_RATE_FACTOR = 20
USER_BURST_FACTOR = 10
MAX_CONNECTIONS = 256  # remote clients at once (Home Assistant: about 2,048 files)
# One user's share: a black-box run (2026-11-29) had a read-only user hold all
# 256 places, and every other client was refused.
MAX_SHARE_PER_USER = 0.5
# Human ids kept as their users' (stored), the least recently used dropped.
MAX_HUMANS_PER_USER = 32
MAX_HUMAN_OWNERS = 4096
# A user's clients displace at most one other user's client this often (s).
DISPLACE_INTERVAL = 60.0


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


class Connections:
    """The hub's connections: who may connect, who is connected, writing to them."""

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
        rate: float = DEFAULT_RATE,
        burst: int = DEFAULT_BURST,
        idle_timeout: float = IDLE_TIMEOUT,
        max_connections: int = MAX_CONNECTIONS,
        max_per_user: int | None = None,
        reserved: Callable[[Identity], bool] = lambda _identity: False,
        on_owners_changed: Callable[[], None] = lambda: None,
    ) -> None:
        """Create an empty hub; ``reserved`` names identities no client may take.

        ``max_connections`` bounds the remote clients (in-process ones are
        not counted), ``max_per_user`` those of one Home Assistant user (by
        default half of them, at least one).
        """
        if max_connections < 1:
            raise ValueError("max_connections must be at least 1")
        if max_per_user is None:
            max_per_user = max(1, int(max_connections * MAX_SHARE_PER_USER))
        self._clock = clock
        self.max_message_bytes = max_message_bytes
        self.rate = rate
        self.burst = burst
        self.idle_timeout = idle_timeout
        self.max_connections = max_connections
        self.max_per_user = max_per_user
        self._full_logged = False
        self.reserved = reserved
        self._on_owners_changed = on_owners_changed
        self._by_key: dict[tuple[str | None, str, str], Connection] = {}
        # human id → the Home Assistant user it belongs to
        self.human_owners: dict[str, str] = {}
        # user id → when a client of theirs last displaced another's
        self._displaced_at: dict[str, float] = {}
        # user id → the rate budget all of that user's clients share
        self._user_budgets: TokenBuckets[str] = TokenBuckets(
            burst * USER_BURST_FACTOR, 1 / (rate * USER_RATE_FACTOR), clock
        )
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

    def _keep_human(self, human_id: str, owner: str) -> None:
        """Keep ``human_id`` as ``owner``'s, the most recently used of them.

        A user keeps at most MAX_HUMANS_PER_USER ids and the hub
        MAX_HUMAN_OWNERS: the least recently used make way (a black-box run
        had a read-only user claim 50 for good; refusing new ones instead
        would lock a user out of Star after their 32nd device).
        """
        owners = self.human_owners
        if owners.get(human_id) == owner and next(reversed(owners)) == human_id:
            return  # already the newest: nothing to store
        owners.pop(human_id, None)
        theirs = [human for human, user in owners.items() if user == owner]
        for human in theirs[: max(0, len(theirs) - MAX_HUMANS_PER_USER + 1)]:
            del owners[human]
        while len(owners) >= MAX_HUMAN_OWNERS:
            del owners[next(iter(owners))]
        owners[human_id] = owner
        self._on_owners_changed()

    def load_owners(self, data: Any) -> None:
        """Take the human ids' owners as stored, within the bounds ``_keep_human`` keeps.

        A store can hold anything (``core.stored``): 100,000 stored owners made
        the first human's connection hold the loop 2.6 s (a fuzz of the
        stores, 2026-11-29). Ids that a client could not take are dropped;
        of the newest ``MAX_HUMAN_OWNERS`` (all that Soul stores), the newest
        ``MAX_HUMANS_PER_USER`` a user are kept, oldest first as stored.
        """
        if not isinstance(data, dict):
            return
        kept: list[tuple[str, str]] = []
        per_user: dict[str, int] = {}
        for human, owner in reversed(stored.newest(data, MAX_HUMAN_OWNERS)):
            if (
                isinstance(human, str)
                and ID_RE.fullmatch(human) is not None
                and stored.ident(owner) is not None
                and per_user.get(owner, 0) < MAX_HUMANS_PER_USER
            ):
                per_user[owner] = per_user.get(owner, 0) + 1
                kept.append((human, owner))
        self.human_owners = dict(reversed(kept))

    @staticmethod
    def _owner_to_be(identity: Identity, principal: Principal | None) -> str | None:
        """Return the user a connection as ``identity`` would keep it for, if any.

        A human id is kept for a user who may act: a read-only user connects
        as a human without keeping the id (a black-box run had one claim 50).
        """
        if (
            identity.client_type != "human"
            or principal is None
            or not principal.may_control
        ):
            return None
        return principal.user_id

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
        ``HubFullError`` when ``max_connections`` clients are connected, or
        ``max_per_user`` of the principal's user (a takeover frees its place
        first, so it is never refused).
        """
        self.check_identity(identity, principal)
        self._check_room(identity, principal)
        if (owner := self._owner_to_be(identity, principal)) is not None:
            self._keep_human(identity.client_id, owner)
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

    def _check_room(self, identity: Identity, principal: Principal | None) -> None:
        old = self._by_key.get(self._key(identity))
        if old is not None and old.local is None:
            return  # a takeover: the old connection's place is the new one's
        remote = [c for c in self._by_key.values() if c.local is None]
        user_id = None if principal is None else principal.user_id
        if (
            user_id is not None
            and sum(1 for c in remote if c.user_id == user_id) >= self.max_per_user
        ):
            self.stats.refused_full += 1
            raise HubFullError(
                f"this user already has {self.max_per_user} connections to the hub,"
                " its share; close one first"
            )
        if len(remote) < self.max_connections:
            self._full_logged = False
            return
        if principal is not None and self._make_room(remote, principal):
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

    def _make_room(self, remote: list[Connection], principal: Principal) -> bool:
        """Close the oldest connection of the user holding the most, if it evens them out.

        With each user held to half the hub, two users filled it for
        everyone else (a black-box run, 2026-11-29). A user who may act,
        holding at least two connections fewer than the user holding the
        most, takes the place of that user's oldest: every user gets in, and
        the shares settle within one of each other without clients
        displacing each other back and forth. An administrator's clients
        are never displaced, a read-only user displaces none, and a user
        displaces at most one client every ``DISPLACE_INTERVAL`` (leaving and
        coming back would otherwise close another's client each time).
        """
        user_id = principal.user_id
        now = self._clock()
        if (
            user_id is None
            or not principal.may_control
            or now - self._displaced_at.get(user_id, -DISPLACE_INTERVAL)
            < DISPLACE_INTERVAL
        ):
            return False
        held = Counter(c.user_id for c in remote if c.user_id is not None)
        movable = Counter(
            c.user_id
            for c in remote
            if c.user_id is not None and not c.principal.is_admin  # type: ignore[union-attr]
        )
        if not movable:
            return False
        top, most = movable.most_common(1)[0]
        if held[user_id] + 2 > most:
            return False
        oldest = min(
            (c for c in remote if c.user_id == top), key=lambda c: c.connected_at
        )
        _LOGGER.info(
            "Star hub is full; %s gives its place to another user's client",
            oldest.identity,
        )
        if len(self._displaced_at) >= MAX_HUMAN_OWNERS:
            self._displaced_at.clear()
        self._displaced_at[user_id] = now
        oldest.closed = True
        del self._by_key[self._key(oldest.identity)]
        oldest.close(CLOSE_TRY_LATER, "the hub is full; its place went to another user")
        return True

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

    def user_budget_spent(self, connection: Connection) -> bool:
        """Take a token from the budget all of the connection's user's clients share.

        True (nothing taken) when it is spent. A client without a Home
        Assistant user (the standalone hub) or an in-process one has no such
        budget. A budget outlives its user's connections, so leaving and
        coming back does not refill it.
        """
        user_id = connection.user_id
        if user_id is None or connection.local is not None:
            return False
        return self._user_budgets.take(user_id) > 0

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

    def seen(self, connection: Connection) -> None:
        """Note that a client is alive without a frame (a WebSocket ping)."""
        if not connection.closed:
            connection.last_seen = self._clock()

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
        self._user_budgets.forget_full()
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
