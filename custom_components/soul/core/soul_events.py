"""What a soul's emotion is at one moment, and the ``emotion_update`` a tick sends (HA-free).

``EmotionSnapshot`` is a soul's emotion as everyone reads it (entities, the
panel, the model's prompt); ``SoulEvent`` tells ``SoulHub``'s subscribers that
it changed and what was published. Both are named tuples rather than frozen
dataclasses: as immutable, and three times cheaper to make, since a tick makes
both for every soul every few seconds.

A tick's ``emotion_update`` texts are written from a template
(``tick_texts``, equal to ``json.dumps`` byte for byte) and its payload dicts
are made only when a subscriber reads them (``TickPayloads``): most ticks
nobody does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
import json
import math
from typing import Any, NamedTuple, overload

from .emotion.dynamics import ExecMode, Mood
from .protocol import SYSTEM_DECAY_TICK, emotion_update_payload

NEUTRAL_USER_EMOTION: dict[str, Any] = {
    "emotion": "neutral",
    "p": 0.0,
    "a": 0.0,
    "d": 0.0,
    "intensity": 0.0,
}
_NEUTRAL_JSON = json.dumps(NEUTRAL_USER_EMOTION, ensure_ascii=False)
_HEAD = f'{{"session_id": "{SYSTEM_DECAY_TICK}", "terminal_id": '


class EmotionSnapshot(NamedTuple):
    """What a soul feels now and what that means for execution."""

    soul_id: str
    p: float
    a: float
    d: float
    exec_probability: float
    exec_mode: ExecMode
    mood: Mood
    shocked: bool
    at: float

    def soul_emotion(self) -> dict[str, float]:
        """Return §3.8's ``soul_emotion`` object."""
        return {"p": self.p, "a": self.a, "d": self.d}

    def as_dict(self) -> dict[str, Any]:
        """Return the snapshot for APIs and diagnostics."""
        return {
            **self.soul_emotion(),
            "mood": self.mood.value,
            "exec_probability": self.exec_probability,
            "exec_mode": self.exec_mode.value,
            "shocked": self.shocked,
        }


class SoulEvent(NamedTuple):
    """One change of a soul, for subscribers (entities, bus events, triggers)."""

    soul_id: str
    snapshot: EmotionSnapshot
    previous: EmotionSnapshot | None
    # Set for a user turn: the terminal and the recognised emotion.
    terminal_id: str | None = None
    user_emotion: Mapping[str, Any] | None = None
    # Every emotion_update published for this change.
    published: Sequence[dict[str, Any]] = ()
    # The user turn's trace id (the event journal's), if any.
    trace_id: str | None = None
    # The Home Assistant user who spoke, for a user turn (None: a body, Soul).
    user_id: str | None = None


def update_payload(
    snapshot: EmotionSnapshot,
    terminal_id: str,
    *,
    session_id: str,
    user_emotion: Mapping[str, Any],
    ts: str,
) -> dict[str, Any]:
    """Return the ``emotion_update`` (§3.8) of ``snapshot`` to ``terminal_id``."""
    return emotion_update_payload(
        session_id=session_id,
        terminal_id=terminal_id,
        soul_id=snapshot.soul_id,
        user_emotion=user_emotion,
        soul_emotion=snapshot.soul_emotion(),
        exec_probability=snapshot.exec_probability,
        exec_mode=snapshot.exec_mode.value,
        ts=ts,
    )


def tick_payload(
    snapshot: EmotionSnapshot, terminal_id: str, ts: str
) -> dict[str, Any]:
    """Return the ``emotion_update`` a tick sends ``terminal_id`` (§3.8)."""
    return update_payload(
        snapshot,
        terminal_id,
        session_id=SYSTEM_DECAY_TICK,
        user_emotion=NEUTRAL_USER_EMOTION,
        ts=ts,
    )


def tick_texts(
    snapshot: EmotionSnapshot,
    terminals: Sequence[str],
    ts: str,
    as_json: Callable[[str], str],
) -> list[str]:
    """Return the JSON text of ``tick_payload`` to each of ``terminals``.

    Each is ``json.dumps(payload, ensure_ascii=False)`` byte for byte, written
    from a template (``tests/core/test_souls.py`` compares the two).
    ``as_json`` returns a string's JSON (cached by the caller: ids, ``ts``).
    """
    p, a, d = snapshot.p, snapshot.a, snapshot.d
    probability = snapshot.exec_probability
    if not math.isfinite(p + a + d + probability):  # json writes NaN, Infinity
        return [
            json.dumps(tick_payload(snapshot, terminal_id, ts), ensure_ascii=False)
            for terminal_id in terminals
        ]
    # float.__repr__ is json's float format.
    tail = (
        f', "soul_id": {as_json(snapshot.soul_id)}, "user_emotion": {_NEUTRAL_JSON}, '
        f'"soul_emotion": {{"p": {p!r}, "a": {a!r}, "d": {d!r}}}, '
        f'"exec_probability": {probability!r}, "exec_mode": "{snapshot.exec_mode.value}", '
        f'"ts": {as_json(ts)}}}'
    )
    return [_HEAD + as_json(terminal_id) + tail for terminal_id in terminals]


class TickPayloads(Sequence[dict[str, Any]]):
    """The ``emotion_update`` payloads a tick sent to a soul's bodies, made when read."""

    __slots__ = ("_snapshot", "_terminals", "_ts")

    def __init__(
        self, snapshot: EmotionSnapshot, terminals: Sequence[str], ts: str
    ) -> None:
        """Hold what the payloads are made of: one per terminal, in order."""
        self._snapshot = snapshot
        self._terminals = terminals
        self._ts = ts

    def __len__(self) -> int:
        """Return how many bodies were sent one."""
        return len(self._terminals)

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        """Return the payload (a new dict) of one terminal, or a list of a slice."""
        if isinstance(index, slice):
            return [
                tick_payload(self._snapshot, t, self._ts)
                for t in self._terminals[index]
            ]
        return tick_payload(self._snapshot, self._terminals[index], self._ts)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """Return the payloads in order."""
        snapshot, ts = self._snapshot, self._ts
        return (tick_payload(snapshot, t, ts) for t in self._terminals)

    def __eq__(self, other: object) -> bool:
        """Compare as the list of payloads (a tuple or list of dicts equals it)."""
        if isinstance(other, (TickPayloads, list, tuple)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # like a list

    def __repr__(self) -> str:
        """Return the payloads as a list would show them."""
        return repr(list(self))
