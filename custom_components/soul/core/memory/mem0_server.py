"""A self-hosted mem0 REST server (mem0's ``server/main.py``), reached over aiohttp.

Routes (no ``/v1`` prefix, unlike the hosted Mem0 platform)::

    POST   /memories             {"messages", "user_id", "agent_id", "metadata", "infer"}
    POST   /search               {"query", "user_id", "agent_id", "filters", "top_k"}
    GET    /memories?user_id=…&agent_id=…&top_k=…
    DELETE /memories/{memory_id}
    DELETE /memories?user_id=…

The server authenticates with an ``X-API-Key`` header (an API key it issued,
or its ``ADMIN_API_KEY``); older builds have no authentication and ignore it.
Its only health route (``GET /api/health``) checks its database without
authentication, so ``health`` lists a probe user's memories instead: that
exercises the key, the vector store and the server as a whole.

Answers are mem0's own dicts, parsed as in ``mem0_embedded``. An answer is
read up to ``MAX_ANSWER_BYTES`` (decompressed) and decoded as untrusted JSON,
off the event loop when large: the whole body was read and parsed on the
loop. The session belongs to the host and is never closed here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
import json
from typing import Any
from urllib.parse import quote

import aiohttp
from yarl import URL

from .. import untrusted
from .base import MemoryBackendError, MemoryItem
from .mem0_embedded import items_from_mem0, scope, stored_ids

HEALTH_USER = "soul-health-probe"
_MAX_DETAIL = 200
# One answer, decompressed: a listing of a few thousand memories. A larger
# one is refused while it is read.
MAX_ANSWER_BYTES = 2 * 1024 * 1024
_CHUNK = 64 * 1024


class Mem0Server:
    """The ``MemoryBackend`` talking to a mem0 REST server."""

    name = "mem0_server"

    def __init__(
        self,
        session: aiohttp.ClientSession,
        base_url: str,
        api_key: str = "",
        timeout: float = 10,
    ) -> None:
        """Talk to the server at ``base_url`` through the host's ``session``."""
        self._session = session
        self._base_url = base_url.rstrip("/")
        self._api_key = api_key
        self._timeout = aiohttp.ClientTimeout(total=timeout)

    def __repr__(self) -> str:
        """Name the server, never the key."""
        return f"Mem0Server(base_url={self._base_url!r})"

    async def _request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str | int] | None = None,
        body: Any = None,
    ) -> Any:
        """Send one request; return the decoded JSON answer or raise."""
        try:
            base = URL(self._base_url)
        except ValueError as err:
            raise MemoryBackendError(f"invalid mem0 server URL: {err}") from err
        if base.scheme not in ("http", "https") or not base.host:
            raise MemoryBackendError("invalid mem0 server URL: not http(s)://host…")
        url = base.with_path(base.raw_path.rstrip("/") + path, encoded=True)
        headers = {"X-API-Key": self._api_key} if self._api_key else {}
        what = f"mem0 server {method} {path}"
        try:
            async with self._session.request(
                method,
                url,
                params=params,
                json=body,
                headers=headers,
                timeout=self._timeout,
            ) as response:
                status = response.status
                body = bytearray()
                async for chunk in response.content.iter_chunked(_CHUNK):
                    body += chunk
                    if len(body) > MAX_ANSWER_BYTES:
                        raise MemoryBackendError(
                            f"{what}: the answer is larger than {MAX_ANSWER_BYTES}"
                            " bytes"
                        )
        except TimeoutError as err:
            raise MemoryBackendError(
                f"{what}: no answer within {self._timeout.total:g} s"
            ) from err
        except aiohttp.ClientError as err:
            raise MemoryBackendError(
                f"cannot reach the mem0 server at {self._base_url}: {type(err).__name__}"
            ) from err
        if status in (401, 403):
            raise MemoryBackendError(
                f"{what}: the server refused the API key (HTTP {status})"
            )
        if not 200 <= status < 300:
            raise MemoryBackendError(f"{what}: HTTP {status} {self._detail(body)}")
        try:
            return await untrusted.loads_off_loop(
                bytes(body),
                asyncio.to_thread,
                max_bytes=MAX_ANSWER_BYTES,
                max_containers=untrusted.MAX_JSON_VALUES,
                what="the answer",
                repair=True,
            )
        except untrusted.UntrustedInputError as err:
            raise MemoryBackendError(f"{what}: {err}") from err

    def _detail(self, body: bytes | bytearray) -> str:
        """Return the server's error text (FastAPI's ``detail``), short, key removed."""
        text = bytes(body[: 4 * _MAX_DETAIL]).decode("utf-8", "replace")
        try:
            detail = json.loads(text).get("detail", text)
        except (ValueError, AttributeError):
            detail = text
        detail = " ".join(str(detail).split())
        if self._api_key:
            detail = detail.replace(self._api_key, "***")
        return detail[:_MAX_DETAIL]

    async def health(self) -> None:
        """List a probe user's memories: reachable, key accepted, store working."""
        answer = await self._request(
            "GET", "/memories", params={"user_id": HEALTH_USER, "top_k": 1}
        )
        items_from_mem0(answer)

    async def add(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        user_id: str,
        agent_id: str | None,
        metadata: Mapping[str, Any],
        infer: bool = True,
    ) -> list[str]:
        """Store memories from ``messages``; return the ids stored or updated."""
        body = {
            "messages": [
                {
                    "role": str(m.get("role", "user")),
                    "content": str(m.get("content", "")),
                }
                for m in messages
            ],
            **scope(user_id, agent_id),
            "metadata": dict(metadata),
            "infer": infer,
        }
        return stored_ids(await self._request("POST", "/memories", body=body))

    async def search(
        self, query: str, *, user_id: str, agent_id: str | None, limit: int = 5
    ) -> list[MemoryItem]:
        """Return the memories most relevant to ``query``, best first."""
        ids = scope(user_id, agent_id)
        # Newer servers read ``filters`` (and promote the ids), older ones the ids.
        body = {"query": query, **ids, "filters": ids, "top_k": limit}
        return items_from_mem0(await self._request("POST", "/search", body=body), limit)

    async def get_all(
        self, *, user_id: str, agent_id: str | None = None, limit: int = 100
    ) -> list[MemoryItem]:
        """Return a user's memories (one soul's when ``agent_id`` is given)."""
        params: dict[str, str | int] = {**scope(user_id, agent_id), "top_k": limit}
        answer = await self._request("GET", "/memories", params=params)
        return items_from_mem0(answer, limit)

    async def delete(self, memory_id: str) -> None:
        """Forget one memory."""
        await self._request("DELETE", "/memories/" + quote(memory_id, safe=""))

    async def delete_all(self, *, user_id: str) -> None:
        """Forget every memory of a user."""
        await self._request("DELETE", "/memories", params={"user_id": user_id})

    async def close(self) -> None:
        """Nothing to release: the session belongs to the host."""
