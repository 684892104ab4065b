"""The chat sessions: lookup, bounds, persistence and idle summaries.

``Sessions`` maps ``session_id`` to ``Session`` (at most ``MAX_SESSIONS``,
oldest dropped), is stored and loaded as one JSON object, and summarises the
sessions idle for 3 minutes (§2 step 12) off the chat path: by the model when
there is one, else extractively; the summary becomes the session's
``context_summary`` and is archived to long-term memory.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any

from . import untrusted
from .chat_phrases import normalize_reply
from .chat_tools import ChatModel
from .llm import LLMError
from .logs import trace_logger
from .memory.manager import MemoryManager
from .session import MAX_SESSIONS, MAX_SUMMARY, Session, extractive_summary

_LOGGER = trace_logger(__name__)

SUMMARY_PROMPT = (
    "Summarise this conversation in at most three sentences, in its language. "
    "Keep facts about the user."
)


class Sessions(Mapping[str, Session]):
    """The sessions of one hub, by ``session_id``."""

    def __init__(
        self, *, clock: Callable[[], float], on_dirty: Callable[[], None]
    ) -> None:
        """Start empty; ``on_dirty`` asks the glue to store ``dump()`` soon."""
        self._sessions: dict[str, Session] = {}
        # Sessions whose idle summary is under way.
        self._summarizing: set[str] = set()
        self._clock = clock
        self._on_dirty = on_dirty

    def __getitem__(self, session_id: str) -> Session:
        """Return a session."""
        return self._sessions[session_id]

    def __iter__(self) -> Iterator[str]:
        """Iterate over the session ids, oldest first."""
        return iter(self._sessions)

    def __len__(self) -> int:
        """Return how many sessions there are."""
        return len(self._sessions)

    def open(
        self, session_id: str, terminal_id: str, soul_id: str, user_id: str | None
    ) -> Session:
        """Return the session for a turn; a new one when the body changed."""
        session = self._sessions.get(session_id)
        if session is None or session.terminal_id != terminal_id:
            session = self._sessions[session_id] = Session(
                session_id, terminal_id, soul_id, user_id
            )
            while len(self._sessions) > MAX_SESSIONS:
                del self._sessions[next(iter(self._sessions))]
        session.soul_id = soul_id
        self._on_dirty()
        return session

    def load(self, data: Any) -> None:
        """Take stored sessions (``dump()``'s); unsummarised ones are summarised later."""
        if not isinstance(data, dict) or not isinstance(data.get("sessions"), list):
            return
        now = self._clock()
        for raw in data["sessions"][-MAX_SESSIONS:]:
            if (session := Session.from_dict(raw, now)) is not None:
                self._sessions[session.session_id] = session

    def dump(self) -> dict[str, Any]:
        """Return the sessions for storage."""
        return {"sessions": [s.as_dict() for s in self._sessions.values()]}

    async def summarize_idle(
        self,
        model: ChatModel | None,
        memory: MemoryManager | None,
        before: Callable[[Session], Awaitable[Any]] | None = None,
    ) -> list[Session]:
        """Summarise every session idle for 3 minutes since its last user turn.

        Exactly once per idle spell: a session whose summary is under way
        (a slow model, the next 15 s check) is left to it. ``before`` runs
        first for each (the navigator's reflection).
        """
        now = self._clock()
        done = []
        idle = [
            s
            for s in self._sessions.values()
            if s.idle(now) and s.session_id not in self._summarizing
        ]
        self._summarizing.update(s.session_id for s in idle)
        try:
            for session in idle:
                if before is not None:
                    await before(session)
                if session.idle(now):  # the navigator may have archived it
                    await self.summarize(session, model, memory)
                    done.append(session)
                self._summarizing.discard(session.session_id)
        finally:
            self._summarizing.difference_update(s.session_id for s in idle)
        if done:
            self._on_dirty()
        return done

    async def summarize(
        self, session: Session, model: ChatModel | None, memory: MemoryManager | None
    ) -> None:
        """Summarise a session now and queue it for long-term memory."""
        covered, turns = session.last_user_at, session.turn_count
        summary = await _summary(session, model)
        session.summarized(summary, turns, covered)
        if memory is not None:
            # Queued on disk first; sent now or when the backend is back.
            await memory.archive_session(
                session_id=session.session_id,
                terminal_id=session.terminal_id,
                soul_id=session.soul_id,
                user_id=session.user_id,
                summary=summary,
                turns=list(session.turns),
            )
        self._on_dirty()


async def _summary(session: Session, model: ChatModel | None) -> str:
    """Return a session's summary: the model's, else an extractive one."""
    if model is not None:
        transcript = "\n".join(f"{t['role']}: {t['content']}" for t in session.turns)
        try:
            answer = await model.chat(
                [
                    {"role": "system", "content": SUMMARY_PROMPT},
                    {"role": "user", "content": transcript},
                ],
                [],
            )
        except LLMError as err:
            _LOGGER.warning("Summary by the model failed: %s", err)
        else:
            if text := normalize_reply(answer.content):
                return untrusted.clean(text, MAX_SUMMARY)
    return extractive_summary(session)
