"""mem0's self-hosted REST API on top of a real, in-process mem0, for tests.

It serves the routes of mem0's ``server/main.py`` with the same bodies and
answers (mem0's own result dicts, FastAPI-style ``{"detail": …}`` errors), but
stores through an ``EmbeddedMem0`` instead of Postgres, so the ``Mem0Server``
backend is tested against real mem0 behaviour over real HTTP::

    rest = Mem0Rest(embedded, api_key="m0sk_test")
    base_url = await rest.start()
    ...
    await rest.close()  # the EmbeddedMem0 stays open; close it yourself

With ``api_key`` set, every memory route wants ``X-API-Key: <api_key>``, as
the real server does; ``GET /api/health`` is open, as there.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from custom_components.soul.core.memory import MemoryBackendError
from custom_components.soul.core.memory.mem0_embedded import EmbeddedMem0
from devtools.serve import serve

IDS = ("user_id", "agent_id", "run_id")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _error(status: int, detail: str) -> web.Response:
    return web.json_response({"detail": detail}, status=status)


def _top_k(source: Any) -> int:
    """``top_k`` of a query string or body; mem0's default (20) when absent or bad."""
    try:
        return max(int(source.get("top_k") or 20), 0)
    except (TypeError, ValueError):
        return 20


def _ids(source: Any) -> dict[str, str]:
    """Return the non-empty entity ids of a query string or body, as the server does."""
    return {k: str(source[k]) for k in IDS if source.get(k)}


@dataclass
class Mem0Rest:
    """The server; ``await start()`` it, then point ``Mem0Server`` at ``base_url``."""

    memory: EmbeddedMem0
    api_key: str | None = None
    # Every request: method, path, query, body and headers (tests check auth).
    requests: list[dict[str, Any]] = field(default_factory=list)
    port: int = 0
    _runner: web.AppRunner | None = None

    @property
    def base_url(self) -> str:
        """The URL to give ``Mem0Server`` (no trailing slash, no /v1)."""
        return f"http://127.0.0.1:{self.port}"

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Listen on host:port (0 picks a free port) and return ``base_url``."""
        app = web.Application(middlewares=[self._auth])
        app.router.add_get("/api/health", self._health)
        app.router.add_post("/memories", self._add)
        app.router.add_get("/memories", self._get_all)
        app.router.add_delete("/memories", self._delete_all)
        app.router.add_get("/memories/{memory_id}", self._get)
        app.router.add_delete("/memories/{memory_id}", self._delete)
        app.router.add_post("/search", self._search)
        self._runner, self.port = await serve(app, host, port)
        return self.base_url

    async def close(self) -> None:
        """Stop listening (the mem0 backend stays open)."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # -- plumbing ----------------------------------------------------------
    @web.middleware
    async def _auth(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        body = await request.text() if request.can_read_body else ""
        self.requests.append(
            {
                "method": request.method,
                "path": request.path,
                "query": dict(request.query),
                "body": body,
                "headers": dict(request.headers),
            }
        )
        if (
            self.api_key is not None
            and request.path != "/api/health"
            and request.headers.get("X-API-Key") != self.api_key
        ):
            return _error(
                401,
                "Authentication required. Provide a Bearer token or X-API-Key header.",
            )
        return await handler(request)

    async def _mem0(self, operation: str, job: Callable[[Any], Any]) -> web.Response:
        """Run ``job`` on mem0's ``Memory``; mem0 errors become HTTP 500, as there."""
        try:
            result = await self.memory.run(operation, job)
        except MemoryBackendError as err:
            return _error(500, str(err))
        return web.json_response(result)

    @staticmethod
    async def _body(request: web.Request) -> dict[str, Any] | web.Response:
        try:
            body = await request.json()
        except ValueError:
            return _error(422, "the body is not JSON")
        return (
            body if isinstance(body, dict) else _error(422, "the body is not an object")
        )

    # -- routes ------------------------------------------------------------
    async def _health(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "ok", "database": "connected"})

    async def _add(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        if isinstance(body, web.Response):
            return body
        messages = body.get("messages")
        if not isinstance(messages, list) or not all(
            isinstance(m, dict) and "role" in m and "content" in m for m in messages
        ):
            return _error(422, "messages must be a list of {role, content}")
        if not (ids := _ids(body)):
            return _error(
                400, "At least one identifier (user_id, agent_id, run_id) is required."
            )
        metadata = body.get("metadata")
        infer = body.get("infer", True) is not False
        return await self._mem0(
            "add",
            lambda m: m.add(messages, metadata=metadata, infer=infer, **ids),
        )

    async def _get_all(self, request: web.Request) -> web.Response:
        if not (ids := _ids(request.query)):
            return _error(400, "At least one identifier is required.")
        top_k = _top_k(request.query)
        return await self._mem0(
            "get_all", lambda m: m.get_all(filters=ids, top_k=top_k)
        )

    async def _get(self, request: web.Request) -> web.Response:
        memory_id = request.match_info["memory_id"]
        return await self._mem0("get", lambda m: m.get(memory_id))

    async def _search(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        if isinstance(body, web.Response):
            return body
        if not isinstance(query := body.get("query"), str):
            return _error(422, "query must be a string")
        filters = {**(body.get("filters") or {}), **_ids(body)}
        top_k = _top_k(body)
        return await self._mem0(
            "search", lambda m: m.search(query, filters=filters, top_k=top_k)
        )

    async def _delete(self, request: web.Request) -> web.Response:
        memory_id = request.match_info["memory_id"]
        response = await self._mem0("delete", lambda m: m.delete(memory_id=memory_id))
        if response.status != 200:
            return response
        return web.json_response({"message": "Memory deleted successfully"})

    async def _delete_all(self, request: web.Request) -> web.Response:
        if not (ids := _ids(request.query)):
            return _error(400, "At least one identifier is required.")
        response = await self._mem0("delete_all", lambda m: m.delete_all(**ids))
        if response.status != 200:
            return response
        return web.json_response({"message": "All relevant memories deleted"})
