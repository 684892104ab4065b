"""A chat session: the bounded transcript of one ``session_id``.

A ``Session`` keeps the last turns within a size, the inputs kept as context,
the intents awaiting a yes, and its summary; ``idle`` says when §2 step 12
summarises it, ``extractive_summary`` does so without a model, and
``rolling_summary`` is the session so far (the last summary and what the
user said since), cheap enough for every response.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from . import stored, untrusted
from .chat_request import MAX_TEXT
from .topics import valid_terminal_id

MAX_TURNS = 20
MAX_SESSION_CHARS = 16 * 1024  # a stored transcript, oldest turns dropped first
MAX_SESSIONS = 256
IDLE_SECONDS = 180.0  # §2 step 12: a session idle this long is summarised
MAX_SUMMARY = 600


@dataclass
class Session:
    """A bounded transcript of one session."""

    session_id: str
    terminal_id: str
    soul_id: str
    user_id: str | None
    turns: deque[dict[str, str]] = field(
        default_factory=lambda: deque(maxlen=MAX_TURNS)
    )
    last_user_at: float = 0.0
    summary: str = ""
    context: deque[dict[str, Any]] = field(
        default_factory=lambda: deque(maxlen=MAX_TURNS)
    )
    # Intents awaiting the user's yes (exec_mode "confirm").
    pending: list[dict[str, Any]] = field(default_factory=list)
    # ``last_user_at`` of the turn the summary covers (0: none yet).
    summarized_for: float = 0.0
    # Turns added ever, and how many of them the summary covers.
    turn_count: int = 0
    summary_turns: int = 0

    def add_turn(self, role: str, content: str) -> None:
        """Append a turn; the transcript keeps within ``MAX_SESSION_CHARS``."""
        self.turns.append({"role": role, "content": content[:MAX_TEXT]})
        self.turn_count += 1
        total = sum(len(t["content"]) for t in self.turns)
        while total > MAX_SESSION_CHARS and len(self.turns) > 1:
            total -= len(self.turns.popleft()["content"])

    def idle(self, now: float) -> bool:
        """Return whether the session has been idle long enough and is unsummarised."""
        return (
            self.last_user_at > self.summarized_for
            and now - self.last_user_at >= IDLE_SECONDS
        )

    def summarized(self, summary: str, turn_count: int, last_user_at: float) -> None:
        """Take a summary of the first ``turn_count`` turns (up to ``last_user_at``)."""
        self.summary = summary
        self.summary_turns = turn_count
        self.summarized_for = last_user_at

    def rolling_summary(self) -> str:
        """Return the session so far: its summary, then what the user said since."""
        since = min(self.turn_count - self.summary_turns, len(self.turns))
        recent = list(self.turns)[len(self.turns) - since :] if since > 0 else []
        said = " / ".join(
            t["content"].replace("\n", " ") for t in recent if t["role"] == "user"
        )
        if not self.summary or not said:
            text = self.summary or said
            return text if len(text) <= MAX_SUMMARY else "… " + text[2 - MAX_SUMMARY :]
        head = self.summary
        if len(head) > MAX_SUMMARY // 2:
            head = head[: MAX_SUMMARY // 2 - 1] + "…"
        room = MAX_SUMMARY - len(head) - 3
        if len(said) > room:
            said = "… " + said[2 - room :]
        return f"{head} / {said}"

    def as_dict(self) -> dict[str, Any]:
        """Return the session for storage (pending intents are not kept)."""
        return {
            "session_id": self.session_id,
            "terminal_id": self.terminal_id,
            "soul_id": self.soul_id,
            "user_id": self.user_id,
            "turns": list(self.turns),
            "last_user_at": self.last_user_at,
            "summary": self.summary,
            "summarized_for": self.summarized_for,
            "turn_count": self.turn_count,
            "summary_turns": self.summary_turns,
        }

    @classmethod
    def from_dict(cls, data: Any, now: float) -> Session | None:
        """Return a stored session, or None when it is not one (``core.stored``).

        Its ids are checked as a request's, its texts cleaned and cut as
        when they were added (a summary, which may quote the user, as the
        user's own words), its times fall between 1970 and a day after
        ``now`` (``stored.seconds``), its counts within ``stored.MAX_COUNT``:
        a fuzz of the stores
        (2026-11-29) loaded a count past 64 bits that Home Assistant could
        not write again, a list as the user id, and a summary of 100,000
        characters that went into every prompt.
        """
        if not isinstance(data, dict):
            return None
        session_id = stored.ident(data.get("session_id"))
        soul_id = stored.ident(data.get("soul_id"))
        terminal_id = data.get("terminal_id")
        user_id = data.get("user_id")
        if (
            session_id is None
            or soul_id is None
            or not isinstance(terminal_id, str)
            or (terminal_id and not valid_terminal_id(terminal_id))
            or (user_id is not None and stored.ident(user_id) is None)
        ):
            return None
        summary = data.get("summary")
        session = cls(
            session_id=session_id,
            terminal_id=terminal_id,
            soul_id=soul_id,
            user_id=user_id,
            last_user_at=stored.seconds(data.get("last_user_at"), now),
            # Its own form: a summary of the user's words keeps their marks.
            summary=untrusted.clean(summary, MAX_SUMMARY, users_own=True)
            if isinstance(summary, str)
            else "",
            summarized_for=stored.seconds(data.get("summarized_for"), now),
        )
        turns = data.get("turns")
        for turn in turns[-MAX_TURNS:] if isinstance(turns, list) else ():
            if (read := stored_turn(turn)) is not None:
                session.add_turn(read["role"], read["content"])
        session.turn_count = max(
            session.turn_count, stored.count(data.get("turn_count"))
        )
        # A summary stored before turns were counted covers them all.
        covered = data.get(
            "summary_turns", session.turn_count if session.summary else 0
        )
        session.summary_turns = min(stored.count(covered), session.turn_count)
        return session


def stored_turn(turn: Any) -> dict[str, str] | None:
    """Return a stored turn (a session's, a queued memory's message) as added, or None.

    Its role is the user's or the assistant's, its content text, cleaned and
    cut as when it was added: the user's own words keep their bidi marks.
    """
    if not (
        isinstance(turn, dict)
        and (role := turn.get("role")) in ("user", "assistant")
        and isinstance(content := turn.get("content"), str)
    ):
        return None
    return {
        "role": role,
        "content": untrusted.clean(content, MAX_TEXT, users_own=role == "user"),
    }


def extractive_summary(session: Session) -> str:
    """Summarise without a model: the user's turns, newest last, within a limit."""
    said = [
        t["content"].replace("\n", " ") for t in session.turns if t["role"] == "user"
    ]
    text = " / ".join(said)
    if len(text) > MAX_SUMMARY:
        text = "… " + text[-(MAX_SUMMARY - 2) :]
    return text
