"""The terminal registry: what every body last said about itself.

It plays the role a coordinator plays in other integrations: the MQTT bridge
feeds it messages, it keeps one ``Terminal`` per body, and listeners (entities,
the device registry) hear about changes. Nothing here raises out of
``handle_message``: a bad message is logged and dropped, the state untouched.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from functools import partial
import time
from typing import Any

from .buckets import TokenBuckets
from .entity_churn import EntityChurn
from .intent_filter import IntentFilterError, filter_intents
from .intent_filter.catalog import cached_catalog
from .logs import trace_logger
from .protocol import (
    IntentCatalogSnapshot,
    ProtocolError,
    SkillsSnapshot,
    decode_json,
    is_empty,
    parse_intent_catalog,
    parse_online,
    parse_skills,
)
from .shared import Shared, content_key
from .skill_profiles import Profile, profile
from .terminal import Change, Decision, Listener, Prepared, Terminal, accept_version
from .topics import Kind, valid_terminal_id

_LOGGER = trace_logger(__name__)

DEFAULT_TTL = 60.0
MAX_TERMINALS = 1024  # bodies that announced their skills
# Ids heard from (online, heartbeat) that never announced skills: a separate,
# smaller pool, oldest evicted first, so phantoms never keep a real body out.
MAX_UNREGISTERED = 256
FLIP_BURST = 4  # changes of a terminal's online told at once
FLIP_REFILL = 5.0  # seconds per change told after those (``release_held``)
HEARTBEAT_TOLD_EVERY = 1.0  # seconds: a terminal's heartbeats told at most so often
# Payload bytes of every body's skills and catalog together (memory bound).
MAX_HELD_BYTES = 64 * 1024 * 1024
# Skills that become entities (``skill_profiles``): a body's first ones, and
# all bodies' together; the others stay callable (actions, the model). Home
# Assistant adds and writes a body's entities in one step of its loop: 40
# made-up bodies of 60 select skills each held it 450 ms (black box).
MAX_SKILL_ENTITIES = 16
MAX_ALL_SKILL_ENTITIES = 1024


def _parse_snapshot(
    kind: Kind, terminal_id: str, payload: bytes | str
) -> SkillsSnapshot | IntentCatalogSnapshot | None:
    """Return the snapshot a message carries (None when cleared); raise ProtocolError."""
    if not valid_terminal_id(terminal_id):
        raise ProtocolError("invalid terminal id")
    if is_empty(payload):
        return None
    if kind is Kind.SKILLS:
        return parse_skills(terminal_id, decode_json(payload))
    if kind is not Kind.INTENT_CATALOG:
        raise ProtocolError(f"{kind} is not a snapshot")
    snapshot = parse_intent_catalog(terminal_id, decode_json(payload))
    if not snapshot.intents:
        return snapshot
    try:  # validates every rule; the compiled form travels with the snapshot
        compiled, _cached = cached_catalog(snapshot.intents)
    except IntentFilterError as err:
        raise ProtocolError(f"invalid intent_catalog: {err}") from None
    intents = tuple(_shared_intent(intent) for intent in snapshot.intents)
    return replace(snapshot, intents=intents, compiled=compiled)


def _shared_intent(intent: dict[str, Any]) -> dict[str, Any]:
    """Return the copy of ``intent`` every catalog holding the same one shares."""
    key = content_key(intent)
    return intent if key is None else _shared_intents.keep(key, intent)


# Bodies of one model publish the same intents (a catalog may differ from
# another by one): one copy of each.
_shared_intents: Shared[dict[str, Any]] = Shared(1024)


class TerminalRegistry:
    """Keeps every terminal's state from its MQTT messages."""

    def __init__(
        self,
        *,
        ttl: float = DEFAULT_TTL,
        clock: Callable[[], float] = lambda: time.monotonic(),  # noqa: PLW0108  # looked up per call, so test clocks apply
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        max_terminals: int = MAX_TERMINALS,
    ) -> None:
        """Create an empty registry; ``clock`` measures the TTL, ``now`` stamps heartbeats."""
        self.ttl = ttl
        self._clock = clock
        self._now = now
        self._max_terminals = max_terminals
        self._terminals: dict[str, Terminal] = {}
        # Ids without skills, least recently heard first: O(1) to evict.
        self._phantoms: OrderedDict[str, None] = OrderedDict()
        self._registered = 0
        self._held_bytes = 0
        # Skills that are entities, every terminal's together (MAX_ALL_SKILL_ENTITIES).
        self._skill_entities = 0
        self.forgotten = 0  # phantom ids evicted to make room (diagnostics)
        # Online changes told per terminal (``_online``), and the ids whose
        # latest change waits to be told (``release_held``).
        self._flips = TokenBuckets[str](FLIP_BURST, FLIP_REFILL, clock)
        self._held: dict[str, None] = {}
        self._churn = EntityChurn(clock)
        # Listeners by terminal id; None holds those that hear every terminal.
        self._listeners: dict[str | None, list[Listener]] = {}

    def __iter__(self) -> Iterator[Terminal]:
        """Iterate over the registered terminals."""
        return (t for t in self._terminals.values() if t.registered)

    def get(self, terminal_id: str) -> Terminal | None:
        """Return a registered terminal."""
        terminal = self._terminals.get(terminal_id)
        return terminal if terminal is not None and terminal.registered else None

    def subscribe(
        self, listener: Listener, terminal_id: str | None = None
    ) -> Callable[[], None]:
        """Call ``listener`` on changes of one registered terminal (or of all).

        Returns the function that unsubscribes it.
        """
        listeners = self._listeners.setdefault(terminal_id, [])
        listeners.append(listener)

        def unsubscribe() -> None:
            listeners.remove(listener)
            if not listeners and self._listeners.get(terminal_id) is listeners:
                del self._listeners[terminal_id]

        return unsubscribe

    def _notify(self, terminal: Terminal, change: Change) -> None:
        if not terminal.registered and change is not Change.REMOVED:
            return
        if change is Change.AVAILABILITY:
            self._log_availability(terminal)
        listeners = [
            *self._listeners.get(None, ()),
            *self._listeners.get(terminal.terminal_id, ()),
        ]
        for listener in listeners:
            try:
                listener(terminal, change)
            except Exception:
                _LOGGER.exception("Terminal listener failed on %s", change)

    def handle_message(
        self, kind: Kind, terminal_id: str, payload: bytes | str
    ) -> None:
        """Apply one message a body published; log and drop what is invalid.

        Skills and catalogs are parsed here, in the caller's thread; the MQTT
        bridge parses them in the executor instead (``prepare`` then
        ``apply``, through ``core.ingest``).
        """
        if kind in (Kind.SKILLS, Kind.INTENT_CATALOG):
            self.apply(self.prepare(kind, terminal_id, payload))
            return
        try:
            self._handle(kind, terminal_id, payload)
        except ProtocolError as err:
            _LOGGER.warning("Dropped %s of terminal %s: %s", kind, terminal_id, err)

    @staticmethod
    def prepare(kind: Kind, terminal_id: str, payload: bytes | str) -> Prepared:
        """Parse and check a skills or catalog message; thread-safe, no state.

        This is the expensive part (schemas checked, catalog compiled), so the
        bridge runs it off the event loop.
        """
        try:
            snapshot = _parse_snapshot(kind, terminal_id, payload)
        except ProtocolError as err:
            return Prepared(kind, terminal_id, error=str(err))
        kinds: dict[str, Profile | None] = {}
        if isinstance(snapshot, SkillsSnapshot):
            entities = left_out = 0
            for skill in snapshot.skills:
                entity = profile(skill)
                if entity is not None and entities >= MAX_SKILL_ENTITIES:
                    entity, left_out = None, left_out + 1
                kinds[skill.name] = entity
                entities += entity is not None
            if left_out:
                _LOGGER.warning(
                    "Terminal %s: %d of its skills get no entity (at most %d a "
                    "body); they stay callable",
                    terminal_id,
                    left_out,
                    MAX_SKILL_ENTITIES,
                )
        return Prepared(
            kind, terminal_id, snapshot, size=len(payload), skill_kinds=kinds
        )

    def apply(self, prepared: Prepared) -> None:
        """Apply a prepared snapshot in the event loop; log and drop a bad one."""
        try:
            self._apply(prepared)
        except ProtocolError as err:
            _LOGGER.warning(
                "Dropped %s of terminal %s: %s",
                prepared.kind,
                prepared.terminal_id,
                err,
            )

    def _apply(self, prepared: Prepared) -> None:
        kind, terminal_id, snapshot = (
            prepared.kind,
            prepared.terminal_id,
            prepared.snapshot,
        )
        if prepared.error is not None:
            raise ProtocolError(prepared.error)
        if snapshot is None:  # a cleared retained message
            if kind is Kind.SKILLS:
                self._remove(terminal_id)
            elif (terminal := self._terminals.get(terminal_id)) is not None:
                terminal.catalog = None
                self._hold(terminal, kind, 0)
                self._notify(terminal, Change.UPDATED)
            return
        current = self._terminals.get(terminal_id)
        held = current.held_bytes.get(kind, 0) if current is not None else 0
        if self._held_bytes - held + prepared.size > MAX_HELD_BYTES:
            raise ProtocolError(
                f"the snapshots of all bodies would exceed {MAX_HELD_BYTES} bytes"
            )
        if isinstance(snapshot, SkillsSnapshot):
            terminal = self._terminal(terminal_id, register=True)
            self._skills(terminal, snapshot, prepared.skill_kinds)
        else:
            terminal = self._terminal(terminal_id)
            self._catalog(terminal, snapshot)
        self._hold(terminal, kind, prepared.size)

    def _hold(self, terminal: Terminal, kind: Kind, size: int) -> None:
        """Account for the payload bytes a terminal's snapshot of ``kind`` holds."""
        self._held_bytes += size - terminal.held_bytes.get(kind, 0)
        terminal.held_bytes[kind] = size

    def _forget(self, terminal_id: str) -> Terminal | None:
        """Drop a terminal from every index; return it."""
        terminal = self._terminals.pop(terminal_id, None)
        self._phantoms.pop(terminal_id, None)
        self._flips.forget(terminal_id)
        self._held.pop(terminal_id, None)
        self._churn.forget(terminal_id)
        if terminal is not None:
            self._held_bytes -= sum(terminal.held_bytes.values())
            self._skill_entities -= _entities(terminal.skill_kinds)
            if terminal.registered:
                self._registered -= 1
        return terminal

    def _terminal(self, terminal_id: str, *, register: bool = False) -> Terminal:
        """Return the terminal, creating it within the limits.

        ``register``: it is about to announce its skills. Ids that never did
        live in a small pool whose oldest member makes way for a new one;
        registered bodies make way only when stale or offline.
        """
        terminal = self._terminals.get(terminal_id)
        if terminal is not None and (terminal.registered or not register):
            return terminal
        if terminal is None and not valid_terminal_id(terminal_id):
            raise ProtocolError("invalid terminal id")
        if register:
            # Rare (skills arrive rate-limited): a scan is fine here.
            if self._registered >= self._max_terminals and not self._evict_stale():
                raise ProtocolError(
                    f"{self._max_terminals} bodies are registered and all are "
                    "online; ignoring new ones"
                )
        elif terminal is None and len(self._phantoms) >= MAX_UNREGISTERED:
            # Every message of a phantom flood lands here: O(1), no log line.
            self._forget(next(iter(self._phantoms)))
            self.forgotten += 1
        if terminal is None:
            terminal = self._terminals[terminal_id] = Terminal(terminal_id)
            self._phantoms[terminal_id] = None
        return terminal

    def _evict_stale(self) -> bool:
        """Forget the registered body that is stale or offline the longest."""
        candidates = [
            t for t in self._terminals.values() if t.registered and not t.available
        ]
        if not candidates:
            return False
        oldest = min(candidates, key=lambda t: t.last_seen or 0.0)
        _LOGGER.info(
            "Forgetting stale terminal %s to make room for a new body",
            oldest.terminal_id,
        )
        self._forget(oldest.terminal_id)
        return True

    @staticmethod
    def _log_availability(terminal: Terminal) -> None:
        """Log once when a body becomes unavailable and once when it is back."""
        if not terminal.available and not terminal.logged_unavailable:
            terminal.logged_unavailable = True
            _LOGGER.info(
                "Terminal %s is unavailable (%s)",
                terminal.terminal_id,
                "silent for too long" if terminal.stale else "offline",
            )
        elif terminal.available and terminal.logged_unavailable:
            terminal.logged_unavailable = False
            _LOGGER.info("Terminal %s is available again", terminal.terminal_id)

    def _seen(self, terminal: Terminal) -> bool:
        """Record activity; return whether the terminal came back from stale."""
        terminal.last_seen = self._clock()
        if not terminal.registered:
            self._phantoms.move_to_end(terminal.terminal_id)
        if terminal.stale:
            terminal.stale = False
            return True
        return False

    def _handle(self, kind: Kind, terminal_id: str, payload: bytes | str) -> None:
        if kind not in (Kind.ONLINE, Kind.HEARTBEAT):
            raise ProtocolError(
                f"{kind} is not a message bodies publish to the registry"
            )
        if is_empty(payload) and terminal_id not in self._terminals:
            return  # clearing something Soul never knew
        terminal = self._terminal(terminal_id)
        if kind is Kind.ONLINE:
            self._online(terminal, payload)
        else:
            if is_empty(payload):
                return
            came_back = self._seen(terminal)
            terminal.last_heartbeat = self._now()
            now = self._clock()
            if came_back:
                self._notify(terminal, Change.AVAILABILITY)
            elif now - terminal.heartbeat_told >= HEARTBEAT_TOLD_EVERY:
                # The heartbeat sensor writes each one told: a body may send
                # thousands a second.
                terminal.heartbeat_told = now
                self._notify(terminal, Change.HEARTBEAT)

    def _online(self, terminal: Terminal, payload: bytes | str) -> None:
        online = None if is_empty(payload) else parse_online(payload)
        came_back = self._seen(terminal)
        if online != terminal.online or came_back:
            terminal.online = online
            terminal_id = terminal.terminal_id
            # A body that flapped ``online`` 2,000 times made 12,000 state
            # writes (2.2 s of the event loop) and as many recorder rows:
            # ``FLIP_BURST`` changes are told at once, then one every
            # ``FLIP_REFILL`` seconds, the latest.
            if came_back or not self._flips.take(terminal_id):
                self._held.pop(terminal_id, None)
                self._notify(terminal, Change.AVAILABILITY)
            else:
                self._held[terminal_id] = None

    def release_held(self, limit: int | None = None) -> list[str]:
        """Tell the online changes that waited, as the terminals are now; return their ids.

        Each spends a change of its terminal (those with none left wait on).
        With ``limit``, at most that many are told: the caller calls again.
        """
        released: list[str] = []
        for terminal_id in list(self._held):
            if limit is not None and len(released) >= limit:
                break
            terminal = self._terminals.get(terminal_id)
            if terminal is None:
                del self._held[terminal_id]
            elif not self._flips.take(terminal_id):
                del self._held[terminal_id]
                released.append(terminal_id)
                self._notify(terminal, Change.AVAILABILITY)
        return released

    def _skills(
        self,
        terminal: Terminal,
        snapshot: SkillsSnapshot,
        kinds: Mapping[str, Profile | None],
    ) -> None:
        current = terminal.skills.skill_version if terminal.skills else None
        if not accept_version(current, snapshot.skill_version):
            raise ProtocolError(
                f"skill_version {snapshot.skill_version} would replace {current}; ignored"
            )
        for name, reason in snapshot.rejected:
            _LOGGER.warning(
                "Terminal %s: skill %s rejected: %s", terminal.terminal_id, name, reason
            )
        added = not terminal.registered
        came_back = self._seen(terminal)
        if added:
            self._phantoms.pop(terminal.terminal_id, None)
            self._registered += 1
        terminal.skills = snapshot
        self._skill_entities -= _entities(terminal.skill_kinds)
        kinds = self._churn.within(terminal.terminal_id, terminal.skill_kinds, kinds)
        terminal.skill_kinds = self._within_all(terminal.terminal_id, kinds)
        self._skill_entities += _entities(terminal.skill_kinds)
        self._notify(terminal, Change.ADDED if added else Change.UPDATED)
        if came_back and not added:
            self._notify(terminal, Change.AVAILABILITY)

    def _catalog(self, terminal: Terminal, snapshot: IntentCatalogSnapshot) -> None:
        current = terminal.catalog.catalog_version if terminal.catalog else None
        if not accept_version(current, snapshot.catalog_version):
            raise ProtocolError(
                f"catalog_version {snapshot.catalog_version} would replace {current}; ignored"
            )
        came_back = self._seen(terminal)
        terminal.catalog = snapshot
        self._notify(terminal, Change.UPDATED)
        if came_back:
            self._notify(terminal, Change.AVAILABILITY)

    def _remove(self, terminal_id: str) -> None:
        registered = (terminal := self._terminals.get(terminal_id)) is not None and (
            terminal.registered
        )
        terminal = self._forget(terminal_id)
        if terminal is not None and registered:
            _LOGGER.info("Terminal %s cleared its skills; removing it", terminal_id)
            self._notify(terminal, Change.REMOVED)

    def filter_command(
        self,
        terminal_id: str,
        request: Mapping[str, Any],
        *,
        default_timezone: str,
        held: list[Callable[[], None]] | None = None,
    ) -> dict[str, Any]:
        """Run the intent filter for a terminal's command and remember the decision.

        ``request`` is a §4.4.1 body; without ``intent_catalog`` the terminal's
        cached catalog is used. Raises ``IntentFilterError`` for bad requests.
        With ``held``, the listeners hear of the decision when the caller runs
        what it appended there, not at once.
        """
        terminal = self.get(terminal_id)
        if terminal is None:
            raise IntentFilterError(f"unknown terminal {terminal_id!r}")
        body = dict(request)
        compiled = None
        if "intent_catalog" not in body:
            if terminal.catalog is None or not terminal.catalog.intents:
                raise IntentFilterError(
                    f"terminal {terminal_id!r} has not published an intent_catalog"
                )
            body["intent_catalog"] = terminal.catalog.intents
            compiled = terminal.catalog.compiled
        response = filter_intents(
            body, default_timezone=default_timezone, compiled=compiled
        )
        business = [
            i for i in response["intents"] if not i["intent_id"].startswith("sys.")
        ]
        terminal.last_decision = Decision(
            action=response["decision"]["action"],
            reason=response["decision"]["reason"],
            trigger_intent_id=response["decision"].get("trigger_intent_id"),
            intent_ids=tuple(i["intent_id"] for i in business),
            confidence=response["intents"][0]["confidence"]
            if response["intents"]
            else None,
            at=self._now(),
        )
        if held is None:
            self._notify(terminal, Change.DECISION)
        else:
            held.append(partial(self._notify, terminal, Change.DECISION))
        return response

    def _within_all(
        self, terminal_id: str, kinds: Mapping[str, Profile | None]
    ) -> Mapping[str, Profile | None]:
        """Return ``kinds`` with entities only while all bodies hold few enough.

        ``_skill_entities`` counts the other terminals' (the caller took this
        one's out).
        """
        wanted = _entities(kinds)
        room = MAX_ALL_SKILL_ENTITIES - self._skill_entities
        if wanted <= room:
            return kinds
        _LOGGER.warning(
            "Terminal %s: %d of its skills get no entity: bodies' skills make at "
            "most %d entities in all; they stay callable",
            terminal_id,
            wanted - max(room, 0),
            MAX_ALL_SKILL_ENTITIES,
        )
        kept: dict[str, Profile | None] = {}
        for name, kind in kinds.items():
            keep = kind is not None and room > 0
            room -= keep
            kept[name] = kind if keep else None
        return kept

    def expire(self, limit: int | None = None) -> list[str]:
        """Mark terminals silent for longer than the TTL stale; return their ids.

        Ids that never announced skills are forgotten instead. With ``limit``,
        at most that many are marked (their entities change at once): the
        caller calls again for the rest.
        """
        now = self._clock()
        expired = []
        while self._phantoms:  # oldest first: stop at the first one still heard
            oldest = self._terminals[next(iter(self._phantoms))]
            if oldest.last_seen is not None and now - oldest.last_seen <= self.ttl:
                break
            self._forget(oldest.terminal_id)
        for terminal in self._terminals.values():
            if (
                not terminal.stale
                and terminal.last_seen is not None
                and now - terminal.last_seen > self.ttl
            ):
                terminal.stale = True
                expired.append(terminal.terminal_id)
                self._notify(terminal, Change.AVAILABILITY)
                if len(expired) == limit:
                    break
        return expired


def _entities(kinds: Mapping[str, Profile | None]) -> int:
    """Return how many of a terminal's skills are entities."""
    return sum(kind is not None for kind in kinds.values())
