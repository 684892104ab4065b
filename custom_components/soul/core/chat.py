"""The chat pipeline (§2, §4.2): an utterance becomes emotion, intent, action and a reply.

``ChatPipeline.chat(body)`` validates a §4.2.1 request, records the user
turn, moves the soul's emotion (``SoulHub.user_turn``, which publishes
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
  reply says so in character; nothing raises.

The reply ``<NO_REPLY>`` / ``NO_REPLY`` / ``[NO_REPLY]`` becomes ``""``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
import json
import logging
import re
from typing import Any, Protocol
import uuid

from . import safe_regex, untrusted
from .emotion.dynamics import ExecMode
from .intent_filter import IntentFilterError
from .intent_filter.text import detect_locale
from .invoker import InvokeError, Invoker
from .llm import LLMError, ModelReply
from .memory.base import MemoryBackendError
from .memory.manager import MemoryManager
from .protocol import intent_action_payload, status_payload, utc_ts
from .registry import TerminalRegistry
from .souls import NoSoulError, SoulHub
from .topics import Kind, Publish, Topics, publish_to, valid_terminal_id

_LOGGER = logging.getLogger(__name__)

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
MAX_REPLY = 4096  # a model's reply as stored and returned
MAX_TOOL_CALLS = 8  # tool calls run per model round
MAX_TOOL_MESSAGE = 16 * 1024  # a tool result as the model reads it
MAX_ARGUMENTS_BYTES = 64 * 1024
ARGUMENT_CHECK_BUDGET = 0.015  # seconds all intents' schema patterns take in a turn
MAX_TURNS = 20
MAX_SESSION_CHARS = 16 * 1024  # a stored transcript, oldest turns dropped first
MAX_SESSIONS = 256
DEFAULT_MAX_ROUNDS = 3
IDLE_SECONDS = 180.0  # §2 step 12: a session idle this long is summarised
MAX_SUMMARY = 600
_NO_REPLY = re.compile(r"^\s*(?:<NO_REPLY>|\[NO_REPLY\]|NO_REPLY)\s*$")
RECALL_TOOL = "recall_memory"
RECALL_SPEC: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": RECALL_TOOL,
        "description": "Search long-term memory of this user (facts they told you, "
        "earlier conversations) before answering questions about the past.",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "what to recall"}
            },
            "required": ["query"],
        },
    },
}
_STATUS_TEXT = {
    "zh": {
        "mem0_searching": "正在回顾历史记忆，请稍候。",
        "mem0_search_done": "记忆查询完成。",
        "mem0_search_failed": "记忆查询失败，直接回答。",
    },
    "en": {
        "mem0_searching": "Looking through memories, one moment.",
        "mem0_search_done": "Memory search done.",
        "mem0_search_failed": "Memory search failed; answering without it.",
    },
}
_YES = re.compile(
    r"^\s*(?:好的?|好啊|可以|行|是的?|对|确认|执行吧?|嗯|yes|yeah|yep|sure|ok(?:ay)?|"
    r"go ahead|do it|confirm)\s*[。.!！]*\s*$",
    re.IGNORECASE,
)


class ChatError(ValueError):
    """A request the pipeline refuses; ``str()`` is the §4.3 ``error``."""


class SessionOwnerError(ChatError):
    """The session belongs to another user (HTTP 403)."""


class ChatModel(Protocol):
    """The language model: ``OpenAICompatibleLLM`` or a test double."""

    async def chat(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> ModelReply:
        """Return one completion."""


class ExtraTools(Protocol):
    """Tools offered next to the body's skills (e.g. Home Assistant's Assist API)."""

    specs: list[dict[str, Any]]  # OpenAI function tools

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """Run a tool; raise for failures (the model reads the error)."""


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """A validated §4.2.1 request."""

    session_id: str
    terminal_id: str
    text: str
    user_id: str | None = None
    soul_id: str | None = None
    # Inputs other than keyboard/speech text: kept as context, not used yet.
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


def parse_chat_request(body: Any) -> ChatRequest:
    """Validate a §4.2.1 body exactly as §4.2.1 and §4.3 say; raise ``ChatError``."""
    if not isinstance(body, Mapping):
        raise ChatError("the request body must be a JSON object")
    session_id = _id(body, "session_id", required=True)
    terminal_id = _id(body, "terminal_id", required=True)
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
        text = item.get("text")
        if kind in TEXT_TYPES and isinstance(text, str) and text.strip():
            if len(text) > MAX_TEXT:
                raise ChatError(f"the text must be at most {MAX_TEXT} characters")
            try:
                untrusted.text(text, "the text", max_length=MAX_TEXT, multiline=True)
            except untrusted.UntrustedInputError as err:
                raise ChatError(str(err)) from None
            texts.append(text.strip())
        elif kind in KNOWN_TYPES:
            try:
                untrusted.check_json(
                    item,
                    max_bytes=MAX_CONTEXT_ITEM_BYTES,
                    max_depth=8,
                    what=f"a {kind} input",
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
        context=tuple(context),
    )


def normalize_reply(text: str | None) -> str:
    """Return the reply, with the NO_REPLY forms of §4.2.2 as ``""``."""
    if not text or _NO_REPLY.match(text):
        return ""
    return text.strip()


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

    def add_turn(self, role: str, content: str) -> None:
        """Append a turn; the transcript keeps within ``MAX_SESSION_CHARS``."""
        self.turns.append({"role": role, "content": content[:MAX_TEXT]})
        total = sum(len(t["content"]) for t in self.turns)
        while total > MAX_SESSION_CHARS and len(self.turns) > 1:
            total -= len(self.turns.popleft()["content"])

    def idle(self, now: float) -> bool:
        """Return whether the session has been idle long enough and is unsummarised."""
        return (
            self.last_user_at > self.summarized_for
            and now - self.last_user_at >= IDLE_SECONDS
        )

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
        }

    @classmethod
    def from_dict(cls, data: Any) -> Session | None:
        """Return a stored session, or None when malformed."""
        try:
            session = cls(
                session_id=str(data["session_id"]),
                terminal_id=str(data["terminal_id"]),
                soul_id=str(data["soul_id"]),
                user_id=data.get("user_id"),
                last_user_at=float(data["last_user_at"]),
                summary=str(data.get("summary", "")),
                summarized_for=float(data.get("summarized_for", 0.0)),
            )
            for turn in data.get("turns", []):
                if turn.get("role") in ("user", "assistant"):
                    session.add_turn(
                        turn["role"], untrusted.clean(turn["content"], MAX_TEXT)
                    )
        except (KeyError, TypeError, ValueError, AttributeError):
            return None
        return session


def extractive_summary(session: Session) -> str:
    """Summarise without a model: the user's turns, newest last, within a limit."""
    said = [
        t["content"].replace("\n", " ") for t in session.turns if t["role"] == "user"
    ]
    text = " / ".join(said)
    if len(text) > MAX_SUMMARY:
        text = "… " + text[-(MAX_SUMMARY - 2) :]
    return text


_PHRASES = {
    "zh": {
        "done": "好的。",
        "confirm": "要我现在执行{what}吗？",
        "blocked": "我现在心情不好，先不做{what}了。",
        "clarify": "请告诉我{what}。",
        "no_model": "没有语言模型，我没法思考这个问题。",
        "model_failed": "我刚才走神了，没能想好，请再说一次。",
        "invalid": "我听懂了，但这个指令的参数不对，没法执行。",
        "unreachable": "我现在联系不上身体，没能执行。",
    },
    "en": {
        "done": "Okay.",
        "confirm": "Shall I {what} now?",
        "blocked": "I'm not in the mood to {what} right now.",
        "clarify": "Please tell me {what}.",
        "no_model": "I can't think about that without a language model.",
        "model_failed": "My mind wandered and I couldn't think that through; please say it again.",
        "invalid": "I understood, but the command's arguments are not valid, so I can't run it.",
        "unreachable": "I can't reach my body right now, so I couldn't do that.",
    },
}


def _lang(text: str) -> str:
    """Return the language Soul answers ``text`` in: ``zh`` or ``en``."""
    return "zh" if detect_locale(text).startswith("zh") else "en"


def _phrase(text: str, key: str, what: str = "") -> str:
    return _PHRASES[_lang(text)][key].format(what=what)


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
        on_summary: Callable[[Session], Awaitable[None]] | None = None,
        on_dirty: Callable[[], None] = lambda: None,
        on_no_model: Callable[[], None] = lambda: None,
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
        self.sessions: dict[str, Session] = {}
        self.usage = {"prompt_tokens": 0, "completion_tokens": 0}
        self.last_route: str | None = None
        # The memory hook: called with each new idle summary (issue 7 fills it).
        self.on_summary = on_summary
        self._on_dirty = on_dirty
        self._on_no_model = on_no_model

    # -- sessions -----------------------------------------------------------------

    def load(self, data: Any) -> None:
        """Take stored sessions (``dump()``'s); unsummarised ones are summarised later."""
        if not isinstance(data, dict) or not isinstance(data.get("sessions"), list):
            return
        for raw in data["sessions"][-MAX_SESSIONS:]:
            if (session := Session.from_dict(raw)) is not None:
                self.sessions[session.session_id] = session

    def dump(self) -> dict[str, Any]:
        """Return the sessions for storage."""
        return {"sessions": [s.as_dict() for s in self.sessions.values()]}

    async def summarize_idle(self) -> list[Session]:
        """Summarise every session idle for 3 minutes since its last user turn.

        Runs off the chat path (the glue calls it periodically). A summary is
        made by the model when there is one, else extractively; it becomes the
        session's ``context_summary`` and goes to the memory hook.
        """
        now = self._clock()
        done = []
        for session in [s for s in self.sessions.values() if s.idle(now)]:
            covered = session.last_user_at
            session.summary = await self._summary(session)
            session.summarized_for = covered
            done.append(session)
            if self.on_summary is not None:
                try:
                    await self.on_summary(session)
                except Exception:
                    _LOGGER.exception(
                        "The summary hook failed for %s", session.session_id
                    )
            if self.memory is not None:
                # Queued on disk first; sent now or when the backend is back.
                await self.memory.archive_session(
                    session_id=session.session_id,
                    terminal_id=session.terminal_id,
                    soul_id=session.soul_id,
                    user_id=session.user_id,
                    summary=session.summary,
                    turns=list(session.turns),
                )
        if done:
            self._on_dirty()
        return done

    async def _summary(self, session: Session) -> str:
        if self.model is not None:
            transcript = "\n".join(
                f"{t['role']}: {t['content']}" for t in session.turns
            )
            try:
                answer = await self.model.chat(
                    [
                        {
                            "role": "system",
                            "content": "Summarise this conversation in at most three "
                            "sentences, in its language. Keep facts about the user.",
                        },
                        {"role": "user", "content": transcript},
                    ],
                    [],
                )
            except LLMError as err:
                _LOGGER.warning("Summary by the model failed: %s", err)
            else:
                if text := normalize_reply(answer.content):
                    return untrusted.clean(text, MAX_SUMMARY)
        return extractive_summary(session)

    # -- the turn ---------------------------------------------------------------

    async def chat(
        self, body: Any, *, extra_tools: ExtraTools | None = None
    ) -> dict[str, Any]:
        """Answer one §4.2.1 request with a §4.2.2 response; raise ``ChatError``.

        ``extra_tools`` are offered to the model next to the body's skills.
        """
        request = parse_chat_request(body)
        existing = self.sessions.get(request.session_id)
        if existing is not None and existing.user_id != request.user_id:
            raise SessionOwnerError(
                f"session {request.session_id!r} belongs to another user"
            )
        soul = self._souls.soul_of(request.terminal_id)
        if soul is None and request.soul_id and self._souls.soul(request.soul_id):
            self._souls.bind(request.terminal_id, request.soul_id)
            soul = self._souls.soul(request.soul_id)
        if soul is None:
            raise ChatError(NO_SOUL_ERROR)
        session = self._session(request, soul.soul_id)
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
            request, session, snapshot.exec_mode, snapshot.exec_probability, extra_tools
        )
        result.user_emotion = user_emotion
        if session.pending and _YES.match(request.text):
            intents, session.pending = session.pending, []
            await self._send_intents(result, intents)
            result.decision = "execute_intents"
            if result.unreachable:
                result.reply = _phrase(request.text, "unreachable")
        else:
            session.pending = []
            await self._route(result)
        reply = untrusted.clean(normalize_reply(result.reply), MAX_REPLY)
        if reply:
            session.add_turn("assistant", reply)
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

    def _session(self, request: ChatRequest, soul_id: str) -> Session:
        session = self.sessions.get(request.session_id)
        if session is None or session.terminal_id != request.terminal_id:
            session = self.sessions[request.session_id] = Session(
                request.session_id, request.terminal_id, soul_id, request.user_id
            )
            while len(self.sessions) > MAX_SESSIONS:
                del self.sessions[next(iter(self.sessions))]
        session.soul_id = soul_id
        self._on_dirty()
        return session

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
            turn.reply = _phrase(turn.request.text, "clarify", missing)
            return
        intents = [i for i in business if i.get("status") == "ready"]
        valid = self._valid_intents(turn.request.terminal_id, intents)
        if not valid:
            turn.reply = _phrase(turn.request.text, "invalid")
            return
        what = "、".join(str(i["intent_name"]) for i in valid)
        if turn.exec_mode is ExecMode.BLOCKED:
            turn.reply = _phrase(turn.request.text, "blocked", what)
        elif turn.exec_mode is ExecMode.CONFIRM:
            turn.session.pending = valid
            turn.reply = _phrase(turn.request.text, "confirm", what)
        else:
            await self._send_intents(turn, valid)
            turn.reply = _phrase(
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
        turn.executed.extend(str(i["normalized"]["skill"]) for i in intents)

    # -- fallback_reasoning -----------------------------------------------------

    async def _reason(self, turn: _Turn) -> None:
        turn.route = "llm"
        if self.model is None:
            turn.reply = _phrase(turn.request.text, "no_model")
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
        messages = [
            {"role": "system", "content": self._system_prompt(turn)},
            *list(turn.session.turns),
        ]
        for _round in range(self.max_rounds):
            try:
                answer = await self.model.chat(messages, tools)
            except LLMError as err:
                _LOGGER.warning("LLM call failed: %s", err)
                turn.reply = _phrase(turn.request.text, "model_failed")
                return
            for key, value in answer.usage.items():
                self.usage[key] = self.usage.get(key, 0) + value
            content = untrusted.clean(answer.content, MAX_REPLY)
            if not answer.tool_calls:
                turn.reply = content
                return
            calls = answer.tool_calls[:MAX_TOOL_CALLS]
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
            messages.extend(
                [
                    {
                        "role": "tool",
                        "tool_call_id": call.call_id,
                        "content": _tool_message(await self._tool(turn, call)),
                    }
                    for call in calls
                ]
            )
            turn.reply = content
        # Out of rounds: the last text the model gave, if any.

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
                    _STATUS_TEXT[_lang(turn.request.text)][status],
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
        lines.append(
            "Use the body's tools to act. Answer briefly in the user's language. "
            "Answer NO_REPLY when nothing should be said."
        )
        return "\n".join(lines)


def _tool_message(result: dict[str, Any]) -> str:
    """Return a tool's result as the model reads it: JSON, cut to a size."""
    text = json.dumps(result, ensure_ascii=False, default=str)
    if len(text) > MAX_TOOL_MESSAGE:
        text = text[:MAX_TOOL_MESSAGE] + " …(cut)"
    return untrusted.clean(text, MAX_TOOL_MESSAGE + 8)


@dataclass
class _Turn:
    """What one turn has found and done so far."""

    request: ChatRequest
    session: Session
    exec_mode: ExecMode
    exec_probability: float
    extra_tools: ExtraTools | None = None
    user_emotion: dict[str, Any] = field(default_factory=dict)
    decision: str = "fallback_reasoning"
    route: str = "no_action"
    reply: str = ""
    executed: list[str] = field(default_factory=list)
    unreachable: bool = False  # publishing to the body failed
