"""The OpenAI-compatible LLM endpoint Soul talks to."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import openai

if TYPE_CHECKING:
    import httpx

# Sent when the user gives no key: local servers (Ollama, llama.cpp, vLLM) ignore it,
# and the openai client refuses to start without one.
NO_API_KEY = "no-api-key"
VERIFY_TIMEOUT = 10.0
MAX_CALL_ID = 128
MAX_TOOL_NAME = 128


class LLMError(Exception):
    """The LLM endpoint could not be used."""


class LLMConnectionError(LLMError):
    """The endpoint is unreachable or does not speak the OpenAI API."""


class LLMAuthError(LLMError):
    """The endpoint refused the API key."""


class LLMResponseError(LLMError):
    """The endpoint answered with something that is not a usable completion."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call the model asked for; ``arguments`` is the model's raw JSON text."""

    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ModelReply:
    """One chat completion: text, tool calls, or both, and the token usage."""

    content: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class LLMEndpoint:
    """Where the OpenAI-compatible API lives and which model to use."""

    base_url: str
    model: str
    api_key: str = ""

    def __repr__(self) -> str:
        """Never show the key, not even in a traceback."""
        return f"LLMEndpoint(base_url={self.base_url!r}, model={self.model!r})"


class OpenAICompatibleLLM:
    """An OpenAI-compatible chat endpoint, reached through the ``openai`` client.

    Building the client reads platform information from disk, so construct this
    class in an executor.
    """

    def __init__(
        self, endpoint: LLMEndpoint, *, http_client: httpx.AsyncClient | None = None
    ) -> None:
        """Create the client; ``http_client`` lets the host share its own pool."""
        self.endpoint = endpoint
        self._owns_http_client = http_client is None
        self.client = openai.AsyncOpenAI(
            base_url=endpoint.base_url,
            api_key=endpoint.api_key or NO_API_KEY,
            http_client=http_client,
        )
        # The client caches these headers on first use; they read files.
        self.client.platform_headers()

    async def close(self) -> None:
        """Close the HTTP client, unless it was lent by the host."""
        if self._owns_http_client:
            await self.client.close()

    async def verify(self) -> None:
        """Make one real request and raise an ``LLMError`` when it fails.

        ``GET /models`` is the cheapest call; servers that do not implement it
        (404) are asked for a one-token completion of the configured model.
        """
        client = self.client.with_options(timeout=VERIFY_TIMEOUT, max_retries=0)
        try:
            try:
                await client.models.list()
            except openai.NotFoundError:
                await client.chat.completions.create(
                    model=self.endpoint.model,
                    messages=[{"role": "user", "content": "ping"}],
                    max_tokens=1,
                )
        except (openai.AuthenticationError, openai.PermissionDeniedError) as err:
            raise LLMAuthError(str(err)) from err
        except openai.OpenAIError as err:
            raise LLMConnectionError(str(err)) from err

    async def chat(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] = (),
        *,
        timeout: float = 30.0,
    ) -> ModelReply:
        """Return one completion of ``messages`` with ``tools`` offered.

        Raises ``LLMAuthError``, ``LLMConnectionError`` (unreachable, timeout,
        HTTP errors) or ``LLMResponseError`` (no choices).
        """
        client = self.client.with_options(timeout=timeout, max_retries=1)
        kwargs: dict[str, Any] = {
            "model": self.endpoint.model,
            "messages": list(messages),
        }
        if tools:
            kwargs["tools"] = list(tools)
        try:
            completion = await client.chat.completions.create(**kwargs)
        except (openai.AuthenticationError, openai.PermissionDeniedError) as err:
            raise LLMAuthError(str(err)) from err
        except openai.OpenAIError as err:
            raise LLMConnectionError(str(err)) from err
        try:
            return _reply(completion)
        except (AttributeError, TypeError, ValueError, IndexError) as err:
            # An HTML page, a proxy's error text, a truncated object…
            raise LLMResponseError(
                f"the endpoint did not answer with a chat completion ({type(err).__name__})"
            ) from None


def _reply(completion: Any) -> ModelReply:
    """Return the usable part of a completion; raise for anything else."""
    if not completion.choices:
        raise LLMResponseError("the completion has no choices")
    message = completion.choices[0].message
    content = message.content
    if content is not None and not isinstance(content, str):
        raise TypeError("content")
    calls = tuple(
        ToolCall(
            str(call.id or "")[:MAX_CALL_ID],
            str(call.function.name or "")[:MAX_TOOL_NAME],
            call.function.arguments if isinstance(call.function.arguments, str) else "",
        )
        for call in message.tool_calls or ()
        if getattr(call, "function", None) is not None
    )
    usage = {}
    if completion.usage is not None:
        usage = {
            "prompt_tokens": int(completion.usage.prompt_tokens or 0),
            "completion_tokens": int(completion.usage.completion_tokens or 0),
        }
    return ModelReply(content, calls, usage)
