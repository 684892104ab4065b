"""One Assist conversation agent per soul, acting through one of its bodies.

A turn goes through the same chat pipeline as ``POST /api/soul/v1/chat``:
emotion, intent filter, ``intent_action`` or the language model with the
body's skills — and, when the soul's subentry selects Home Assistant LLM APIs
(such as Assist), their tools as well.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any, Literal

from homeassistant.components import conversation
from homeassistant.const import CONF_LLM_HASS_API, MATCH_ALL
from homeassistant.core import HomeAssistant
from homeassistant.helpers import intent, llm
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from .access import principal_of
from .compat import schema_to_json, tool_output
from .const import CONF_TERMINAL, DOMAIN
from .core.chat_request import ChatError
from .core.souls import Soul
from .entity import SoulDeviceEntity, async_setup_soul_entities
from .runtime import SoulConfigEntry

PARALLEL_UPDATES = 0


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
        subentry = self.entry.subentries.get(self.soul_id)
        return dict(subentry.data) if subentry is not None else {}

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
        try:
            await chat_log.async_provide_llm_data(
                user_input.as_llm_context(DOMAIN),
                options.get(CONF_LLM_HASS_API),
                None,
                user_input.extra_system_prompt,
            )
        except conversation.ConverseError as err:
            return err.as_conversation_result()
        if (
            (user_id := user_input.context.user_id) is not None
            and (user := await self.hass.auth.async_get_user(user_id)) is not None
            and not principal_of(user).may_control
        ):
            return _error(user_input, "A read-only user may not make a body act.")
        terminal_id = self._terminal_id()
        if terminal_id is None:
            return _error(
                user_input, "This soul has no body yet: bind one to it first."
            )
        runtime = self.entry.runtime_data
        if runtime.souls.soul_of(terminal_id) is None:
            runtime.souls.bind(terminal_id, self.soul_id)
        body = {
            "session_id": chat_log.conversation_id,
            "terminal_id": terminal_id,
            "user_id": user_input.context.user_id,
            "soul_id": self.soul_id,
            "inputs": [{"type": "speech_text", "text": user_input.text}],
        }
        extra = AssistTools(chat_log.llm_api) if chat_log.llm_api else None
        try:
            response = await runtime.chat.chat(body, extra_tools=extra)
        except ChatError as err:
            return _error(user_input, str(err))

        async def stream() -> AsyncGenerator[conversation.AssistantContentDeltaDict]:
            yield {"role": "assistant"}
            if response["reply"]:
                yield {"content": response["reply"]}

        async for _content in chat_log.async_add_delta_content_stream(
            self.entity_id, stream()
        ):
            pass
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
    async_setup_soul_entities(
        hass,
        entry,
        async_add_entities,
        lambda entry, soul: [SoulConversationEntity(entry, soul)],
    )
