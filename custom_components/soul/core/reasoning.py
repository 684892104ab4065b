"""The model's part of a turn (§2 steps 8-10): ``fallback_reasoning``.

``Reasoner.reason(turn)`` asks the model once with the body's skills (when
the body can act), ``recall_memory`` (when memory is ready), the caller's
extra tools (Home Assistant's, for Assist) and the soul's MCP tools. Every
tool call is validated and run (a skill as ``invoke``); the round that chose
the skills gives the reply, and the results go to the response, the session
and the transcript. A second call follows a tool whose answer the model must
read (``recall_memory``, an extra or MCP tool) only, or every round with
``follow_up`` (at most ``max_rounds`` calls). Without a model, or when it
fails, the reply says so in character (``chat_phrases``); nothing raises.

Image inputs with a URL are attached to the user's message as image parts
until the endpoint refuses them once (HTTP 400/422): from then on they are
described as unavailable. A soul without a body (Assist, Star) talks with
its memory and the extra tools only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import untrusted
from .chat_phrases import STATUS_TEXT, phrase, reply_language
from .chat_request import MAX_TEXT
from .chat_tools import (
    RECALL_SPEC,
    RECALL_TOOL,
    ChatModel,
    ExtraTools,
    combine,
    tool_message,
)
from .cognition.driver import (
    JSON_INSTRUCTION,
    RESPONSE_FORMAT,
    ReplyField,
    parse_driver_reply,
)
from .cognition.profiles import (
    UPDATE_PROFILE_SPEC,
    UPDATE_PROFILE_TOOL,
    ProfileError,
    ProfileStore,
)
from .emotion.dynamics import ExecMode
from .invoker import (
    InvokeError,
    Invoker,
    PublishFailedError,
    TerminalOfflineError,
    UnknownTerminalError,
)
from .llm import LLMAuthError, LLMError, LLMRequestRejectedError, ModelReply
from .logs import trace_logger
from .memory.base import MemoryBackendError
from .memory.manager import MemoryManager
from .protocol import status_payload, utc_ts
from .registry import TerminalRegistry
from .session import Session
from .souls import SoulHub
from .topics import Kind, Publish, Topics, publish_to
from .transcript import ReplyStream
from .turn import Turn, context_lines, image_urls, reachable, result_note

_LOGGER = trace_logger(__name__)

MAX_REPLY = 4096  # a model's reply as stored and returned
MAX_TOOL_CALLS = 8  # tool calls run per model round
MAX_ARGUMENTS_BYTES = 64 * 1024
DEFAULT_MAX_ROUNDS = 3


class Reasoner:
    """Asks the model and runs the tools it calls."""

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
        max_rounds: int = DEFAULT_MAX_ROUNDS,
        follow_up: bool = False,
        on_no_model: Callable[[], None] = lambda: None,
        on_auth_failed: Callable[[], None] = lambda: None,
    ) -> None:
        """Wire the reasoner to its collaborators (all injectable for tests)."""
        self._registry = registry
        self._souls = souls
        self._invoker = invoker
        self._topics = topics
        self._publish = publish
        self._clock = clock
        self.model = model
        # Long-term memory (docs/memory.md); recall_memory is offered while ready.
        self.memory: MemoryManager | None = None
        self.max_rounds = max(1, max_rounds)
        # §2 step 8: one model call per turn unless follow-up rounds are wanted.
        self.follow_up = follow_up
        # Whether the endpoint takes image parts and structured output (the
        # F-brain's JSON): unknown until it answers a request with them.
        self.sees_images: bool | None = None
        self.structured: bool | None = None
        # Who the souls talk to (XingChen-V §5.2): read in the prompt, and the
        # model may record what a user tells about themselves.
        self.profiles: ProfileStore | None = None
        # Tools a soul has beyond its body (its MCP servers' tools, docs/mcp.md).
        self.soul_tools: Callable[[str], ExtraTools | None] = lambda _soul_id: None
        # The navigator's current suggestion for a session (one model turn's worth).
        self.suggestion: Callable[[Session], str | None] = lambda _session: None
        self.usage = {"prompt_tokens": 0, "completion_tokens": 0}
        self._on_no_model = on_no_model
        # The endpoint refused the key: the glue starts Home Assistant's reauth.
        self._on_auth_failed = on_auth_failed

    async def reason(self, turn: Turn, *, act: bool = True) -> None:
        """Let the model answer, acting through the turn's tools.

        ``act=False`` (a feeling or an exclamation, §4.4.3 ``no_action``): the
        model answers in words only — no tools, and a tool call it makes
        anyway is ignored.
        """
        turn.route = "llm"
        if self.model is None:
            turn.reply = phrase(turn.request.text, "no_model")
            self._on_no_model()
            return None
        if turn.transcript is not None:  # Assist: its prompt and LLM API, now
            turn.extra_tools = combine(
                turn.extra_tools, await turn.transcript.prepare()
            )
        terminal = self._registry.get(turn.request.terminal_id)
        turn.body_reachable = reachable(self._invoker, turn)
        turn.unreachable = False  # only an attempted action makes it so
        skills = (
            terminal.skills.skills
            if act and turn.body_reachable and terminal is not None and terminal.skills
            else ()
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
        if act and self.memory is not None and self.memory.ready:
            tools.append(RECALL_SPEC)
        if act and self.profiles is not None and turn.session.user_id:
            tools.append(UPDATE_PROFILE_SPEC)
        turn.extra_tools = (
            combine(turn.extra_tools, self.soul_tools(turn.session.soul_id))
            if act
            else None
        )
        # The model reads what memory and the other tools (Assist's, MCP
        # servers') answered; a body's skill acts, and is only read with
        # follow-up rounds on.
        informed = {RECALL_TOOL}
        if turn.extra_tools is not None:
            names = {s.name for s in skills}
            extra = [
                t for t in turn.extra_tools.specs if t["function"]["name"] not in names
            ]
            tools += extra
            informed.update(t["function"]["name"] for t in extra)
        turn.suggestion = self.suggestion(turn.session)
        rounds = self.max_rounds if self.follow_up else 2
        messages: list[dict[str, Any]] = []
        for round_no in range(rounds):
            try:
                if round_no == 0:
                    answer, messages = await self._first_answer(turn, tools)
                else:
                    answer = await self._ask(turn, messages, tools)
            except LLMError as err:
                return self._failed(turn, err)
            turn.model_calls += 1
            for key, value in answer.usage.items():
                self.usage[key] = self.usage.get(key, 0) + value
            content = untrusted.clean(answer.content, MAX_REPLY)
            said = parse_driver_reply(content, MAX_REPLY)
            if self.structured and content.strip() and said.emotion is None:
                self.structured = False  # accepted, not followed: instruct instead
            turn.reply = said.reply
            turn.inner_voice = said.inner_voice or turn.inner_voice
            turn.driver_emotion = said.emotion or turn.driver_emotion
            if not answer.tool_calls or not tools:
                return None
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
            failed: list[str] = []
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
                if call.name not in (RECALL_TOOL, UPDATE_PROFILE_TOOL):
                    turn.session.context.append(result_note(call.name, result))
                    if not result.get("ok"):
                        failed.append(call.name)
            reads = any(c.name in informed for c in calls)
            if (self.follow_up or reads) and round_no < rounds - 1:
                continue
            turn.closing = True  # tool results came after this round's text
            self._settle_reply(turn, said.reply, failed)
            return None
        return None

    async def _first_answer(
        self, turn: Turn, tools: list[dict[str, Any]]
    ) -> tuple[ModelReply, list[dict[str, Any]]]:
        """Ask the first round, learning what the endpoint takes.

        Structured output and image parts are sent until the endpoint refuses
        a request with them (HTTP 400/422): then the turn is asked again
        without structured output first, then without images, and the
        endpoint is remembered as not taking them.
        """
        images = (
            image_urls(turn.request.context) if self.sees_images is not False else []
        )
        while True:
            structured = self.structured is not False
            messages = self._messages(turn, images, structured=structured)
            try:
                answer = await self._ask(
                    turn,
                    messages,
                    tools,
                    response_format=RESPONSE_FORMAT if structured else None,
                )
            except LLMRequestRejectedError as err:
                # The refusal's words say which, when they do.
                blames_images = "image" in str(err).lower()
                if (
                    structured
                    and self.structured is None
                    and not (images and blames_images)
                ):
                    _LOGGER.info("The model refused structured output (%s)", err)
                    self.structured = False
                    continue
                if images:
                    _LOGGER.info("The model refused image parts (%s)", err)
                    self.sees_images, images = False, []
                    continue
                raise
            if structured:
                self.structured = True
            if images:
                self.sees_images = True
            return answer, messages

    def _failed(self, turn: Turn, err: LLMError) -> None:
        """Answer in character that the model failed."""
        _LOGGER.warning("LLM call failed: %s", err)
        if isinstance(err, LLMAuthError):
            self._on_auth_failed()
        turn.reply = phrase(turn.request.text, "model_failed")
        turn.streamed = False

    def _messages(
        self, turn: Turn, images: list[str], *, structured: bool
    ) -> list[dict[str, Any]]:
        """Return the system prompt and the history, images on the user's message."""
        raw = (
            turn.transcript.history()
            if turn.transcript is not None
            else list(turn.session.turns)
        )
        history: list[dict[str, Any]] = [dict(m) for m in raw]
        if images:
            for message in reversed(history):
                if message.get("role") == "user":
                    message["content"] = [
                        {"type": "text", "text": str(message.get("content") or "")},
                        *(
                            {"type": "image_url", "image_url": {"url": url}}
                            for url in images
                        ),
                    ]
                    break
        prompt = self._system_prompt(turn, frozenset(images))
        if not structured:
            prompt += "\n" + JSON_INSTRUCTION
        return [{"role": "system", "content": prompt}, *history]

    def _settle_reply(self, turn: Turn, content: str, failed: list[str]) -> None:
        """Give the reply of a round whose tool results the model will not read."""
        text = turn.request.text
        if turn.unreachable:
            reply = phrase(text, "unreachable")
        elif failed:
            reply = phrase(text, "failed", "、".join(dict.fromkeys(failed)))
        else:
            reply = content or phrase(text, "done")
        if reply != content:
            turn.reply = reply
            turn.streamed = False  # the transcript gets this reply, too

    async def _ask(
        self,
        turn: Turn,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        response_format: dict[str, Any] | None = None,
    ) -> ModelReply:
        """Ask the model once; with a transcript, stream its reply's words into it.

        Only the ``reply`` of a JSON answer is streamed (``ReplyField``): never
        the JSON, nor the inner voice.
        """
        assert self.model is not None  # noqa: S101 - checked by the caller
        if self.structured is not False and response_format is None:
            response_format = RESPONSE_FORMAT if self.structured else None
        kwargs = {"response_format": response_format} if response_format else {}
        if turn.transcript is None:
            return await self.model.chat(messages, tools, **kwargs)
        stream = ReplyStream(turn.transcript, MAX_REPLY)
        field = ReplyField()
        answer: ModelReply | None = None
        async for item in self.model.stream(messages, tools, **kwargs):
            if isinstance(item, str):
                if words := field.feed(item):
                    await stream.add(untrusted.clean(words, MAX_REPLY))
            else:
                answer = item
        await stream.end()
        if answer is None:  # the stream ended without its reply: a broken model
            raise LLMError("the streamed completion ended early")
        # The reply reached the transcript unless nothing was worth streaming.
        turn.streamed = bool(stream.streamed)
        return answer

    async def _tool(self, turn: Turn, call: Any) -> dict[str, Any]:
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
        if call.name == UPDATE_PROFILE_TOOL and self.profiles is not None:
            return self._update_profile(turn, arguments)
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
        if turn.bodiless:
            return {"ok": False, "error": "you have no body to run this with"}
        if turn.exec_mode is ExecMode.BLOCKED:
            return {"ok": False, "error": "the soul is not willing to act right now"}
        try:
            result = await self._invoker.invoke(
                turn.request.terminal_id, call.name, arguments
            )
        except (TerminalOfflineError, PublishFailedError, UnknownTerminalError) as err:
            turn.unreachable = True
            return {"ok": False, "error": str(err)}
        except InvokeError as err:
            return {"ok": False, "error": str(err)}
        if result.ok:
            turn.executed.append(call.name)
        return {"ok": result.ok, "output": result.output, "error": result.error}

    def _update_profile(self, turn: Turn, arguments: dict[str, Any]) -> dict[str, Any]:
        """Record what the user told about themselves (their profile, §5.2)."""
        assert self.profiles is not None  # noqa: S101 - checked by the caller
        if not (user_id := turn.session.user_id):
            return {"ok": False, "error": "this user has no profile"}
        try:
            profile = self.profiles.update(
                user_id,
                name=arguments.get("name"),
                preferences=arguments.get("preferences"),
            )
        except ProfileError as err:
            return {"ok": False, "error": str(err)}
        turn.executed.append(UPDATE_PROFILE_TOOL)
        return {"ok": True, "profile": profile.as_dict()}

    async def _recall(self, turn: Turn, arguments: dict[str, Any]) -> dict[str, Any]:
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

    async def _status(self, turn: Turn, status: str) -> None:
        """Tell the body what memory is doing (§3.7); a soul without one: nobody."""
        if turn.bodiless:
            return
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

    def _system_prompt(self, turn: Turn, attached: frozenset[str]) -> str:
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
        if self.profiles is not None and (
            about := self.profiles.prompt_line(turn.session.user_id)
        ):
            lines.append(about)
        if turn.session.summary:
            lines.append(f"Earlier in this conversation: {turn.session.summary}")
        if turn.suggestion:
            lines.append(
                f"Your navigator (your reflective mind) suggests: {turn.suggestion}"
            )
        context = context_lines(
            turn.session,
            current=len(turn.request.context),
            attached=attached,
            sees_images=self.sees_images,
        )
        if context:
            lines.append(f"Recent events and inputs (newest last):\n{context}")
        if turn.bodiless:
            lines.append(
                "You have no body yet: you cannot act in the physical world "
                "yourself; use the tools you are given, if any."
            )
        elif turn.body_reachable:
            lines.append("Use the body's tools to act.")
        else:
            lines.append(
                "Your body cannot be reached right now: you cannot act through "
                "it; if asked to, say so."
            )
        lines.append(
            "Answer briefly in the user's language. "
            "Answer NO_REPLY when nothing should be said."
        )
        return "\n".join(lines)
