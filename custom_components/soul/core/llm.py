"""The OpenAI-compatible LLM endpoint Soul talks to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import openai

if TYPE_CHECKING:
    import httpx

# Sent when the user gives no key: local servers (Ollama, llama.cpp, vLLM) ignore it,
# and the openai client refuses to start without one.
NO_API_KEY = "no-api-key"
VERIFY_TIMEOUT = 10.0


class LLMError(Exception):
    """The LLM endpoint could not be used."""


class LLMConnectionError(LLMError):
    """The endpoint is unreachable or does not speak the OpenAI API."""


class LLMAuthError(LLMError):
    """The endpoint refused the API key."""


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
