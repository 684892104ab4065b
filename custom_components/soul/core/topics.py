"""MQTT topics of the Soul-Body protocol v2 (§3.1) and their QoS/retain (§3.2)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum
import re
from typing import Any

from . import untrusted

# publish(topic, payload, qos, retain): how the core sends MQTT messages.
type Publish = Callable[[str, str, int, bool], Awaitable[None]]
# flush(): returns once the transport has sent what was published before it
# (Home Assistant's MQTT client writes on a later turn of the event loop).
type Flush = Callable[[], Awaitable[None]]


async def sent_at_once() -> None:
    """Return at once: the ``Flush`` of a transport that sends as it publishes."""


DEFAULT_PREFIX = "soul"
MAX_PREFIX_LENGTH = 64
# A terminal id is one topic level; Soul also uses it in device identifiers.
TERMINAL_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")
REQUEST_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")


class InvalidPrefixError(ValueError):
    """A topic prefix that cannot carry the protocol's topics."""


class Kind(StrEnum):
    """The last level(s) of a terminal topic."""

    ONLINE = "online"
    HEARTBEAT = "heartbeat"
    SKILLS = "skills"
    INTENT_CATALOG = "intent_catalog"
    INVOKE = "invoke"
    RESULT = "result"
    STATUS = "status"
    EMOTION_UPDATE = "emotion_update"
    INTENT_ACTION = "intent_action"


# §3.2: (QoS, retain) of every topic.
QOS_RETAIN: dict[Kind, tuple[int, bool]] = {
    Kind.ONLINE: (1, True),
    Kind.SKILLS: (1, True),
    Kind.INTENT_CATALOG: (1, True),
    Kind.HEARTBEAT: (0, False),
    Kind.INVOKE: (1, False),
    Kind.RESULT: (1, False),
    Kind.STATUS: (1, False),
    Kind.EMOTION_UPDATE: (1, False),
    Kind.INTENT_ACTION: (1, False),
}
# Topics that carry a request id after the kind.
WITH_REQUEST_ID = frozenset({Kind.INVOKE, Kind.RESULT})
# What the body publishes and Soul subscribes to.
BODY_TO_SOUL = (
    Kind.ONLINE,
    Kind.HEARTBEAT,
    Kind.SKILLS,
    Kind.INTENT_CATALOG,
    Kind.RESULT,
)


def normalize_prefix(prefix: Any) -> str:
    """Return the prefix without surrounding blanks and slashes, or raise.

    The prefix is the first level(s) of every topic (``{prefix}/terminal/...``),
    so it must be a valid publish topic itself: no MQTT wildcards, no NUL, not
    empty, and not a ``$`` system topic; and one clean line (a lone
    surrogate accepted by the options flow left Home Assistant's
    configuration entries unwritable, and the MQTT client's subscribe raised
    for every integration: a fuzz of the stored options, 2026-11-29).
    """
    if not isinstance(prefix, str):
        raise InvalidPrefixError("the topic prefix is not text")
    value = prefix.strip().strip("/")
    if not value:
        raise InvalidPrefixError("the topic prefix is empty")
    if len(value) > MAX_PREFIX_LENGTH:
        raise InvalidPrefixError(
            f"the topic prefix is longer than {MAX_PREFIX_LENGTH} characters"
        )
    if any(char in value for char in "+#\x00"):
        raise InvalidPrefixError("the topic prefix may not contain '+', '#' or NUL")
    if value.startswith("$"):
        raise InvalidPrefixError("the topic prefix may not start with '$'")
    if not untrusted.is_text(value, MAX_PREFIX_LENGTH):
        raise InvalidPrefixError(
            "the topic prefix may not contain control or invisible characters"
        )
    if "//" in value:
        raise InvalidPrefixError("the topic prefix may not contain empty levels")
    return value


def valid_terminal_id(terminal_id: str) -> bool:
    """Return whether ``terminal_id`` is acceptable as a topic level and identifier."""
    return TERMINAL_ID_RE.fullmatch(terminal_id) is not None


@dataclass(frozen=True, slots=True)
class ParsedTopic:
    """A terminal topic taken apart."""

    terminal_id: str
    kind: Kind
    request_id: str | None = None


@dataclass(frozen=True, slots=True)
class Topics:
    """Builds and parses the topics under one prefix."""

    prefix: str = DEFAULT_PREFIX

    def topic(self, terminal_id: str, kind: Kind, request_id: str | None = None) -> str:
        """Return the topic of ``kind`` for a terminal (and request)."""
        base = f"{self.prefix}/terminal/{terminal_id}/{kind}"
        if kind in WITH_REQUEST_ID:
            if request_id is None:
                raise ValueError(f"{kind} needs a request id")
            return f"{base}/{request_id}"
        return base

    def subscription(self, kind: Kind) -> str:
        """Return the filter that matches ``kind`` for every terminal."""
        suffix = "/+" if kind in WITH_REQUEST_ID else ""
        return f"{self.prefix}/terminal/+/{kind}{suffix}"

    def subscriptions(self) -> list[tuple[str, int]]:
        """Return (filter, QoS) of everything Soul listens to."""
        return [(self.subscription(kind), QOS_RETAIN[kind][0]) for kind in BODY_TO_SOUL]

    def parse(self, topic: str) -> ParsedTopic | None:
        """Return the parts of a terminal topic, or None when it is not one."""
        head = f"{self.prefix}/terminal/"
        if not topic.startswith(head):
            return None
        parts = topic[len(head) :].split("/")
        if len(parts) not in (2, 3) or not valid_terminal_id(parts[0]):
            return None
        try:
            kind = Kind(parts[1])
        except ValueError:
            return None
        if kind in WITH_REQUEST_ID:
            if len(parts) != 3 or not REQUEST_ID_RE.fullmatch(parts[2]):
                return None
            return ParsedTopic(parts[0], kind, parts[2])
        if len(parts) != 2:
            return None
        return ParsedTopic(parts[0], kind)


async def publish_to(
    publish: Publish, topics: Topics, terminal_id: str, kind: Kind, payload: str
) -> None:
    """Publish ``payload`` on a terminal's ``kind`` topic with §3.2's QoS and retain."""
    qos, retain = QOS_RETAIN[kind]
    await publish(topics.topic(terminal_id, kind), payload, qos, retain)
