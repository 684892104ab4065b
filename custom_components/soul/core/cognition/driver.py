"""The F-brain's answer (XingChen-V §3.1): ``{"reply", "inner_voice", "emotion"}``.

The chat model answers this JSON next to its tool calls. Where the endpoint
takes structured output it is asked with ``response_format`` (a JSON schema);
elsewhere the system prompt asks for the JSON (``JSON_INSTRUCTION``). Either
way ``parse_driver_reply`` reads it tolerantly: a reply that is not that JSON
is the reply, whole. ``ReplyField`` picks the ``reply`` text out of a JSON
answer as it streams, so Assist shows the words and never the JSON, nor the
inner voice.
"""

from __future__ import annotations

from dataclasses import dataclass
import json
import re
from typing import Any

from .. import untrusted
from ..emotion.labels import Emotion

MAX_INNER_VOICE = 2000
EMOTIONS = [emotion.value for emotion in Emotion]
DRIVER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reply": {"type": "string", "description": "what the user hears"},
        "inner_voice": {
            "type": "string",
            "description": "your private thoughts; never shown to the user",
        },
        "emotion": {"type": "string", "enum": EMOTIONS},
    },
    "required": ["reply", "inner_voice", "emotion"],
    "additionalProperties": False,
}
RESPONSE_FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {"name": "soul_reply", "schema": DRIVER_SCHEMA, "strict": True},
}
JSON_INSTRUCTION = (
    'Answer with one JSON object and nothing else: {"reply": what the user '
    'hears, "inner_voice": your private thoughts (never shown), "emotion": '
    "the emotion you feel, one of " + ", ".join(EMOTIONS) + "}."
)
_HIGH = frozenset({"d8", "d9", "da", "db"})
_FENCE = "```"


def unfence(text: str) -> str:
    """Return a model's answer without the Markdown code fence around it (if any).

    String steps, no regex: a pattern for "a fence, anything, maybe a fence"
    backtracks over runs of white space (a reply of "```{" and spaces took
    seconds).
    """
    inner = text.strip()
    if not inner.startswith(_FENCE):
        return inner
    inner = inner.removeprefix(_FENCE).removeprefix("json")
    if inner.endswith(_FENCE):
        inner = inner[: -len(_FENCE)]
    return inner.strip()


@dataclass(frozen=True, slots=True)
class DriverReply:
    """What the F-brain said, thought and felt."""

    reply: str
    inner_voice: str | None = None
    emotion: Emotion | None = None


def parse_driver_reply(content: str, max_reply: int) -> DriverReply:
    """Return the F-brain's answer; text that is not its JSON is the reply, whole."""
    text = unfence(content)
    if not text.startswith("{"):
        return DriverReply(untrusted.clean(content, max_reply))
    try:
        value = untrusted.loads(
            text, max_bytes=4 * max_reply + 4 * MAX_INNER_VOICE, repair=True
        )
    except untrusted.UntrustedInputError:
        return DriverReply(untrusted.clean(content, max_reply))
    if not isinstance(value, dict) or not isinstance(value.get("reply"), str):
        return DriverReply(untrusted.clean(content, max_reply))
    inner = value.get("inner_voice")
    try:
        emotion = Emotion(str(value.get("emotion", "")).strip().lower())
    except ValueError:
        emotion = None
    return DriverReply(
        untrusted.clean(value["reply"], max_reply),
        untrusted.clean(inner, MAX_INNER_VOICE) if isinstance(inner, str) else None,
        emotion,
    )


class ReplyField:
    """Picks the ``reply`` string out of a JSON answer as its pieces arrive.

    ``feed(piece)`` returns the reply's characters that became known (JSON
    escapes decoded); a text that does not start with ``{`` is passed through
    as it is (the model answered plainly).
    """

    # White space around the colon is bounded, so a key cut between two pieces
    # is at most _KEY_SPAN characters long: only that much of what came before
    # the key is kept and searched again (a long inner voice before the reply
    # made streaming quadratic).
    _KEY = re.compile(r'"reply"\s{0,64}:\s{0,64}"')
    _KEY_SPAN = 7 + 64 + 1 + 64

    def __init__(self) -> None:
        """Start before the first piece."""
        self._buffer = ""
        self._mode = "start"  # start | plain | seek | value | done
        self._escape = ""

    def feed(self, piece: str) -> str:
        """Take a piece of the answer; return the reply text it revealed."""
        if self._mode == "plain":
            return piece
        if self._mode == "done":
            return ""
        self._buffer += piece
        if self._mode == "start":
            stripped = self._buffer.lstrip()
            if len(stripped) < len(_FENCE) and _FENCE.startswith(stripped):
                self._buffer = stripped  # white space goes; a fence's start waits
                return ""
            if not stripped.startswith(("{", _FENCE)):  # fenced: the object inside
                self._mode = "plain"
                out, self._buffer = self._buffer, ""
                return out
            self._mode = "seek"
        if self._mode == "seek":
            if (match := self._KEY.search(self._buffer)) is None:
                self._buffer = self._buffer[-self._KEY_SPAN :]
                return ""
            self._buffer = self._buffer[match.end() :]
            self._mode = "value"
        return self._value()

    def _value(self) -> str:
        out: list[str] = []
        text, self._buffer = self._escape + self._buffer, ""
        self._escape = ""
        index = 0
        while index < len(text):
            char = text[index]
            if char == '"':
                self._mode = "done"
                break
            if char != "\\":
                out.append(char)
                index += 1
                continue
            if index + 1 >= len(text):
                self._escape = text[index:]
                break
            code = text[index + 1]
            if code == "u":
                # A high surrogate waits for its pair: \ud83d\ude00 is one emoji.
                size = 12 if text[index + 2 : index + 4].lower() in _HIGH else 6
                if index + size > len(text):
                    self._escape = text[index:]
                    break
                try:
                    decoded = json.loads(f'"{text[index : index + size]}"')
                except ValueError:
                    decoded = ""
                out.append(untrusted.clean(decoded, 2))
                index += size
                continue
            out.append(
                {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}.get(code, code)
            )
            index += 2
        return "".join(out)
