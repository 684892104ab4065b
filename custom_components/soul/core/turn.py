"""One chat turn's state, and how its inputs beyond text reach the model.

``Turn`` is what a turn has found and done so far (``chat`` and
``reasoning`` share it). ``context_lines`` renders the session's latest
non-text inputs (§4.2.1: ``event_note``, ``presence``, ``sensor_state``,
media) and the skills' results as short lines for the system prompt;
``image_urls`` picks the turn's images the model may look at.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
import ipaddress
import json
import re
from typing import Any
from urllib.parse import urlsplit

from . import untrusted
from .chat_request import ChatRequest
from .chat_tools import ExtraTools
from .cognition.trace import TurnTrace
from .emotion.dynamics import ExecMode
from .emotion.labels import Emotion
from .invoker import InvokeError, Invoker
from .logs import trace_logger
from .session import Session
from .transcript import Transcript

_LOGGER = trace_logger(__name__)

MAX_CONTEXT_IN_PROMPT = 5  # latest non-text inputs and events in the system prompt
MAX_CONTEXT_LINE = 300
MAX_IMAGES = 4  # image inputs of one turn given to the model
MAX_URL = 2048
MEDIA_TYPES = frozenset({"image", "audio", "video"})
# What a URL given to the model may not contain: blanks, controls, quotes.
_BAD_IN_URL = re.compile(r"[\x00-\x20\x7f-\x9f\"'<>\\^`{|}]")
# Keys of an input worth a word in the prompt, per type (the rest is metadata).
_SENSOR_KEYS = ("text", "entity_id", "name", "state", "value", "unit", "present",
                "person", "zone", "source")  # fmt: skip


@dataclass
class Turn:
    """What one turn has found and done so far."""

    request: ChatRequest
    session: Session
    exec_mode: ExecMode
    exec_probability: float
    extra_tools: ExtraTools | None = None
    transcript: Transcript | None = None
    user_emotion: dict[str, Any] = field(default_factory=dict)
    decision: str = "fallback_reasoning"
    route: str = "no_action"
    reply: str = ""
    executed: list[str] = field(default_factory=list)
    unreachable: bool = False  # an action could not reach the body
    body_reachable: bool = True  # the body could act when the turn began
    model_calls: int = 0
    closing: bool = False  # the last model round's tools ran after its text
    streamed: bool = False  # the reply reached the transcript piece by piece
    # Parts of the command the intent filter found nothing to run for.
    unmatched: list[str] = field(default_factory=list)
    # The turn's events (the journal); the model's inner voice, never shown.
    trace: TurnTrace | None = None
    inner_voice: str | None = None
    driver_emotion: Emotion | None = None  # what the model said it feels
    suggestion: str | None = None  # the navigator's, for this turn's prompt
    # Listeners of the soul and of the decision, told once the turn's
    # intent_action has left (``tell_held``).
    held: list[Callable[[], None]] = field(default_factory=list)

    @property
    def bodiless(self) -> bool:
        """Return whether the turn's soul speaks without a body (Assist, Star)."""
        return not self.request.terminal_id


def tell_held(held: list[Callable[[], None]]) -> None:
    """Tell the listeners a turn held back, in order (each at most once)."""
    while held:
        held.pop(0)()


def reachable(invoker: Invoker, turn: Turn) -> bool:
    """Return whether the turn's body may act now (``Invoker.reachable``)."""
    if turn.bodiless:
        return False
    try:
        invoker.reachable(turn.request.terminal_id)
    except InvokeError as err:
        _LOGGER.debug("Not acting through %s: %s", turn.request.terminal_id, err)
        turn.unreachable = True
        return False
    return True


def media_url(item: Mapping[str, Any]) -> str | None:
    """Return a media input's URL (``media.url`` or ``url``) if the model may fetch it.

    Only a plain http(s) URL with a host: no blanks or control characters, no
    user name or password, a valid port, and no link-local or unspecified
    address (cloud metadata services answer there). The model's server
    fetches it, never Soul.
    """
    media = item.get("media")
    url = media.get("url") if isinstance(media, Mapping) else item.get("url")
    if not isinstance(url, str) or len(url) > MAX_URL or _BAD_IN_URL.search(url):
        return None
    try:
        parts = urlsplit(url)
        host, _port = parts.hostname, parts.port  # port: ValueError if invalid
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not host or parts.username is not None:
        return None
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return url
    return None if address.is_link_local or address.is_unspecified else url


def image_urls(context: Iterable[Mapping[str, Any]]) -> list[str]:
    """Return the URLs of a turn's ``image`` inputs, at most ``MAX_IMAGES``."""
    urls = [
        url
        for item in context
        if item.get("type") == "image" and (url := media_url(item)) is not None
    ]
    return urls[:MAX_IMAGES]


def context_line(
    item: Mapping[str, Any],
    *,
    attached: frozenset[str] = frozenset(),
    sees_images: bool = False,
    current: bool = False,
) -> str:
    """Return one input or event as a short line the model can read.

    ``attached`` are the image URLs given to the model as image parts this
    turn; ``sees_images`` says whether the model takes images at all;
    ``current`` whether the item is an input of this turn.
    """
    kind = str(item.get("type", ""))
    if kind in MEDIA_TYPES:
        url = media_url(item)
        where = f" ({url})" if url else " (no URL you may be given)"
        if kind == "audio":
            text = f"an audio recording{where}; you cannot hear it yet"
        elif kind == "video":
            text = f"a video{where}; you cannot watch it yet"
        elif url and url in attached:
            text = f"an image{where}, attached to the user's message"
        elif url and sees_images and current:
            text = f"an image{where}, not attached: at most {MAX_IMAGES} a turn"
        elif url and sees_images:
            text = f"an image{where} shown earlier"
        else:
            text = f"an image{where}; you cannot see it, say so if it matters"
        line = f"{kind}: {text}"
    elif kind in ("event_note", "presence", "sensor_state"):
        fields = {k: item[k] for k in _SENSOR_KEYS if item.get(k) not in (None, "")}
        data = item.get("data")
        if isinstance(data, Mapping):
            fields.update(data)
        detail = (
            json.dumps(fields, ensure_ascii=False, default=str)
            if fields
            else "(no details)"
        )
        line = f"{kind}: {detail}"
    else:
        line = json.dumps(dict(item), ensure_ascii=False, default=str)
    return untrusted.clean(line, MAX_CONTEXT_LINE)


def context_lines(
    session: Session,
    *,
    current: int = 0,
    attached: frozenset[str] = frozenset(),
    sees_images: bool | None = False,
) -> str:
    """Return the session's latest inputs and events, one short line each.

    The last ``current`` items are this turn's inputs: all of them are shown,
    with at most ``MAX_CONTEXT_IN_PROMPT`` earlier ones.
    """
    items = list(session.context)
    current = min(current, len(items))
    shown = items[-(current + MAX_CONTEXT_IN_PROMPT) :]
    first_current = len(shown) - current
    return "\n".join(
        "- "
        + context_line(
            item,
            attached=attached,
            sees_images=sees_images is not False,
            current=index >= first_current,
        )
        for index, item in enumerate(shown)
    )


def result_note(name: str, result: Mapping[str, Any]) -> dict[str, Any]:
    """Return a tool's result as a context line for the session's next turns."""
    note: dict[str, Any] = {
        "type": "skill_result",
        "skill": name,
        "ok": bool(result.get("ok")),
    }
    detail = result.get("output") if result.get("ok") else result.get("error")
    if detail not in (None, ""):
        note["detail"] = untrusted.clean(
            detail if isinstance(detail, str) else json.dumps(detail, default=str),
            MAX_CONTEXT_LINE,
        )
    return note
