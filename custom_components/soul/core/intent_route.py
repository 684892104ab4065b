"""The ``execute_intents`` route of a chat turn (§4.4, §3.9).

``IntentRoute.execute`` acts on the intent filter's response: it asks for a
missing slot, checks each intent's ``normalized`` arguments against its
skill's ``input_schema`` (all patterns of a turn on one budget), and then,
by the soul's execution mode, declines (``blocked``), asks first
(``confirm``: the session keeps the intents until a yes, ``confirmed``) or
publishes one ``intent_action`` (``auto_execute``). Nothing goes to a body
that is offline or stale; parts of the command the filter found nothing for
are named in the reply.
"""

from __future__ import annotations

from collections.abc import Callable
import json
from typing import Any

from . import safe_regex
from .chat_phrases import phrase
from .emotion.dynamics import ExecMode
from .invoker import Invoker
from .logs import trace_logger
from .protocol import intent_action_payload, utc_ts
from .random_ids import uuid4_text
from .registry import TerminalRegistry
from .topics import Flush, Kind, Publish, Topics, publish_to
from .turn import Turn, reachable, tell_held

_LOGGER = trace_logger(__name__)

ARGUMENT_CHECK_BUDGET = 0.015  # seconds all intents' schema patterns take in a turn
# Unmatched clauses a user meant as a command (not a negation, question or remark).
UNDONE_REASONS = frozenset({"no_catalog_match", "ambiguous", "max_intents", "not_read"})


class IntentRoute:
    """Runs a turn's intents through the body's ``intent_action``."""

    def __init__(
        self,
        registry: TerminalRegistry,
        invoker: Invoker,
        topics: Topics,
        publish: Publish,
        *,
        clock: Callable[[], float],
        flush: Flush,
    ) -> None:
        """Publish through ``publish`` and wait for ``flush`` after it."""
        self._registry = registry
        self._invoker = invoker
        self._topics = topics
        self._publish = publish
        self._clock = clock
        self._flush = flush

    async def execute(self, turn: Turn, response: dict[str, Any]) -> None:
        """Act on an ``execute_intents`` response: ask, decline, confirm or send."""
        turn.route = "intent"
        business = [
            i
            for i in response["intents"]
            if not str(i.get("intent_id", "")).startswith("sys.")
        ]
        unclear = [i for i in business if i.get("status") == "need_clarification"]
        if unclear:
            missing = ", ".join(
                str(m) for i in unclear for m in i.get("missing_parameters") or ()
            )
            turn.reply = phrase(turn.request.text, "clarify", missing)
            return
        intents = [i for i in business if i.get("status") == "ready"]
        valid = self._valid_intents(turn.request.terminal_id, intents)
        if not valid:
            turn.reply = phrase(turn.request.text, "invalid")
            return
        what = "、".join(str(i["intent_name"]) for i in valid)
        if turn.exec_mode is ExecMode.BLOCKED:
            turn.reply = phrase(turn.request.text, "blocked", what)
        elif not reachable(self._invoker, turn):
            turn.reply = phrase(turn.request.text, "unreachable")
        elif turn.exec_mode is ExecMode.CONFIRM:
            turn.session.pending = valid
            turn.reply = phrase(turn.request.text, "confirm", what)
        else:
            await self._send_intents(turn, valid)
            turn.reply = phrase(
                turn.request.text, "unreachable" if turn.unreachable else "done"
            )
            if not turn.unreachable and (undone := _undone(response)):
                turn.unmatched = undone
                turn.reply += phrase(turn.request.text, "undone", "”“".join(undone))

    def _valid_intents(
        self, terminal_id: str, intents: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """Return the §3.9 intents whose arguments fit their skills' schemas.

        The schemas' patterns share one budget for the whole turn.
        """
        with safe_regex.budget(ARGUMENT_CHECK_BUDGET):
            checked = [self._action_intent(terminal_id, i) for i in intents]
        return [i for i in checked if i is not None]

    def _action_intent(
        self, terminal_id: str, intent: dict[str, Any]
    ) -> dict[str, Any] | None:
        """Return the §3.9 intent when its arguments fit the skill's schema."""
        normalized = dict(intent.get("normalized") or {})
        skill_name = normalized.get("skill")
        terminal = self._registry.get(terminal_id)
        skill = (
            terminal.skills.skill(skill_name)
            if terminal is not None
            and terminal.skills is not None
            and isinstance(skill_name, str)
            else None
        )
        if skill is None:
            _LOGGER.warning(
                "Intent %s names no skill of %s", intent.get("intent_id"), terminal_id
            )
            return None
        arguments = {k: v for k, v in normalized.items() if k != "skill"}
        if errors := skill.argument_errors(arguments):
            _LOGGER.warning(
                "Intent %s has invalid arguments for %s: %s",
                intent.get("intent_id"), skill_name, "; ".join(errors),
            )  # fmt: skip
            return None
        return {
            "intent_id": intent.get("intent_id"),
            "intent_name": intent.get("intent_name") or intent.get("intent_id"),
            "confidence": intent.get("confidence"),
            "normalized": normalized,
        }

    async def _send_intents(self, turn: Turn, intents: list[dict[str, Any]]) -> None:
        """Publish one ``intent_action``, unless the body is unreachable."""
        request = turn.request
        if not reachable(self._invoker, turn):
            return
        payload = intent_action_payload(
            request_id=f"ia-{uuid4_text()}",
            session_id=request.session_id,
            terminal_id=request.terminal_id,
            soul_id=turn.session.soul_id,
            intents=intents,
            exec_probability=turn.exec_probability,
            ts=utc_ts(self._clock()),
        )
        turn.route = "intent"
        try:
            await publish_to(
                self._publish,
                self._topics,
                request.terminal_id,
                Kind.INTENT_ACTION,
                json.dumps(payload, ensure_ascii=False),
            )
        except Exception as err:  # noqa: BLE001 - the broker is down: say so in character
            _LOGGER.warning(
                "Could not publish intent_action to %s: %s", request.terminal_id, err
            )
            turn.unreachable = True
            return
        await self._flush()  # the intent_action leaves before the bookkeeping
        tell_held(turn.held)
        # Entities that mirror these skills follow (core.sent, the invoker's).
        self._invoker.sent.announce_intents(request.terminal_id, intents)
        turn.executed.extend(str(i["normalized"]["skill"]) for i in intents)

    async def confirmed(self, turn: Turn, intents: list[dict[str, Any]]) -> None:
        """Run the intents the user said yes to, if the soul is still willing."""
        turn.decision = "execute_intents"
        turn.route = "intent"
        what = "、".join(str(i["intent_name"]) for i in intents)
        if turn.exec_mode is ExecMode.BLOCKED:
            turn.reply = phrase(turn.request.text, "blocked", what)
            return
        await self._send_intents(turn, intents)
        turn.reply = phrase(
            turn.request.text, "unreachable" if turn.unreachable else "done"
        )


def _undone(response: dict[str, Any]) -> list[str]:
    """Return the command's parts the filter found nothing to run for."""
    unmatched = response.get("unmatched")
    if not isinstance(unmatched, list):
        return []
    return [
        str(item["span"]["text"]).strip()
        for item in unmatched
        if isinstance(item, dict)
        and item.get("reason") in UNDONE_REASONS
        and isinstance(item.get("span"), dict)
        and str(item["span"].get("text", "")).strip()
    ]
