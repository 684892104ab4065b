"""A §4.2.1 chat request, validated, and the §4.3 errors a chat turn raises.

``parse_chat_request(body)`` accepts a request exactly as §4.2.1 and §4.3 say:
ids, the terminal, and ``inputs`` whose keyboard/speech texts are joined into
the turn's text; other known inputs are kept as context. Anything else raises
``ChatError``, whose ``str()`` is the §4.3 ``error``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from . import untrusted
from .access import Principal
from .topics import valid_terminal_id

TEXT_INPUT_ERROR = (
    "currently only input.type=keyboard_text|speech_text with non-empty text "
    "is supported"
)
NO_SOUL_ERROR = "soul selection is required before chat"
TEXT_TYPES = frozenset({"keyboard_text", "speech_text"})
KNOWN_TYPES = TEXT_TYPES | {
    "event_note", "presence", "sensor_state", "audio", "image", "video"
}  # fmt: skip
MAX_INPUTS = 32
MAX_TEXT = 4096
MAX_ID = 128
MAX_CONTEXT_ITEM_BYTES = 4096  # one non-text input kept as context


class ChatError(ValueError):
    """A request the pipeline refuses; ``str()`` is the §4.3 ``error``.

    ``status`` is the HTTP status of the refusal (400 unless a subclass says).
    """

    status = 400


class SessionOwnerError(ChatError):
    """The session belongs to another user (HTTP 403)."""

    status = 403


class UnknownSoulIdError(ChatError):
    """The request's ``soul_id`` names no soul (HTTP 404)."""

    status = 404


class UnknownTerminalIdError(ChatError):
    """No body with this ``terminal_id`` is known and none is bound (HTTP 404)."""

    status = 404


class PrivateSoulError(ChatError):
    """The terminal is bound to a soul the caller may not use (HTTP 403)."""

    status = 403


def refuse_private_soul(caller: Principal, terminal_id: str, owner: str | None) -> None:
    """Refuse a turn through ``terminal_id`` when its soul (``owner``'s) is not the caller's.

    Another user's private soul is not reached through its body either; the
    refusal does not name the soul.
    """
    if not caller.sees(owner):
        raise PrivateSoulError(
            f"terminal {terminal_id!r} is bound to another user's private soul"
        )


class SoulMismatchError(ChatError):
    """The request's ``soul_id`` is not the soul the terminal is bound to (409)."""

    status = 409


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """A validated §4.2.1 request."""

    session_id: str
    terminal_id: str
    text: str
    user_id: str | None = None
    soul_id: str | None = None
    soul_hint: str | None = None
    # Inputs other than keyboard/speech text: context for the model.
    context: tuple[dict[str, Any], ...] = ()


def _id(body: Mapping[str, Any], key: str, *, required: bool) -> str | None:
    value = body.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ChatError(f"{key} is required")
    try:
        return untrusted.text(value, key, max_length=MAX_ID)
    except untrusted.UntrustedInputError as err:
        raise ChatError(str(err)) from None


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def parse_chat_request(body: Any, *, soul_only: bool = False) -> ChatRequest:
    """Validate a §4.2.1 body exactly as §4.2.1 and §4.3 say; raise ``ChatError``.

    ``soul_only`` (Home Assistant's own ways in, never HTTP): the request may
    name a ``soul_id`` and no ``terminal_id``, to talk to a soul without a body.
    """
    if not isinstance(body, Mapping):
        raise ChatError("the request body must be a JSON object")
    session_id = _id(body, "session_id", required=True)
    bodiless = soul_only and body.get("terminal_id") is None
    if bodiless and _id(body, "soul_id", required=True) is None:
        raise ChatError("soul_id is required")
    terminal_id = _id(body, "terminal_id", required=not bodiless)
    if terminal_id is not None and not valid_terminal_id(terminal_id):
        raise ChatError(
            "terminal_id must be 1-64 characters of A-Z a-z 0-9 _ . : - "
            "(starting with a letter or digit)"
        )
    inputs = body.get("inputs")
    if not isinstance(inputs, list) or not inputs:
        raise ChatError("inputs is required and must be a non-empty array")
    if len(inputs) > MAX_INPUTS:
        raise ChatError(f"inputs must have at most {MAX_INPUTS} items")
    texts: list[str] = []
    context: list[dict[str, Any]] = []
    for item in inputs:
        if not isinstance(item, Mapping):
            raise ChatError("every input must be an object")
        kind = item.get("type")
        if not isinstance(kind, str):
            raise ChatError("every input needs a string type")
        text = item.get("text")
        if kind in TEXT_TYPES and isinstance(text, str) and text.strip():
            if len(text) > MAX_TEXT:
                raise ChatError(f"the text must be at most {MAX_TEXT} characters")
            try:
                untrusted.text(text, "the text", max_length=MAX_TEXT, multiline=True)
            except untrusted.UntrustedInputError as err:
                raise ChatError(str(err)) from None
            texts.append(untrusted.bidi_balanced(text.strip(), MAX_TEXT))
        elif kind in KNOWN_TYPES:
            try:
                untrusted.check_json(
                    item,
                    max_bytes=MAX_CONTEXT_ITEM_BYTES,
                    max_depth=8,
                    what=f"{_article(kind)} {kind} input",
                )
            except untrusted.UntrustedInputError as err:
                raise ChatError(str(err)) from None
            context.append(dict(item))
    text = "\n".join(texts)
    if not text:
        raise ChatError(TEXT_INPUT_ERROR)
    if len(text) > MAX_TEXT:
        raise ChatError(f"the text must be at most {MAX_TEXT} characters")
    return ChatRequest(
        session_id=session_id or "",
        terminal_id=terminal_id or "",
        text=text,
        user_id=_id(body, "user_id", required=False),
        soul_id=_id(body, "soul_id", required=False),
        soul_hint=_id(body, "soul_hint", required=False),
        context=tuple(context),
    )
