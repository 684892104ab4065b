"""Where a chat turn's history comes from and where its steps go.

The pipeline asks a ``Transcript`` for the conversation so far (the model's
messages) and tells it every step of the turn as it happens: pieces of the
reply as the model streams them, the tool calls, their results, and replies
that come from no model (an intent, an in-character refusal). Without one,
the pipeline uses the session's own bounded transcript. Assist passes one
backed by Home Assistant's chat log, so one history serves the agent and the
debug view shows every step (``conversation.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from .chat_phrases import normalize_reply
from .chat_tools import ExtraTools
from .llm import ToolCall
from .markdown import markdown_tame, markdown_undecided

# The longest form of a reply that says nothing ("<NO_REPLY>", "[NO_REPLY]").
_HOLD = len("[NO_REPLY]") + 2


class Transcript(Protocol):
    """A conversation's history and the sink of one turn's steps."""

    async def prepare(self) -> ExtraTools | None:
        """Get ready for the model; return the tools this way in offers it.

        Called before a turn first asks the model, never for a turn the
        intent filter answers: work only a model needs (Home Assistant's
        system prompt, its LLM API's tools) is done here. May be called more
        than once; the first call does the work.
        """

    def history(self) -> list[dict[str, Any]]:
        """Return the conversation as model messages, the user's turn last.

        System messages here (for example Home Assistant's LLM API prompt)
        follow the soul's own system prompt.
        """

    async def text(self, piece: str) -> None:
        """Take a piece of the assistant's reply as the model streams it."""

    async def tool_calls(self, calls: Sequence[ToolCall]) -> None:
        """Take the tool calls of the model's message (after its text)."""

    async def tool_result(self, call: ToolCall, result: dict[str, Any]) -> None:
        """Take the result of one tool call."""

    async def reply(self, text: str) -> None:
        """Take a whole reply no model streamed (an intent's, a refusal)."""

    async def settle(self, text: str) -> None:
        """End a turn whose reply was streamed before its tool calls ran.

        ``text`` is that reply again (possibly empty): it closes the turn as
        its answer and is not streamed a second time.
        """


class ReplyStream:
    """Forwards streamed pieces, holding back what could still be NO_REPLY.

    A reply of just ``NO_REPLY`` (or ``<NO_REPLY>``, ``[NO_REPLY]``) says
    nothing (§4.2.2), so nothing of it may be streamed: the first characters
    wait until the text can no longer be one of those forms. What is sent is
    tamed (``markdown.markdown_tame``: no image, no HTML tag), as the whole
    reply is; what the next piece may still change (a last ``!`` or ``<``, an
    autolink's address not yet closed: ``markdown.markdown_undecided``)
    waits for it. At most ``limit`` characters are taken from the first that
    is not a space, as the whole reply is stripped and cut before it is tamed
    (a reply of 500 pieces of 4,000 characters reached Assist whole: 2 MB,
    black box 2026-11-29).
    """

    def __init__(self, transcript: Transcript, limit: int) -> None:
        """Stream at most ``limit`` characters into ``transcript``."""
        self._transcript = transcript
        self._held = ""
        self._released = False
        self._room = limit
        self.streamed = ""

    async def add(self, piece: str) -> None:
        """Take the next piece of the reply."""
        if not self._held and not self._released:
            # The whole reply is stripped before it is cut (``normalize_reply``).
            piece = piece.lstrip()
        if not (piece := piece[: self._room]):
            return
        self._room -= len(piece)
        self._held += piece
        if not self._released and (
            len(self._held.strip()) < _HOLD and _could_say_nothing(self._held)
        ):
            return
        self._released = True
        held = self._held
        decided = markdown_undecided(held)
        # One character for one, and those before ``decided`` are tamed
        # alike whatever follows.
        self._held = held[decided:]
        await self._send(markdown_tame(held)[:decided])

    async def end(self) -> None:
        """Close the message: send what was held, unless it says nothing."""
        if self._released or normalize_reply(self._held):
            await self._send(markdown_tame(self._held))
        self._held, self._released = "", False

    async def _send(self, text: str) -> None:
        if text:
            self.streamed += text
            await self._transcript.text(text)


def _could_say_nothing(text: str) -> bool:
    """Return whether ``text`` may still grow into a NO_REPLY form."""
    stripped = text.strip()
    return any(
        form.startswith(stripped) for form in ("NO_REPLY", "<NO_REPLY>", "[NO_REPLY]")
    )
