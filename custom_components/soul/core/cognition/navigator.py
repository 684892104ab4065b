"""The S-brain (XingChen-V §3.2): a navigator that reflects, never on the reply path.

``Navigator.after_turn`` counts a soul's user turns and starts a run in the
background on every ``every_turns``-th turn and on a strong emotion swing in
one turn (|ΔPAD| above ``swing``); ``ChatPipeline.summarize_idle`` runs it
when a session goes idle, before the session is archived. One run per soul
at a time, within ``timeout``. The navigator model reads the recent turns,
the soul's psyche, the user's profile and recalled memories and answers the
spec's JSON ``{"suggestion", "psyche_delta", "memory_archival",
"evolution_request"}``:

- ``suggestion`` joins the F-brain's prompts for the next
  ``SUGGESTION_TURNS`` model turns of the session it was drawn from, never
  another's: it may repeat what that user said (a ``navigator_suggestion``
  event);
- ``psyche_delta`` moves the PAD, each axis by at most ``MAX_DELTA`` (a
  ``psyche_update`` with reason ``navigator``);
- ``memory_archival: true`` archives the session now;
- ``evolution_request`` becomes a ``system_notification`` and the glue's
  Home Assistant event.

Failures and timeouts are journalled (``system_notification``), never shown
to the user.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
import json
import math
from typing import Any

from .. import untrusted
from ..chat_tools import ChatModel
from ..llm import LLMError, LLMRequestRejectedError
from ..logs import trace_logger, traced
from ..memory.base import MemoryBackendError
from ..memory.manager import MemoryManager
from ..session import Session
from ..soul_events import EmotionSnapshot
from ..souls import SoulHub
from .driver import unfence
from .events import EventBus, EventType, Source, new_trace_id
from .notices import WARNING, notice
from .profiles import ProfileStore
from .trace import TurnTrace, pad_delta, psyche_state

_LOGGER = trace_logger(__name__)

DEFAULT_EVERY_TURNS = 5
DEFAULT_SWING = 0.5
DEFAULT_TIMEOUT = 20.0
SUGGESTION_TURNS = 3
MAX_HELD_SUGGESTIONS = 256  # sessions whose suggestion waits for their next turn
MAX_DELTA = 0.2  # per axis, per run
MAX_SUGGESTION = 500
MAX_EVOLUTION = 200
MAX_SKILL = 300
RECENT_TURNS = 10
NAVIGATOR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "suggestion": {"type": "string"},
        "psyche_delta": {
            "type": "object",
            "properties": {
                "pleasure": {"type": "number"},
                "arousal": {"type": "number"},
                "dominance": {"type": "number"},
            },
            "required": ["pleasure", "arousal", "dominance"],
            "additionalProperties": False,
        },
        "memory_archival": {"type": "boolean"},
        "evolution_request": {"type": ["string", "null"]},
        "skill": {"type": ["string", "null"]},
    },
    "required": [
        "suggestion",
        "psyche_delta",
        "memory_archival",
        "evolution_request",
        "skill",
    ],
    "additionalProperties": False,
}
RESPONSE_FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {
        "name": "soul_navigator",
        "schema": NAVIGATOR_SCHEMA,
        "strict": True,
    },
}
PROMPT = (
    "You are the navigator of a soul: its slower, reflective mind. You never "
    "talk to the user. Read the conversation, the soul's emotional state, what "
    "it knows about the user and its memories, and answer with one JSON object "
    'and nothing else: {"suggestion": a short tactical hint for how the soul '
    'should talk next (or ""), "psyche_delta": {"pleasure", "arousal", '
    '"dominance"}: small corrections of its emotion between -0.2 and 0.2, '
    '"memory_archival": true when this conversation holds something worth '
    'remembering now, "evolution_request": a short name of an ability the soul '
    "lacks and should gain (e.g. need_calendar_tool), or null}."
)
_AXES = {
    "pleasure": "p",
    "arousal": "a",
    "dominance": "d",
    "p": "p",
    "a": "a",
    "d": "d",
}


@dataclass(frozen=True, slots=True)
class Advice:
    """A navigator's answer, checked and bounded."""

    suggestion: str | None = None
    psyche_delta: dict[str, float] = field(default_factory=dict)
    memory_archival: bool = False
    evolution_request: str | None = None
    skill: str | None = None


def parse_advice(content: str) -> Advice | None:
    """Return the navigator's JSON, bounded; None when it is not that JSON."""
    text = unfence(content)
    try:
        value = untrusted.loads(text, max_bytes=64 * 1024, repair=True)
    except untrusted.UntrustedInputError:
        return None
    if not isinstance(value, dict):
        return None
    suggestion = value.get("suggestion")
    delta: dict[str, float] = {}
    raw_delta = value.get("psyche_delta")
    if isinstance(raw_delta, dict):
        for key, amount in raw_delta.items():
            axis = _AXES.get(str(key).lower())
            if (
                axis is not None
                and isinstance(amount, int | float)
                and not isinstance(amount, bool)
                and not (isinstance(amount, float) and not math.isfinite(amount))
            ):
                # Clamped before it becomes a float: an integer of 400 digits
                # compares fine, and would overflow a float.
                delta[axis] = float(max(-MAX_DELTA, min(MAX_DELTA, amount)))
    evolution = value.get("evolution_request")
    skill = value.get("skill")
    return Advice(
        suggestion=(
            untrusted.clean(suggestion, MAX_SUGGESTION, multiline=False).strip() or None
            if isinstance(suggestion, str)
            else None
        ),
        psyche_delta=delta,
        memory_archival=value.get("memory_archival") is True,
        evolution_request=(
            untrusted.clean(evolution, MAX_EVOLUTION, multiline=False).strip() or None
            if isinstance(evolution, str)
            else None
        ),
        skill=(
            untrusted.clean(skill, MAX_SKILL, multiline=False).strip() or None
            if isinstance(skill, str)
            else None
        ),
    )


class Navigator:
    """Starts, runs and applies the S-brain for every soul."""

    def __init__(
        self,
        souls: SoulHub,
        *,
        model: Callable[[], ChatModel | None],
        events: Callable[[], EventBus | None],
        memory: Callable[[], MemoryManager | None],
        profiles: Callable[[], ProfileStore | None],
        clock: Callable[[], float],
        spawn: Callable[[Coroutine[Any, Any, Any]], Any],
        archive: Callable[[Session], Awaitable[None]],
        on_evolution: Callable[[str, str, str | None], None] = lambda _s, _r, _u: None,
        every_turns: int = DEFAULT_EVERY_TURNS,
        swing: float = DEFAULT_SWING,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        """Wire the navigator; every collaborator is injectable for tests."""
        self._souls = souls
        self._model = model
        self._events = events
        self._memory = memory
        self._profiles = profiles
        self._clock = clock
        self._spawn = spawn
        self._archive = archive
        self._on_evolution = on_evolution
        self.every_turns = max(1, every_turns)
        self.swing = swing
        self.timeout = timeout
        self._turns: dict[str, int] = {}
        self._running: set[str] = set()
        # Session id → [suggestion, model turns left, user id, soul id],
        # oldest first.
        self._suggestions: dict[str, list[Any]] = {}
        self.structured: bool | None = None
        self.runs = 0
        self.failures = 0

    # -- triggers ------------------------------------------------------------

    def after_turn(
        self,
        session: Session,
        before: EmotionSnapshot | None,
        after: EmotionSnapshot,
    ) -> str | None:
        """Count a user turn; start a run when one is due. Return its reason."""
        soul_id = session.soul_id
        count = self._turns[soul_id] = self._turns.get(soul_id, 0) + 1
        reason = None
        if before is not None and (
            math.dist((before.p, before.a, before.d), (after.p, after.a, after.d))
            > self.swing
        ):
            reason = "emotion_swing"
        elif count % self.every_turns == 0:
            reason = "turns"
        if reason is not None and self._model() is not None:
            self._spawn(self.run(session, reason))
        return reason

    def suggestion_for(self, session: Session) -> str | None:
        """Return the session's current suggestion for one more model turn, if any.

        A suggestion is drawn from one session (its user's words, profile and
        memories) and given to that session only, while it is the same
        user's with the same soul: keyed by soul, the next turns of every
        user of a shared soul read it (black box, 2026-11-29), and a session
        id a body chose ("default") may later be another user's.
        """
        held = self._suggestions.get(session.session_id)
        if not held:
            return None
        text, left, user_id, soul_id = held
        if (user_id, soul_id) != (session.user_id, session.soul_id):
            del self._suggestions[session.session_id]
            return None
        if left <= 1:
            del self._suggestions[session.session_id]
        else:
            held[1] = left - 1
        return str(text)

    # -- a run ----------------------------------------------------------------

    async def run(self, session: Session, reason: str) -> Advice | None:
        """Reflect on a session once (one run per soul at a time); never raises."""
        soul_id = session.soul_id
        model = self._model()
        if model is None or soul_id in self._running:
            return None
        self._running.add(soul_id)
        trace_id = new_trace_id()
        with traced(trace_id):
            return await self._reflect(model, session, reason, trace_id)

    async def _reflect(
        self, model: ChatModel, session: Session, reason: str, trace_id: str
    ) -> Advice | None:
        soul_id = session.soul_id
        try:
            async with asyncio.timeout(self.timeout):
                advice = await self._ask(model, session)
        except (LLMError, TimeoutError) as err:
            self.failures += 1
            _LOGGER.info("The navigator of soul %s failed: %s", soul_id, err)
            notice(
                self._events(), self._clock, "navigator failed", level=WARNING,
                souls=self._souls, soul_id=soul_id, session_id=session.session_id,
                user_id=session.user_id,
                event="navigator_failed", reason=reason,
                error=str(err)[:200] or type(err).__name__,
            )  # fmt: skip
            return None
        finally:
            self._running.discard(soul_id)
        self.runs += 1
        if advice is None:
            self.failures += 1
            notice(
                self._events(), self._clock, "navigator answered no JSON",
                level=WARNING, souls=self._souls, soul_id=soul_id,
                session_id=session.session_id, user_id=session.user_id,
                event="navigator_failed",
                reason=reason,
            )  # fmt: skip
            return None
        await self._apply(session, advice, reason, trace_id)
        return advice

    async def _ask(self, model: ChatModel, session: Session) -> Advice | None:
        messages = [
            {"role": "system", "content": PROMPT},
            {"role": "user", "content": await self._situation(session)},
        ]
        if self.structured is not False:
            try:
                answer = await model.chat(messages, [], response_format=RESPONSE_FORMAT)
            except LLMRequestRejectedError:
                self.structured = False
            else:
                self.structured = True
                return parse_advice(answer.content or "")
        answer = await model.chat(messages, [])
        return parse_advice(answer.content or "")

    async def _situation(self, session: Session) -> str:
        """Return what the navigator reads, as JSON."""
        soul = self._souls.soul(session.soul_id)
        turns = list(session.turns)[-RECENT_TURNS:]
        situation: dict[str, Any] = {
            "soul": (
                {"name": soul.name, "mbti": soul.mbti, "persona": soul.persona_text}
                if soul is not None
                else None
            ),
            "psyche": psyche_state(self._souls.snapshot(session.soul_id)),
            "conversation": turns,
            "summary": session.summary or None,
        }
        profiles = self._profiles()
        if profiles is not None and (about := profiles.prompt_line(session.user_id)):
            situation["user"] = about
        memory = self._memory()
        said = [t["content"] for t in turns if t["role"] == "user"]
        if memory is not None and memory.ready and said:
            try:
                found = await memory.recall(
                    said[-1], user_id=session.user_id, soul_id=session.soul_id
                )
            except MemoryBackendError:
                found = []
            situation["memories"] = [item.text[:300] for item in found]
        return json.dumps(situation, ensure_ascii=False, default=str)

    async def _apply(
        self, session: Session, advice: Advice, reason: str, trace_id: str
    ) -> None:
        soul_id = session.soul_id
        bus = self._events()
        trace = TurnTrace(
            bus, self._clock, soul_id, session.session_id,
            session.terminal_id or None, trace_id, user_id=session.user_id,
        )  # fmt: skip
        if advice.suggestion:
            held = self._suggestions
            held.pop(session.session_id, None)
            held[session.session_id] = [
                advice.suggestion, SUGGESTION_TURNS, session.user_id, soul_id
            ]  # fmt: skip
            while len(held) > MAX_HELD_SUGGESTIONS:  # sessions that never came back
                del held[next(iter(held))]
            trace.emit(
                EventType.NAVIGATOR_SUGGESTION,
                Source.NAVIGATOR,
                {"suggestion": advice.suggestion, "reason": reason},
                self._souls.snapshot(soul_id),
            )
        if advice.psyche_delta:
            before = self._souls.snapshot(soul_id)
            after = self._souls.nudge(soul_id, advice.psyche_delta)
            if after is not None:
                trace.emit(
                    EventType.PSYCHE_UPDATE,
                    Source.NAVIGATOR,
                    {"delta": pad_delta(before, after), "reason": "navigator"},
                    after,
                )
        if advice.evolution_request:
            notice(
                bus, self._clock, "evolution requested", souls=self._souls,
                soul_id=soul_id, session_id=session.session_id,
                user_id=session.user_id,
                event="evolution_request", request=advice.evolution_request,
            )  # fmt: skip
            self._on_evolution(soul_id, advice.evolution_request, session.user_id)
        if advice.skill:
            await self._learn(session, advice.skill, reason)
        if advice.memory_archival:
            await self._archive(session)

    async def _learn(self, session: Session, skill: str, reason: str) -> None:
        """Keep a learnt lesson as a ``skill`` memory (XingChen-V §5.1)."""
        memory = self._memory()
        if memory is None or not memory.ready:
            return
        try:
            await memory.remember(
                skill, user_id=session.user_id, soul_id=session.soul_id,
                memory_type="skill", tags=["navigator", reason], infer=False,
            )  # fmt: skip
        except MemoryBackendError as err:
            _LOGGER.info("The navigator's skill was not stored: %s", err)
            return
        notice(
            self._events(), self._clock, "skill learnt", souls=self._souls,
            soul_id=session.soul_id, session_id=session.session_id,
            user_id=session.user_id,
            event="skill_learnt", skill=skill,
        )  # fmt: skip
