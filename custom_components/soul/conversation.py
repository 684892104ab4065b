"""One Assist conversation agent per soul, acting through one of its bodies.

A soul without a body talks too, with the model and the selected LLM APIs.

A turn goes through the same chat pipeline as ``POST /api/soul/v1/chat``:
emotion, intent filter, ``intent_action`` or the language model with the
body's skills — and, when the soul's subentry selects Home Assistant LLM APIs
(such as Assist), their tools as well. Home Assistant's chat log is the
conversation's one history: the model's messages are built from it, the
model's reply streams into it token by token, and every tool call and result
(the body's skills, ``recall_memory``, Assist's tools) is recorded in it, so
Assist's debug view shows the whole turn. Home Assistant's prompt and the
LLM APIs' tools are given to the chat log only when the model is asked
(``ChatLogTranscript.prepare``): a turn the intent filter answers skips them.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
import json
from typing import Any, Literal

from homeassistant.components import conversation
from homeassistant.const import CONF_LLM_HASS_API, MATCH_ALL
from homeassistant.core import HomeAssistant
from homeassistant.helpers import intent, llm
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback
from homeassistant.util.ulid import ulid_now

from .access import principal_of
from .compat import schema_to_json, tool_output, tool_result_data, tool_result_delta
from .const import CONF_TERMINAL, DOMAIN
from .core import untrusted
from .core.access import SYSTEM
from .core.chat_phrases import phrase
from .core.chat_request import ChatError
from .core.chat_tools import ExtraTools, tool_message
from .core.llm import ToolCall
from .core.reasoning import MAX_ARGUMENTS_BYTES
from .core.soul import Soul
from .entity import SoulDeviceEntity, async_setup_soul_entities
from .helpers import soul_options
from .models import SoulConfigEntry

PARALLEL_UPDATES = 0
MAX_HISTORY = 40  # chat log messages the model reads, the latest

type _Delta = (
    conversation.AssistantContentDeltaDict | conversation.ToolResultContentDeltaDict
)


class AssistTools:
    """Home Assistant LLM API tools, offered to the model next to the skills."""

    def __init__(self, api: llm.APIInstance) -> None:
        """Describe the API's tools as OpenAI function tools."""
        self._api = api
        self.specs = [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description or tool.name,
                    "parameters": schema_to_json(
                        tool.parameters, api.custom_serializer
                    ),
                },
            }
            for tool in api.tools
        ]

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """Run one tool through the API (it validates the arguments)."""
        data, error = tool_output(
            await self._api.async_call_tool(
                llm.ToolInput(tool_name=name, tool_args=arguments)
            )
        )
        if error:
            raise ToolFailedError(str(data))
        return data


class ToolFailedError(Exception):
    """A Home Assistant tool reported an error."""


class ChatLogTranscript:
    """The core's ``Transcript`` on Home Assistant's chat log.

    Steps of the turn become chat log deltas, fed to
    ``async_add_delta_content_stream`` by one task, so the frontend sees the
    reply as it streams. Every tool call is marked external: the pipeline
    runs it (the body's skills, ``recall_memory``, and Assist's tools through
    their API) and its result is recorded as a ``tool_result`` delta.
    """

    def __init__(
        self,
        hass: HomeAssistant,
        chat_log: conversation.ChatLog,
        agent_id: str,
        llm_data: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """Start feeding ``chat_log`` as ``agent_id``.

        ``llm_data`` gives the chat log Home Assistant's prompt and LLM API
        (``ChatLog.async_provide_llm_data``); ``prepare`` runs it, so a turn
        the intent filter answers never renders the prompt (1.35 ms a turn).
        """
        self._chat_log = chat_log
        self._llm_data = llm_data
        self._prepared = False
        self._tools: AssistTools | None = None
        self._queue: asyncio.Queue[_Delta | None] = asyncio.Queue()
        self._open = False  # an assistant message takes deltas
        self._agent_id = agent_id
        self._settled: str | None = None
        self._task = hass.async_create_task(
            self._feed(agent_id), "soul chat log", eager_start=False
        )

    async def _deltas(self) -> AsyncGenerator[_Delta]:
        while (delta := await self._queue.get()) is not None:
            yield delta

    async def _feed(self, agent_id: str) -> None:
        async for _content in self._chat_log.async_add_delta_content_stream(
            agent_id,
            self._deltas(),
        ):
            pass

    async def prepare(self) -> ExtraTools | None:
        """Give the chat log its LLM data once; return the LLM API's tools."""
        if not self._prepared:
            self._prepared = True
            if self._llm_data is not None:
                await self._llm_data()  # ConverseError: the chat's caller answers it
            if (api := self._chat_log.llm_api) is not None:
                self._tools = AssistTools(api)
        return self._tools

    def history(self) -> list[dict[str, Any]]:
        """Return the chat log as model messages (the latest ``MAX_HISTORY``)."""
        system: list[dict[str, Any]] = []
        messages: list[dict[str, Any]] = []
        for content in self._chat_log.content:
            if isinstance(content, conversation.SystemContent):
                if content.content:
                    system.append({"role": "system", "content": content.content})
            elif isinstance(content, conversation.UserContent):
                messages.append({"role": "user", "content": content.content})
            elif isinstance(content, conversation.AssistantContent):
                message: dict[str, Any] = {
                    "role": "assistant",
                    "content": content.content or "",
                }
                if content.tool_calls:
                    message["tool_calls"] = [
                        {
                            "id": call.id,
                            "type": "function",
                            "function": {
                                "name": call.tool_name,
                                "arguments": json.dumps(
                                    call.tool_args, ensure_ascii=False, default=str
                                ),
                            },
                        }
                        for call in content.tool_calls
                    ]
                messages.append(message)
            elif isinstance(content, conversation.ToolResultContent):
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": content.tool_call_id,
                        "content": tool_message(tool_result_data(content)),
                    }
                )
        messages = messages[-MAX_HISTORY:]
        while messages and messages[0]["role"] != "user":
            messages.pop(0)  # never start with a tool result or its call
        return system + messages

    def _start(self) -> None:
        if not self._open:
            self._queue.put_nowait({"role": "assistant"})
            self._open = True

    async def text(self, piece: str) -> None:
        """Stream a piece of the reply into the open assistant message."""
        self._start()
        self._queue.put_nowait({"content": piece})

    async def tool_calls(self, calls: Sequence[ToolCall]) -> None:
        """Record the model's tool calls (run by the pipeline: external)."""
        self._start()
        self._queue.put_nowait(
            {
                "tool_calls": [
                    llm.ToolInput(
                        tool_name=call.name,
                        tool_args=_arguments(call.arguments),
                        id=call.call_id or ulid_now(),
                        external=True,
                    )
                    for call in calls
                ]
            }
        )

    async def tool_result(self, call: ToolCall, result: dict[str, Any]) -> None:
        """Record a tool's result; the next text starts a new message."""
        self._queue.put_nowait(tool_result_delta(call.call_id, call.name, result))
        self._open = False

    async def reply(self, text: str) -> None:
        """Record a whole reply (the intent path, an in-character message)."""
        self._queue.put_nowait({"role": "assistant", "content": text})
        self._open = True

    async def settle(self, text: str) -> None:
        """Close the turn with its streamed reply after the tool results.

        Home Assistant answers with the chat log's last assistant message; it
        is added whole, not as deltas, so a voice pipeline does not say the
        already streamed text twice.
        """
        self._settled = text

    async def finish(self) -> None:
        """Close the stream and wait until the chat log has taken everything."""
        self._queue.put_nowait(None)
        await self._task
        if self._settled is not None:
            self._chat_log.async_add_assistant_content_without_tools(
                conversation.AssistantContent(
                    agent_id=self._agent_id, content=self._settled
                )
            )


def _arguments(raw: str) -> dict[str, Any]:
    """Return a tool call's arguments as an object for the chat log."""
    try:
        value = untrusted.loads(raw or "{}", max_bytes=MAX_ARGUMENTS_BYTES)
    except untrusted.UntrustedInputError:
        return {"raw": untrusted.clean(raw, 1024)}
    return value if isinstance(value, dict) else {"value": value}


class SoulConversationEntity(SoulDeviceEntity, conversation.ConversationEntity):
    """A soul as an Assist conversation agent."""

    _attr_name = None
    _attr_supports_streaming = True

    def __init__(self, entry: SoulConfigEntry, soul: Soul) -> None:
        """Create the agent of ``soul``."""
        super().__init__(entry, soul, "conversation")
        self._attr_translation_key = None
        self._attr_name = None

    @property
    def supported_features(self) -> conversation.ConversationEntityFeature:
        """Return CONTROL when the soul offers Home Assistant's LLM APIs."""
        if self._options().get(CONF_LLM_HASS_API):
            return conversation.ConversationEntityFeature.CONTROL
        return conversation.ConversationEntityFeature(0)

    @property
    def supported_languages(self) -> list[str] | Literal["*"]:
        """Return every language (the model and Chinese/English rules decide)."""
        return MATCH_ALL

    def _state_key(self) -> Any:
        return None  # the agent's state does not follow the emotion

    def _options(self) -> dict[str, Any]:
        return soul_options(self.entry, self.soul_id)

    def _terminal_id(self) -> str | None:
        """Return the body this agent acts through: the chosen one, else the first bound."""
        if terminal := self._options().get(CONF_TERMINAL):
            return str(terminal)
        bound = self.entry.runtime_data.souls.terminals_of(self.soul_id)
        return bound[0] if bound else None

    async def _async_handle_message(
        self,
        user_input: conversation.ConversationInput,
        chat_log: conversation.ChatLog,
    ) -> conversation.ConversationResult:
        """Run the turn through the chat pipeline and log the reply."""
        options = self._options()

        async def llm_data() -> None:
            await chat_log.async_provide_llm_data(
                user_input.as_llm_context(DOMAIN),
                options.get(CONF_LLM_HASS_API),
                None,
                user_input.extra_system_prompt,
            )

        # A user speaks as themselves (a private soul's agent answers its
        # owner and administrators only); an automation as Soul itself.
        caller = SYSTEM
        if (user_id := user_input.context.user_id) is not None and (
            user := await self.hass.auth.async_get_user(user_id)
        ) is not None:
            caller = principal_of(user)
            if not caller.may_control:
                return _error(user_input, phrase(user_input.text, "read_only"))
        runtime = self.entry.runtime_data
        body: dict[str, Any] = {
            "session_id": chat_log.conversation_id,
            "user_id": user_input.context.user_id,
            "soul_id": self.soul_id,
            "inputs": [{"type": "speech_text", "text": user_input.text}],
        }
        # Without a body the soul talks with the model and Home Assistant's tools.
        if (terminal_id := self._terminal_id()) is not None:
            if runtime.souls.soul_of(terminal_id) is None:
                runtime.souls.bind(terminal_id, self.soul_id)
            body["terminal_id"] = terminal_id
        transcript = ChatLogTranscript(self.hass, chat_log, self.entity_id, llm_data)
        try:
            await runtime.chat.chat(
                body,
                transcript=transcript,
                soul_only=True,
                caller=caller,
                channel="assist",
            )
        except ChatError as err:
            return _error(user_input, str(err))
        except conversation.ConverseError as err:  # the LLM API is gone
            return err.as_conversation_result()
        finally:
            # Whatever ends the turn: the chat log's task ends with it (an
            # error left it running, and Home Assistant never stopped).
            await transcript.finish()
        if not isinstance(chat_log.content[-1], conversation.AssistantContent):
            # A turn that says nothing (an exclamation, NO_REPLY of §4.2.2):
            # Home Assistant answers with the last assistant message, so one
            # without words closes it ("Unable to get response" otherwise).
            chat_log.async_add_assistant_content_without_tools(
                conversation.AssistantContent(agent_id=self.entity_id, content=None)
            )
        return conversation.async_get_result_from_chat_log(user_input, chat_log)


def _error(
    user_input: conversation.ConversationInput, message: str
) -> conversation.ConversationResult:
    response = intent.IntentResponse(language=user_input.language)
    response.async_set_error(intent.IntentResponseErrorCode.UNKNOWN, message)
    return conversation.ConversationResult(
        response=response, conversation_id=user_input.conversation_id
    )


async def async_setup_entry(
    hass: HomeAssistant,
    entry: SoulConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add one conversation agent per soul."""
    await async_setup_soul_entities(
        hass,
        entry,
        async_add_entities,
        lambda entry, soul: [SoulConversationEntity(entry, soul)],
    )
