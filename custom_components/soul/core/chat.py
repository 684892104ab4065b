"""The chat pipeline (§2, §4.2): an utterance becomes emotion, intent, action and a reply.

``ChatPipeline.chat(body)`` validates a §4.2.1 request (``chat_request``),
records the user turn in its ``Session`` (``session``), moves the soul's emotion (``SoulHub.user_turn``, which publishes
``emotion_update``), runs the intent filter on the terminal's catalog and
routes on ``decision.action`` only:

- ``execute_intents`` — each intent's ``normalized`` arguments are checked
  against the target skill's ``input_schema``; ``auto_execute`` publishes one
  ``intent_action`` (§3.9), ``confirm`` asks first (a yes in the next turn
  runs it), ``blocked`` declines; ``need_clarification`` asks for the slot.
- ``no_action`` — an empty reply.
- ``fallback_reasoning`` — one LLM call whose tools are the terminal's skills;
  every tool call is validated and sent as ``invoke``, its ``result`` fed back,
  for at most ``max_rounds`` rounds. Without a model, or when it fails, the
  reply says so in character (``chat_phrases``); nothing raises.

The reply ``<NO_REPLY>`` / ``NO_REPLY`` / ``[NO_REPLY]`` becomes ``""``. The
sessions, their storage and idle summaries are ``sessions.Sessions``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
import json
import logging
from typing import Any
import uuid

from . import safe_regex, untrusted
from .chat_phrases import (
    CONFIRM_YES,
    STATUS_TEXT,
    normalize_reply,
    phrase,
    reply_language,
)
from .chat_request import (
    MAX_TEXT,
    NO_SOUL_ERROR,
    ChatError,
    ChatRequest,
    SessionOwnerError,
    SoulMismatchError,
    UnknownSoulIdError,
    UnknownTerminalError,
    parse_chat_request,
)
from .chat_tools import RECALL_SPEC, RECALL_TOOL, ChatModel, ExtraTools, tool_message
from .emotion.dynamics import ExecMode
from .intent_filter import IntentFilterError
from .invoker import InvokeError, Invoker
from .llm import LLMAuthError, LLMError, ModelReply
from .memory.base import MemoryBackendError
from .memory.manager import MemoryManager
from .protocol import intent_action_payload, status_payload, utc_ts
from .registry import TerminalRegistry
from .session import Session
from .sessions import Sessions
from .souls import NoSoulError, Soul, SoulHub
from .topics import Kind, Publish, Topics, publish_to
from .transcript import ReplyStream, Transcript

_LOGGER = logging.getLogger(__name__)

MAX_REPLY = 4096  # a model's reply as stored and returned
MAX_TOOL_CALLS = 8  # tool calls run per model round
MAX_ARGUMENTS_BYTES = 64 * 1024
ARGUMENT_CHECK_BUDGET = 0.015  # seconds all intents' schema patterns take in a turn
MAX_CONTEXT_IN_PROMPT = 5  # latest non-text inputs and events in the system prompt
MAX_CONTEXT_LINE = 300
DEFAULT_MAX_ROUNDS = 3


class ChatPipeline:
    """Runs chat turns against the registry, the souls and an optional model."""

    def __init__(
        self,
        registry: TerminalRegistry,
        souls: SoulHub,
        invoker: Invoker,
        topics: Topics,
        publish: Publish,
        *,
        clock: Callable[[], float],
        model: ChatModel | None = None,
        default_timezone: Callable[[], str] = lambda: "UTC",
        max_rounds: int = DEFAULT_MAX_ROUNDS,
        on_dirty: Callable[[], None] = lambda: None,
        on_no_model: Callable[[], None] = lambda: None,
        on_auth_failed: Callable[[], None] = lambda: None,
        apply_hint: Callable[[str, str], str | None] = lambda _t, _h: None,
    ) -> None:
        """Wire the pipeline to its collaborators (all injectable for tests)."""
        self._registry = registry
        self._souls = souls
        self._invoker = invoker
        self._topics = topics
        self._publish = publish
        self._clock = clock
        self.model = model
        # Long-term memory (docs/memory.md); recall_memory is offered while ready.
        self.memory: MemoryManager | None = None
        self._timezone = default_timezone
        self.max_rounds = max(1, max_rounds)
        self.sessions = Sessions(clock=clock, on_dirty=on_dirty)
        self.usage = {"prompt_tokens": 0, "completion_tokens": 0}
        self.last_route: str | None = None
        self._on_no_model = on_no_model
        # The endpoint refused the key: the glue starts Home Assistant's reauth.
        self._on_auth_failed = on_auth_failed
        # A chat request's soul_hint, applied as a body's (the glue may create a soul).
        self._apply_hint = apply_hint

    async def summarize_idle(self) -> list[Session]:
        """Summarise the idle sessions with this pipeline's model and memory."""
        return await self.sessions.summarize_idle(self.model, self.memory)

    # -- the turn ---------------------------------------------------------------

    async def chat(
        self,
        body: Any,
        *,
        extra_tools: ExtraTools | None = None,
        transcript: Transcript | None = None,
    ) -> dict[str, Any]:
        """Answer one §4.2.1 request with a §4.2.2 response; raise ``ChatError``.

        ``extra_tools`` are offered to the model next to the body's skills.
        With a ``transcript`` the model's messages come from it, the model
        streams, and every step of the turn goes to it (``core.transcript``).
        """
        request = parse_chat_request(body)
        existing = self.sessions.get(request.session_id)
        if existing is not None and existing.user_id != request.user_id:
            raise SessionOwnerError(
                f"session {request.session_id!r} belongs to another user"
            )
        soul = self._soul_for(request)
        session = self.sessions.open(
            request.session_id, request.terminal_id, soul.soul_id, request.user_id
        )
        session.add_turn("user", request.text)
        session.context.extend(request.context)
        session.last_user_at = self._clock()
        try:
            user_emotion, snapshot = await self._souls.user_turn(
                request.terminal_id, request.text, request.session_id
            )
        except NoSoulError as err:
            raise ChatError(NO_SOUL_ERROR) from err
        result = _Turn(
            request,
            session,
            snapshot.exec_mode,
            snapshot.exec_probability,
            extra_tools,
            transcript,
        )
        result.user_emotion = user_emotion
        if session.pending and CONFIRM_YES.match(request.text):
            intents, session.pending = session.pending, []
            await self._send_intents(result, intents)
            result.decision = "execute_intents"
            if result.unreachable:
                result.reply = phrase(request.text, "unreachable")
        else:
            session.pending = []
            await self._route(result)
        reply = untrusted.clean(normalize_reply(result.reply), MAX_REPLY)
        if reply:
            session.add_turn("assistant", reply)
            if transcript is not None and not result.streamed:
                await transcript.reply(reply)
        self.last_route = result.route
        return {
            "session_id": request.session_id,
            "terminal_id": request.terminal_id,
            "soul_id": soul.soul_id,
            "reply": reply,
            "executed_skills": result.executed,
            "context_summary": session.summary,
            "intent_decision": result.decision,
            "exec_mode": snapshot.exec_mode.value,
            "exec_probability": snapshot.exec_probability,
        }

    def _soul_for(self, request: ChatRequest) -> Soul:
        """Return the terminal's soul; bind one on first contact (§4.2.1).

        ``soul_id`` binds an unbound terminal and must match a bound one;
        ``soul_hint`` acts as a body's own hint (the terminal's first contact
        only). Without either, an unbound terminal is refused: an unknown one
        says so, a known one gets §4.3's ``NO_SOUL_ERROR``.
        """
        terminal_id = request.terminal_id
        soul = self._souls.soul_of(terminal_id)
        if request.soul_id is not None:
            wanted = self._souls.soul(request.soul_id)
            if wanted is None:
                raise UnknownSoulIdError(f"unknown soul_id {request.soul_id!r}")
            if soul is None:
                self._souls.bind(terminal_id, wanted.soul_id)
                return wanted
            if soul.soul_id != wanted.soul_id:
                raise SoulMismatchError(
                    f"terminal {terminal_id!r} is bound to soul {soul.soul_id!r} "
                    f"({soul.name}), not {request.soul_id!r}; bind it to another "
                    "soul with POST /api/soul/v1/souls/select"
                )
        if (
            soul is None
            and request.soul_hint is not None
            and (soul_id := self._apply_hint(terminal_id, request.soul_hint))
        ):
            soul = self._souls.soul(soul_id)
        if soul is not None:
            return soul
        if self._registry.get(terminal_id) is None:
            raise UnknownTerminalError(
                f"unknown terminal_id {terminal_id!r}: no body with this id has "
                "connected and no soul is bound to it"
            )
        raise ChatError(NO_SOUL_ERROR)

    async def _route(self, turn: _Turn) -> None:
        terminal = self._registry.get(turn.request.terminal_id)
        response: dict[str, Any] | None = None
        if terminal is not None and terminal.catalog and terminal.catalog.intents:
            try:
                response = self._registry.filter_command(
                    turn.request.terminal_id,
                    {
                        "command": turn.request.text,
                        "session_id": turn.request.session_id,
                    },
                    default_timezone=self._timezone(),
                )
            except IntentFilterError as err:
                _LOGGER.warning(
                    "Intent filter failed for %s: %s", turn.request.terminal_id, err
                )
        action = response["decision"]["action"] if response else "fallback_reasoning"
        turn.decision = action
        if action == "execute_intents" and response is not None:
            await self._execute(turn, response)
        elif action == "no_action":
            turn.route = "no_action"
        else:
            await self._reason(turn)

    # -- execute_intents --------------------------------------------------------

    async def _execute(self, turn: _Turn, response: dict[str, Any]) -> None:
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
        elif turn.exec_mode is ExecMode.CONFIRM:
            turn.session.pending = valid
            turn.reply = phrase(turn.request.text, "confirm", what)
        else:
            await self._send_intents(turn, valid)
            turn.reply = phrase(
                turn.request.text, "unreachable" if turn.unreachable else "done"
            )

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

    async def _send_intents(self, turn: _Turn, intents: list[dict[str, Any]]) -> None:
        request = turn.request
        payload = intent_action_payload(
            request_id=f"ia-{uuid.uuid4()}",
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
        # Entities that mirror these skills follow (core.sent, the invoker's).
        self._invoker.sent.announce_intents(request.terminal_id, intents)
        turn.executed.extend(str(i["normalized"]["skill"]) for i in intents)

    # -- fallback_reasoning -----------------------------------------------------

    async def _reason(self, turn: _Turn) -> None:
        turn.route = "llm"
        if self.model is None:
            turn.reply = phrase(turn.request.text, "no_model")
            self._on_no_model()
            return
        terminal = self._registry.get(turn.request.terminal_id)
        skills = (
            terminal.skills.skills if terminal is not None and terminal.skills else ()
        )
        tools = [
            {
                "type": "function",
                "function": {
                    "name": s.name,
                    "description": s.description or s.name,
                    "parameters": s.input_schema,
                },
            }
            for s in skills
        ]
        if self.memory is not None and self.memory.ready:
            tools.append(RECALL_SPEC)
        if turn.extra_tools is not None:
            names = {s.name for s in skills}
            tools += [
                t for t in turn.extra_tools.specs if t["function"]["name"] not in names
            ]
        history = (
            turn.transcript.history()
            if turn.transcript is not None
            else list(turn.session.turns)
        )
        messages = [{"role": "system", "content": self._system_prompt(turn)}, *history]
        for _round in range(self.max_rounds):
            try:
                answer = await self._ask(turn, messages, tools)
            except LLMError as err:
                _LOGGER.warning("LLM call failed: %s", err)
                if isinstance(err, LLMAuthError):
                    self._on_auth_failed()
                turn.reply = phrase(turn.request.text, "model_failed")
                turn.streamed = False
                return
            for key, value in answer.usage.items():
                self.usage[key] = self.usage.get(key, 0) + value
            content = untrusted.clean(answer.content, MAX_REPLY)
            turn.reply = content
            if not answer.tool_calls:
                return
            calls = answer.tool_calls[:MAX_TOOL_CALLS]
            if turn.transcript is not None:
                await turn.transcript.tool_calls(calls)
            messages.append(
                {
                    "role": "assistant",
                    "content": content,
                    "tool_calls": [
                        {
                            "id": c.call_id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": c.arguments},
                        }
                        for c in calls
                    ],
                }
            )
            # One after the other: a body runs one skill at a time.
            for call in calls:
                result = await self._tool(turn, call)
                if turn.transcript is not None:
                    await turn.transcript.tool_result(call, result)
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": call.call_id,
                        "content": tool_message(result),
                    }
                )
        # Out of rounds: the last text the model gave, if any.

    async def _ask(
        self,
        turn: _Turn,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
    ) -> ModelReply:
        """Ask the model once; with a transcript, stream its text into it."""
        assert self.model is not None  # noqa: S101 - checked by the caller
        if turn.transcript is None:
            return await self.model.chat(messages, tools)
        stream = ReplyStream(turn.transcript)
        answer: ModelReply | None = None
        async for item in self.model.stream(messages, tools):
            if isinstance(item, str):
                await stream.add(untrusted.clean(item, MAX_REPLY))
            else:
                answer = item
        await stream.end()
        if answer is None:  # the stream ended without its reply: a broken model
            raise LLMError("the streamed completion ended early")
        # The reply reached the transcript unless nothing was worth streaming.
        turn.streamed = bool(stream.streamed)
        return answer

    async def _tool(self, turn: _Turn, call: Any) -> dict[str, Any]:
        """Run one tool call; every failure becomes a result the model can read."""
        try:
            arguments = untrusted.loads(
                call.arguments or "{}",
                max_bytes=MAX_ARGUMENTS_BYTES,
                max_depth=16,
                what="the arguments",
            )
        except untrusted.UntrustedInputError as err:
            return {"ok": False, "error": str(err)}
        if not isinstance(arguments, dict):
            return {"ok": False, "error": "arguments must be a JSON object"}
        if call.name == RECALL_TOOL and self.memory is not None:
            return await self._recall(turn, arguments)
        extra = turn.extra_tools
        terminal = self._registry.get(turn.request.terminal_id)
        is_skill = (
            terminal is not None
            and terminal.skills is not None
            and terminal.skills.skill(call.name) is not None
        )
        if (
            extra is not None
            and not is_skill
            and any(t["function"]["name"] == call.name for t in extra.specs)
        ):
            try:
                output = await extra.call(call.name, arguments)
            except Exception as err:  # noqa: BLE001 - the model reads the error
                return {"ok": False, "error": f"{type(err).__name__}: {err}"}
            turn.executed.append(call.name)
            return {"ok": True, "output": output}
        if turn.exec_mode is ExecMode.BLOCKED:
            return {"ok": False, "error": "the soul is not willing to act right now"}
        try:
            result = await self._invoker.invoke(
                turn.request.terminal_id, call.name, arguments
            )
        except InvokeError as err:
            return {"ok": False, "error": str(err)}
        if result.ok:
            turn.executed.append(call.name)
        return {"ok": result.ok, "output": result.output, "error": result.error}

    async def _recall(self, turn: _Turn, arguments: dict[str, Any]) -> dict[str, Any]:
        """Search memory between ``mem0_searching`` and ``done``/``failed`` (§3.7)."""
        assert self.memory is not None  # noqa: S101 - checked by the caller
        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip():
            query = turn.request.text
        await self._status(turn, "mem0_searching")
        try:
            found = await self.memory.recall(
                query, user_id=turn.session.user_id, soul_id=turn.session.soul_id
            )
        except MemoryBackendError as err:
            _LOGGER.warning("Memory search failed: %s", err)
            await self._status(turn, "mem0_search_failed")
            return {"ok": False, "error": "memory is unavailable; answer without it"}
        await self._status(turn, "mem0_search_done")
        turn.executed.append(RECALL_TOOL)
        return {
            "ok": True,
            "memories": [untrusted.clean(item.text, MAX_TEXT) for item in found],
        }

    async def _status(self, turn: _Turn, status: str) -> None:
        try:
            await publish_to(
                self._publish,
                self._topics,
                turn.request.terminal_id,
                Kind.STATUS,
                status_payload(
                    status,
                    STATUS_TEXT[reply_language(turn.request.text)][status],
                    turn.request.session_id,
                    utc_ts(self._clock()),
                ),
            )
        except Exception as err:  # noqa: BLE001 - the broker is down: one line
            _LOGGER.warning("Could not publish status %s: %s", status, err)

    def _system_prompt(self, turn: _Turn) -> str:
        soul = self._souls.soul(turn.session.soul_id)
        snapshot = self._souls.snapshot(turn.session.soul_id)
        lines = []
        if soul is not None:
            lines.append(f"You are {soul.name}, a soul with the MBTI type {soul.mbti}.")
            if soul.persona_text:
                lines.append(f"Persona: {soul.persona_text}")
        if snapshot is not None:
            lines.append(
                f"Your mood is {snapshot.mood.value} (pleasure {snapshot.p}, arousal "
                f"{snapshot.a}, dominance {snapshot.d}); you are "
                f"{snapshot.exec_mode.value.replace('_', ' ')} actions."
            )
        emotion = turn.user_emotion
        if emotion.get("emotion") not in (None, "neutral"):
            lines.append(
                f"The user's emotion: {emotion['emotion']} "
                f"(intensity {emotion.get('intensity', 0)}); respond to it."
            )
        if turn.session.summary:
            lines.append(f"Earlier in this conversation: {turn.session.summary}")
        if context := _recent_context(turn.session):
            lines.append(f"Recent events and inputs (newest last):\n{context}")
        lines.append(
            "Use the body's tools to act. Answer briefly in the user's language. "
            "Answer NO_REPLY when nothing should be said."
        )
        return "\n".join(lines)


def _recent_context(session: Session) -> str:
    """Return the session's latest non-text inputs and events, one short line each."""
    items = list(session.context)[-MAX_CONTEXT_IN_PROMPT:]
    return "\n".join(
        "- " + json.dumps(item, ensure_ascii=False, default=str)[:MAX_CONTEXT_LINE]
        for item in items
    )


@dataclass
class _Turn:
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
    unreachable: bool = False  # publishing to the body failed
    streamed: bool = False  # the reply reached the transcript piece by piece
