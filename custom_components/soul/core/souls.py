"""Souls, their bindings to terminals, and their living emotion (HA-free).

``SoulHub`` keeps, per soul, the PAD state of ``emotion.dynamics`` and, per
terminal, the soul it is bound to. The glue feeds it the souls (Home
Assistant config subentries), calls ``tick`` every few seconds and
``user_turn`` when a user speaks, stores ``dump()`` and passes ``load()`` the
stored data on start. It publishes ``emotion_update`` (§3.8) itself and tells
subscribers what changed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
import json
from typing import Any

from . import stored
from .emotion import analyze_emotion
from .emotion.dynamics import (
    SoulState,
    apply_user_emotion,
    evolve,
    gate_of,
    initial_state,
    mood_of,
)
from .emotion.habituation import Habituation, source_of
from .emotion.labels import Emotion
from .logs import trace_logger
from .protocol import utc_ts
from .soul import MAX_NAME_LENGTH, NoSoulError, Soul, SoulError
from .soul_events import (
    EmotionSnapshot,
    SoulEvent,
    TickPayloads,
    tick_texts,
    update_payload,
)
from .soul_hints import HintDecision, forged, read_hint, taken
from .topics import QOS_RETAIN, Kind, Publish, Topics, valid_terminal_id

_LOGGER = trace_logger(__name__)

MAX_SOULS = 100  # souls of one hub, however they are created
MAX_SEEN = 4096  # terminal ids remembered as seen (their soul_hint was used)
MAX_BINDINGS = 4096  # terminals bound to souls, connected or not; the oldest go
HINT_SOUL_INTERVAL = 60.0  # seconds between souls created from bodies' hints
# How strongly the emotion a soul says it feels moves it (a user's: up to 1).
EXPRESSED_INTENSITY = 0.3
TICK_CHUNK = 64  # souls a tick publishes to before it yields to the event loop
_EMOTION_UPDATE_QOS_RETAIN = QOS_RETAIN[Kind.EMOTION_UPDATE]

type Recognizer = Callable[[str], Mapping[str, Any]]
type Listener = Callable[[SoulEvent], None]


def _not_published(terminal_id: str, err: Exception) -> None:
    """Log a failed ``emotion_update``: the broker is down or the transport refused.

    One line, no traceback; the other bodies still get theirs.
    """
    _LOGGER.warning("Could not publish emotion_update to %s: %s", terminal_id, err)


class SoulHub:
    """Souls, bindings and emotion states, with ``emotion_update`` publishing."""

    def __init__(
        self,
        topics: Topics,
        publish: Publish,
        *,
        clock: Callable[[], float],
        is_online: Callable[[str], bool],
        recognize: Recognizer | None = None,
        on_dirty: Callable[[], None] = lambda: None,
    ) -> None:
        """Publish through ``publish``; read time from ``clock`` (epoch seconds)."""
        if recognize is None:
            recognize = analyze_emotion
        self._topics = topics
        self._publish = publish
        self._clock = clock
        self._is_online = is_online
        self._recognize = recognize
        self._on_dirty = on_dirty
        self._souls: dict[str, Soul] = {}
        self._states: dict[str, SoulState] = {}
        # How used each soul is to each source's negative input.
        self._habituation = Habituation()
        self._stored_states: dict[str, Any] = {}
        self._bindings: dict[str, str] = {}
        # Terminal ids whose first connection was handled, oldest first.
        self._seen: dict[str, None] = {}
        self._last_hint_soul = float("-inf")
        # Listeners of every event, of one soul's, of one terminal's user turns.
        self._listeners: list[Listener] = []
        self._soul_listeners: dict[str, list[Listener]] = {}
        self._terminal_listeners: dict[str, list[Listener]] = {}
        self._binding_listeners: list[Callable[[], None]] = []
        # Listeners of one terminal's binding (and of the souls): a bind tells
        # only its terminal's, not every body's (a start binds hundreds).
        self._binding_listeners_of: dict[str, list[Callable[[], None]]] = {}
        # Grows whenever the set of souls (or a name) changes: a cheap "same
        # souls as before?" for listeners told of every binding.
        self.souls_version = 0
        self._last: dict[str, EmotionSnapshot] = {}
        # Terminal id → its emotion_update topic (the prefix never changes);
        # ids, timestamps → their JSON: what every tick would compute again.
        self._update_topics: dict[str, str] = {}
        self._json: dict[str, str] = {}

    # -- storage -----------------------------------------------------------

    def load(self, data: Any) -> None:
        """Take stored data (``dump()``'s); malformed parts are dropped."""
        if not isinstance(data, dict):
            return
        bindings = data.get("bindings")
        if isinstance(bindings, dict):
            self._bindings = {
                t: s
                for t, s in stored.newest(bindings, MAX_BINDINGS)
                if isinstance(t, str)
                and valid_terminal_id(t)
                and stored.ident(s) is not None
            }
        seen = data.get("seen")
        if isinstance(seen, list):
            self._seen = dict.fromkeys(
                t
                for t in seen[-MAX_SEEN:]
                if isinstance(t, str) and valid_terminal_id(t)
            )
        states = data.get("states")
        if isinstance(states, dict):  # read when their souls are set
            self._stored_states = dict(stored.newest(states, MAX_SOULS))

    def dump(self) -> dict[str, Any]:
        """Return everything worth keeping across restarts."""
        return {
            "bindings": dict(self._bindings),
            "seen": list(self._seen),
            "states": {
                soul_id: state.as_dict() for soul_id, state in self._states.items()
            },
        }

    # -- souls and bindings ---------------------------------------------------

    def set_souls(self, souls: Iterable[Soul]) -> None:
        """Make ``souls`` the known souls: new ones get a state, gone ones lose theirs.

        A new soul with a stored state resumes it, aged by the time since it
        was stored (recovery and boredom over the downtime).
        """
        now = self._clock()
        fresh = {soul.soul_id: soul for soul in souls}
        for soul_id in self._souls.keys() - fresh.keys():
            self._states.pop(soul_id, None)
            self._last.pop(soul_id, None)
            self._habituation.forget_soul(soul_id)
        for soul_id, soul in fresh.items():
            if soul_id in self._states:
                continue
            # A Pi's clock may start a little behind what was stored: such a
            # time stays, and the soul ages exactly once the clock catches up.
            # One further ahead is damaged: the soul lives on from now (a day
            # ahead left it unchanged for that day).
            raw = self._stored_states.pop(soul_id, None)
            cooldown = soul.persona.shock_cooldown
            saved = SoulState.from_dict(raw, now + stored.CLOCK_SLACK, cooldown)
            if saved is not None and saved.at >= now + stored.CLOCK_SLACK:
                saved = SoulState.from_dict(raw, now, cooldown)
            self._states[soul_id] = (
                initial_state(soul.persona, now)
                if saved is None
                else evolve(saved, soul.persona, now)
            )
        self._souls = fresh
        self.souls_version += 1
        before = len(self._bindings)
        self._bindings = {t: s for t, s in self._bindings.items() if s in fresh}
        if len(self._bindings) != before:
            _LOGGER.info(
                "Unbound %d terminals from removed souls", before - len(self._bindings)
            )
        self._call(self._binding_listeners)
        for listeners in list(self._binding_listeners_of.values()):
            self._call(listeners)
        self._on_dirty()

    @property
    def souls(self) -> Mapping[str, Soul]:
        """Return the souls by id."""
        return self._souls

    def soul(self, soul_id: str) -> Soul | None:
        """Return a soul by id."""
        return self._souls.get(soul_id)

    def bindings(self) -> Mapping[str, str]:
        """Return terminal id → soul id."""
        return dict(self._bindings)

    def soul_of(self, terminal_id: str) -> Soul | None:
        """Return the soul a terminal is bound to."""
        soul_id = self._bindings.get(terminal_id)
        return None if soul_id is None else self._souls.get(soul_id)

    def terminals_of(self, soul_id: str) -> list[str]:
        """Return the terminals bound to a soul."""
        return sorted(t for t, s in self._bindings.items() if s == soul_id)

    def bind(self, terminal_id: str, soul_id: str) -> None:
        """Bind a terminal (connected or not yet) to a soul."""
        if not isinstance(terminal_id, str) or not valid_terminal_id(terminal_id):
            raise SoulError(f"invalid terminal_id {terminal_id!r}")
        if soul_id not in self._souls:
            raise SoulError(f"unknown soul_id {soul_id!r}")
        self._bindings.pop(terminal_id, None)  # the newest binding, last
        self._bindings[terminal_id] = soul_id
        unbound = []
        while len(self._bindings) > MAX_BINDINGS:  # the least recently bound goes
            unbound.append(oldest := next(iter(self._bindings)))
            del self._bindings[oldest]
        self._see(terminal_id)
        self._on_dirty()
        self._call(self._binding_listeners)
        for terminal in (*unbound, terminal_id):
            self._call(self._binding_listeners_of.get(terminal, []))

    def subscribe_bindings(
        self, listener: Callable[[], None], terminal_id: str | None = None
    ) -> Callable[[], None]:
        """Call ``listener`` when the souls change, and when a binding changes.

        With ``terminal_id``, only that terminal's binding; else any. Return
        the function that ends the subscription.
        """
        if terminal_id is None:
            listeners = self._binding_listeners
        else:
            listeners = self._binding_listeners_of.setdefault(terminal_id, [])
        listeners.append(listener)

        def unsubscribe() -> None:
            listeners.remove(listener)
            by_terminal = self._binding_listeners_of
            if (
                terminal_id is not None
                and not listeners
                and by_terminal.get(terminal_id) is listeners
            ):
                del by_terminal[terminal_id]

        return unsubscribe

    @staticmethod
    def _call(listeners: list[Callable[[], None]]) -> None:
        for listener in list(listeners):
            try:
                listener()
            except Exception:
                _LOGGER.exception("Error in a soul binding listener")

    def first_connection(
        self,
        terminal_id: str,
        hint: str | None,
        *,
        visible: Callable[[Soul], bool] = lambda _soul: True,
        may_create: bool = True,
    ) -> HintDecision | None:
        """Return what a terminal's ``soul_hint`` asks for on its first connection.

        Only the first connection counts, and only for an unbound terminal:
        afterwards (or once the user bound it) the hint is ignored. The decision
        picks a soul whose id, name or MBTI type equals the hint, or asks for a
        new soul named after the hint. A chat's caller matches only the souls
        it may see (``visible``), and may be refused new souls
        (``may_create``): such a refusal leaves the terminal's first contact
        to the body. A hint naming a soul it may not see picks nothing and
        creates nothing.
        """
        if terminal_id in self._seen or terminal_id in self._bindings:
            return None
        if not hint or not hint.strip():
            self._see(terminal_id)
            self._on_dirty()
            return None
        hint = hint.strip()[:MAX_NAME_LENGTH]
        decision = read_hint(hint, (s for s in self._souls.values() if visible(s)))
        if decision.soul_id is None and not may_create:
            return None
        self._see(terminal_id)
        self._on_dirty()
        if decision.soul_id is not None:
            return decision
        name = decision.name or hint
        # A soul the hint may not pick is not copied either.
        if taken(name, self._souls.values()):
            _LOGGER.info(
                "Ignored the soul_hint of %s: it names a soul the body may not use",
                terminal_id,
            )
            return None
        if forged(name):
            _LOGGER.warning(
                "Ignored the soul_hint of %s: it is not a name (only words, "
                "emoji and the marks that join words), it shows nothing, or a "
                "word of it mixes alphabets, as a lookalike of another name would",
                terminal_id,
            )
            return None
        # A new soul: bodies may not flood the configuration with them.
        now = self._clock()
        if (
            len(self._souls) >= MAX_SOULS
            or now - self._last_hint_soul < HINT_SOUL_INTERVAL
        ):
            _LOGGER.warning(
                "Ignored the soul_hint of %s: souls are created from hints at "
                "most once a minute and up to %d souls",
                terminal_id,
                MAX_SOULS,
            )
            del self._seen[terminal_id]  # a later connection may try again
            return None
        self._last_hint_soul = now
        return decision

    def _see(self, terminal_id: str) -> None:
        """Remember a terminal as seen (the oldest ids are forgotten past MAX_SEEN)."""
        self._seen.pop(terminal_id, None)
        self._seen[terminal_id] = None
        while len(self._seen) > MAX_SEEN:
            del self._seen[next(iter(self._seen))]

    # -- emotion --------------------------------------------------------------

    def subscribe(
        self,
        listener: Listener,
        *,
        soul_id: str | None = None,
        terminal_id: str | None = None,
    ) -> Callable[[], None]:
        """Call ``listener`` with every ``SoulEvent``; return the unsubscriber.

        With ``soul_id``, only that soul's events; with ``terminal_id``, only
        the user turns spoken through that terminal. A tick tells every soul's
        listeners, so an entity of one soul or one body listens to its own:
        a thousand of them are not called for each of a thousand souls.
        """
        if soul_id is not None:
            listeners = self._soul_listeners.setdefault(soul_id, [])
        elif terminal_id is not None:
            listeners = self._terminal_listeners.setdefault(terminal_id, [])
        else:
            listeners = self._listeners
        listeners.append(listener)

        def unsubscribe() -> None:
            listeners.remove(listener)
            for by_key, key in (
                (self._soul_listeners, soul_id),
                (self._terminal_listeners, terminal_id),
            ):
                if key is not None and not listeners and by_key.get(key) is listeners:
                    del by_key[key]

        return unsubscribe

    def snapshot(self, soul_id: str) -> EmotionSnapshot | None:
        """Return the soul's emotion as of its last evolution."""
        if (soul := self._souls.get(soul_id)) is None:
            return None
        return self._snapshot(soul, self._states[soul_id])

    @staticmethod
    def _snapshot(soul: Soul, state: SoulState) -> EmotionSnapshot:
        p, a, d, now, _last_input_at, shock_until = state
        shocked = shock_until > now
        probability, mode = gate_of(p, a, d, shocked)
        return EmotionSnapshot(
            soul.soul_id,
            # labels.rounded, inlined: a tick takes a thousand snapshots.
            round(p, 3) + 0.0,
            round(a, 3) + 0.0,
            round(d, 3) + 0.0,
            round(probability, 3),
            mode,
            mood_of(p, a, d),
            shocked,
            now,
        )

    async def _send(self, payload: dict[str, Any]) -> bool:
        """Publish ``payload`` to its terminal."""
        return await self._send_text(
            payload["terminal_id"], json.dumps(payload, ensure_ascii=False)
        )

    async def _send_text(self, terminal_id: str, body: str) -> bool:
        """Publish ``body`` as the ``emotion_update`` of ``terminal_id``."""
        try:
            await self._publish(
                self._update_topic(terminal_id), body, *_EMOTION_UPDATE_QOS_RETAIN
            )
        except Exception as err:  # noqa: BLE001 - one failed publish must not stop the rest
            _not_published(terminal_id, err)
            return False
        return True

    def _update_topic(self, terminal_id: str) -> str:
        """Return the ``emotion_update`` topic of ``terminal_id`` (cached)."""
        if (topic := self._update_topics.get(terminal_id)) is None:
            topic = self._topics.topic(terminal_id, Kind.EMOTION_UPDATE)
            if len(self._update_topics) >= MAX_SEEN:
                self._update_topics.clear()
            self._update_topics[terminal_id] = topic
        return topic

    def _notify(self, event: SoulEvent) -> None:
        self._last[event.soul_id] = event.snapshot
        listeners = [*self._listeners, *self._soul_listeners.get(event.soul_id, ())]
        if event.terminal_id is not None:
            listeners.extend(self._terminal_listeners.get(event.terminal_id, ()))
        for listener in listeners:
            try:
                listener(event)
            except Exception:
                _LOGGER.exception("Error in a soul listener")

    def _as_json(self, text: str) -> str:
        """Return ``json.dumps(text, ensure_ascii=False)``, cached (ids, ``ts``)."""
        if (encoded := self._json.get(text)) is None:
            if len(self._json) >= 2 * MAX_SEEN:
                self._json.clear()
            encoded = self._json[text] = json.dumps(text, ensure_ascii=False)
        return encoded

    async def tick(self) -> None:
        """Evolve every soul to now and publish to its online terminals (§3.8).

        Soul by soul: its state moves to now, its ``emotion_update`` goes to
        each of its online terminals (sorted by id), then its listeners are
        told. The hub is marked dirty (persisted) once. Every ``TICK_CHUNK``
        souls the tick yields to the event loop, so a thousand souls and
        bodies never hold it at once, even when ``publish`` returns without
        waiting.
        """
        now = self._clock()
        is_online = self._is_online
        online: dict[str, list[str]] = {}
        for terminal_id, soul_id in self._bindings.items():
            if is_online(terminal_id):
                online.setdefault(soul_id, []).append(terminal_id)
        states, last, snapshot_of = self._states, self._last, self._snapshot
        notify, as_json, topic_of = self._notify, self._as_json, self._update_topic
        publish = self._publish
        qos, retain = _EMOTION_UPDATE_QOS_RETAIN
        ts_at, ts = float("nan"), ""
        self._on_dirty()
        for count, (soul_id, soul) in enumerate(list(self._souls.items()), 1):
            if count % TICK_CHUNK == 0:
                await asyncio.sleep(0)
            if (state := states.get(soul_id)) is None:
                continue  # removed while the tick yielded
            state = states[soul_id] = evolve(state, soul.persona, now)
            snapshot = snapshot_of(soul, state)
            published: Sequence[dict[str, Any]] = ()
            if terminals := online.get(soul_id):
                if snapshot.at != ts_at:
                    ts_at, ts = snapshot.at, utc_ts(snapshot.at)
                terminals.sort()
                texts = tick_texts(snapshot, terminals, ts, as_json)
                sent = []
                # ``_send_text``, inline: a coroutine fewer for each of a
                # thousand bodies.
                for terminal_id, text in zip(terminals, texts, strict=True):
                    try:
                        await publish(topic_of(terminal_id), text, qos, retain)
                    except Exception as err:  # noqa: BLE001 - as _send_text
                        _not_published(terminal_id, err)
                    else:
                        sent.append(terminal_id)
                if sent:
                    published = TickPayloads(snapshot, sent, ts)
            # Positional (in field order): cheaper than by keyword.
            notify(
                SoulEvent(soul_id, snapshot, last.get(soul_id), None, None, published)
            )

    def express(
        self, soul_id: str, emotion: Emotion, intensity: float = EXPRESSED_INTENSITY
    ) -> EmotionSnapshot | None:
        """Move a soul by the emotion it said it feels (the F-brain's, §3.1).

        A gentler pull than a user's emotion; nothing is published (the next
        tick carries it). Returns the new snapshot, None for an unknown soul.
        """
        if (soul := self._souls.get(soul_id)) is None:
            return None
        state = self._states[soul_id] = apply_user_emotion(
            self._states[soul_id], soul.persona, emotion, intensity, self._clock()
        )
        self._on_dirty()
        snapshot = self._snapshot(soul, state)
        self._notify(SoulEvent(soul_id, snapshot, self._last.get(soul_id)))
        return snapshot

    def nudge(self, soul_id: str, delta: Mapping[str, float]) -> EmotionSnapshot | None:
        """Shift a soul's PAD by ``delta`` (``p``, ``a``, ``d``; the navigator's).

        Each axis stays within -1..1; nothing is published (the next tick
        carries it). Returns the new snapshot, None for an unknown soul.
        """
        if (soul := self._souls.get(soul_id)) is None:
            return None
        state = evolve(self._states[soul_id], soul.persona, self._clock())
        state = self._states[soul_id] = state._replace(
            p=max(-1.0, min(1.0, state.p + delta.get("p", 0.0))),
            a=max(-1.0, min(1.0, state.a + delta.get("a", 0.0))),
            d=max(-1.0, min(1.0, state.d + delta.get("d", 0.0))),
        )
        self._on_dirty()
        snapshot = self._snapshot(soul, state)
        self._notify(SoulEvent(soul_id, snapshot, self._last.get(soul_id)))
        return snapshot

    async def user_turn(
        self,
        terminal_id: str | None,
        text: str,
        session_id: str,
        *,
        soul_id: str | None = None,
        trace_id: str | None = None,
        user_id: str | None = None,
        source: str | None = None,
        held: list[Callable[[], None]] | None = None,
    ) -> tuple[dict[str, Any], EmotionSnapshot]:
        """Recognise the user's emotion, move the bound soul, publish to the terminal.

        Without a terminal, ``soul_id`` names the soul (one spoken to without
        a body) and nothing is published. Returns the recognised
        ``user_emotion`` and the soul's new snapshot; raises ``NoSoulError``
        when there is no soul. With ``held``, the listeners are told when
        the caller runs what it appended there (after the turn's messages
        left), not at once. ``source`` names who spoke, for the soul's
        habituation (``emotion.habituation.source_of``; by default the user,
        else the terminal).
        """
        soul = (
            self.soul_of(terminal_id) if terminal_id else self._souls.get(soul_id or "")
        )
        if soul is None:
            raise NoSoulError("soul selection is required before chat")
        user_emotion = dict(self._recognize(text))
        try:
            label = Emotion(user_emotion.get("emotion", ""))
            intensity = float(user_emotion.get("intensity", 0.0))
        except (TypeError, ValueError):
            label, intensity = Emotion.NEUTRAL, 0.0
        now = self._clock()
        # The soul is moved by what it feels: less by a source that keeps
        # upsetting it (``emotion.habituation``); ``user_emotion`` stays
        # what was recognised.
        if source is None:
            source = source_of(user_id, terminal_id)
        felt = self._habituation.felt(soul.soul_id, source, label, intensity, now)
        state = self._states[soul.soul_id] = apply_user_emotion(
            self._states[soul.soul_id],
            soul.persona,
            label,
            felt.mood,
            now,
            shock_intensity=felt.shock,
        )
        self._on_dirty()
        snapshot = self._snapshot(soul, state)
        sent: tuple[dict[str, Any], ...] = ()
        # Nothing for a body that is not there (as the ticks, §3.8).
        if terminal_id and self._is_online(terminal_id):
            payload = update_payload(
                snapshot,
                terminal_id,
                session_id=session_id,
                user_emotion=user_emotion,
                ts=utc_ts(snapshot.at),
            )
            sent = (payload,) if await self._send(payload) else ()
        event = SoulEvent(
            soul.soul_id,
            snapshot,
            self._last.get(soul.soul_id),
            terminal_id=terminal_id or None,
            user_emotion=user_emotion,
            published=sent,
            trace_id=trace_id,
            user_id=user_id,
        )
        if held is None:
            self._notify(event)
        else:
            self._last[soul.soul_id] = snapshot
            held.append(partial(self._notify_held, event))
        return user_emotion, snapshot

    def _notify_held(self, event: SoulEvent) -> None:
        """Tell a turn's held event, with the newest snapshot if a tick came since."""
        latest = self._last.get(event.soul_id, event.snapshot)
        self._notify(
            event if latest is event.snapshot else event._replace(snapshot=latest)
        )
