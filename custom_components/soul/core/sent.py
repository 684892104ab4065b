"""What Soul sent to its bodies: one announcement for every sender.

Soul reaches a body's skill two ways: an ``invoke`` (``core.invoker``: the
model's tool calls, actions, device actions, entities) and an
``intent_action`` (``core.chat``: the intent filter's decision). Whatever
sends, ``SentSkills`` announces "skill S ran on terminal T with arguments A"
to whoever mirrors that skill (the skill entities, docs/skills-as-entities.md).

The ``Invoker`` owns the one ``SentSkills`` of a hub (``Invoker.sent``) and
announces an invocation when its result is ``ok`` — never a failure or a
timeout. The chat pipeline, which holds the invoker, announces an
``intent_action`` once it is published (the body sends no result for it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from .logs import trace_logger
from .topics import Kind

_LOGGER = trace_logger(__name__)


@dataclass(frozen=True, slots=True)
class SentSkill:
    """One skill Soul sent to a body, with the arguments it sent."""

    terminal_id: str
    skill: str
    arguments: Mapping[str, Any]
    via: Kind  # Kind.INVOKE or Kind.INTENT_ACTION


type SentListener = Callable[[SentSkill], None]


def sent_intents(
    terminal_id: str, intents: Iterable[Mapping[str, Any]]
) -> list[SentSkill]:
    """Return what a §3.9 ``intent_action`` sends: ``intents[].normalized``.

    ``normalized`` is ``{"skill": name, **arguments}``; an intent without a
    skill name is skipped.
    """
    sent = []
    for intent in intents:
        normalized = intent.get("normalized")
        if not isinstance(normalized, Mapping):
            continue
        skill = normalized.get("skill")
        if not isinstance(skill, str) or not skill:
            continue
        arguments = {k: v for k, v in normalized.items() if k != "skill"}
        sent.append(SentSkill(terminal_id, skill, arguments, Kind.INTENT_ACTION))
    return sent


class SentSkills:
    """Listeners of the skills sent to each terminal."""

    def __init__(self) -> None:
        """Start without listeners."""
        self._listeners: dict[tuple[str, str], list[SentListener]] = {}

    def subscribe(
        self, listener: SentListener, terminal_id: str, skill: str
    ) -> Callable[[], None]:
        """Call ``listener`` whenever ``skill`` is sent to ``terminal_id``.

        Returns the function that unsubscribes it.
        """
        key = (terminal_id, skill)
        listeners = self._listeners.setdefault(key, [])
        listeners.append(listener)

        def unsubscribe() -> None:
            listeners.remove(listener)
            if not listeners and self._listeners.get(key) is listeners:
                del self._listeners[key]

        return unsubscribe

    def announce(self, sent: SentSkill) -> None:
        """Tell the listeners of ``sent``'s terminal and skill; their errors are logged."""
        listeners = self._listeners.get((sent.terminal_id, sent.skill))
        if not listeners:
            return
        # Listeners get a read-only copy: none can change what another sees.
        frozen = SentSkill(
            sent.terminal_id,
            sent.skill,
            MappingProxyType(dict(sent.arguments)),
            sent.via,
        )
        for listener in list(listeners):
            try:
                listener(frozen)
            except Exception:
                _LOGGER.exception(
                    "Listener of %s on %s failed", sent.skill, sent.terminal_id
                )

    def announce_intents(
        self, terminal_id: str, intents: Iterable[Mapping[str, Any]]
    ) -> None:
        """Announce every skill of a published ``intent_action``."""
        for sent in sent_intents(terminal_id, intents):
            self.announce(sent)
