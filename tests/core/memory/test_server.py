"""The mem0 REST backend over real HTTP: against mem0 itself and against broken servers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable
import gzip
import json
from pathlib import Path

import aiohttp
from aiohttp import web
import pytest

from custom_components.soul.core.memory import MemoryBackendError
from custom_components.soul.core.memory.mem0_embedded import EmbeddedMem0
from custom_components.soul.core.memory.mem0_server import (
    HEALTH_USER,
    MAX_ANSWER_BYTES,
    Mem0Server,
)
from custom_components.soul.core.untrusted import LOOP_JSON_BYTES, MAX_JSON_VALUES
from devtools.broker import free_port
from devtools.fake_llm import FakeOpenAI, mem0_responder
from devtools.mem0_rest import Mem0Rest

from . import ALICE_META, make_config

KEY = "m0sk_test-key"
TEA = [{"role": "user", "content": "I like green tea. I live in Paris."}]
needs_mem0 = pytest.mark.usefixtures("mem0_installed")


@pytest.fixture
async def session(socket_enabled: None) -> AsyncGenerator[aiohttp.ClientSession]:
    """The HTTP session the host would lend."""
    async with aiohttp.ClientSession() as client_session:
        yield client_session


@pytest.fixture
async def rest(tmp_path: Path, fake_llm: FakeOpenAI) -> AsyncGenerator[Mem0Rest]:
    """mem0's REST routes over a real embedded mem0, requiring ``KEY``."""
    fake_llm.responders.append(mem0_responder)
    memory = EmbeddedMem0(make_config(tmp_path / "memory", fake_llm), asyncio.to_thread)
    server = Mem0Rest(memory, api_key=KEY)
    await server.start()
    yield server
    await server.close()
    await memory.close()


@pytest.fixture
def backend(rest: Mem0Rest, session: aiohttp.ClientSession) -> Mem0Server:
    """The backend under test, with the right key."""
    return Mem0Server(session, rest.base_url + "/", KEY, timeout=10)


@needs_mem0
async def test_add_search_and_scoping(backend: Mem0Server, rest: Mem0Rest) -> None:
    """mem0 behind REST extracts, scopes and ranks as in process."""
    await backend.health()
    ids = await backend.add(
        TEA, user_id="alice", agent_id="soul-a", metadata=ALICE_META
    )
    assert len(ids) == 2

    found = await backend.search("green tea", user_id="alice", agent_id=None)
    assert found[0].text == "I like green tea"
    assert found[0].memory_id in ids
    assert found[0].score is not None
    assert found[0].metadata == ALICE_META
    assert (found[0].user_id, found[0].agent_id) == ("alice", "soul-a")
    assert (
        len(await backend.search("Paris tea", user_id="alice", agent_id=None, limit=1))
        == 1
    )
    assert await backend.search("green tea", user_id="bob", agent_id=None) == []
    assert await backend.search("green tea", user_id="alice", agent_id="soul-b") == []

    # What went over the wire: mem0's routes and bodies, the key as X-API-Key.
    add = next(r for r in rest.requests if r["method"] == "POST")
    assert add["path"] == "/memories"
    assert json.loads(add["body"]) == {
        "messages": TEA,
        "user_id": "alice",
        "agent_id": "soul-a",
        "metadata": ALICE_META,
        "infer": True,
    }
    assert all(r["headers"]["X-API-Key"] == KEY for r in rest.requests)
    assert "Authorization" not in rest.requests[0]["headers"]
    health = rest.requests[0]
    assert (health["method"], health["path"]) == ("GET", "/memories")
    assert health["query"]["user_id"] == HEALTH_USER


@needs_mem0
async def test_get_all_delete_and_delete_all(backend: Mem0Server) -> None:
    await backend.add(TEA, user_id="alice", agent_id="soul-a", metadata={})
    raw = [{"role": "user", "content": "I play the cello"}]
    (cello,) = await backend.add(
        raw, user_id="alice", agent_id="soul-b", metadata=ALICE_META, infer=False
    )
    await backend.add(raw, user_id="bob", agent_id=None, metadata={}, infer=False)

    assert len(await backend.get_all(user_id="alice")) == 3
    assert len(await backend.get_all(user_id="alice", limit=2)) == 2
    (listed,) = await backend.get_all(user_id="alice", agent_id="soul-b")
    assert (listed.memory_id, listed.text, listed.metadata) == (
        cello,
        "I play the cello",
        ALICE_META,
    )

    await backend.delete(cello)
    assert await backend.get_all(user_id="alice", agent_id="soul-b") == []
    with pytest.raises(MemoryBackendError, match=r"HTTP 500 .*not found"):
        await backend.delete(cello)
    with pytest.raises(MemoryBackendError, match="HTTP 500"):
        await backend.delete("a/../odd id")

    await backend.delete_all(user_id="alice")
    assert await backend.get_all(user_id="alice") == []
    assert len(await backend.get_all(user_id="bob")) == 1


@needs_mem0
async def test_wrong_or_missing_key(
    rest: Mem0Rest, session: aiohttp.ClientSession
) -> None:
    """A refused key is its own message, and the key never shows in it."""
    for key in ("m0sk_wrong-secret", ""):
        backend = Mem0Server(session, rest.base_url, key)
        with pytest.raises(MemoryBackendError, match="refused the API key") as err:
            await backend.health()
        assert "wrong-secret" not in str(err.value)
        assert "wrong-secret" not in repr(backend)


@needs_mem0
async def test_llm_down_behind_the_server(
    backend: Mem0Server, fake_llm: FakeOpenAI
) -> None:
    """mem0 failing inside the server (HTTP 500) is a MemoryBackendError."""
    await fake_llm.close()
    with pytest.raises(MemoryBackendError, match=r"HTTP 500 .*LLM endpoint"):
        await backend.search("tea", user_id="alice", agent_id=None)


async def test_server_down(session: aiohttp.ClientSession) -> None:
    backend = Mem0Server(session, f"http://127.0.0.1:{free_port()}")
    for call in (
        backend.health(),
        backend.add(TEA, user_id="alice", agent_id=None, metadata={}),
        backend.search("tea", user_id="alice", agent_id=None),
        backend.delete_all(user_id="alice"),
    ):
        with pytest.raises(MemoryBackendError, match="cannot reach the mem0 server"):
            await call


async def test_invalid_url(session: aiohttp.ClientSession) -> None:
    for url in ("mem0.local:8888", "ftp://mem0.local", "http://[bad"):
        with pytest.raises(MemoryBackendError, match="invalid mem0 server URL"):
            await Mem0Server(session, url).health()


Route = Callable[[web.Request], Awaitable[web.StreamResponse]]


@pytest.fixture
async def stub(socket_enabled: None) -> AsyncGenerator[Callable[[Route], str]]:
    """Serve one handler on every path; return its base URL."""
    runners: list[web.AppRunner] = []

    async def serve(handler: Route) -> str:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handler)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        runners.append(runner)
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        return f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"

    yield serve
    for runner in runners:
        await runner.cleanup()


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (web.Response(text="<html>proxy error</html>"), "not valid JSON"),
        (web.json_response({"memories": []}), "no result list"),
        (web.json_response({"results": [{"memory": "no id"}]}), "without an id"),
        (web.json_response({"results": ["text"]}), "without an id"),
        (
            web.json_response({"detail": "database is locked"}, status=500),
            "HTTP 500 database is locked",
        ),
        (web.Response(status=502, text="Bad Gateway"), "HTTP 502 Bad Gateway"),
    ],
)
async def test_malformed_answers(
    stub, session: aiohttp.ClientSession, answer: web.Response, message: str
) -> None:
    async def handler(request: web.Request) -> web.Response:
        return answer

    backend = Mem0Server(session, await stub(handler))
    with pytest.raises(MemoryBackendError, match=message):
        await backend.search("tea", user_id="alice", agent_id=None)


async def test_an_answer_is_read_within_its_bound(
    stub, session: aiohttp.ClientSession
) -> None:
    """The whole body was read and parsed on the loop, whatever its size."""
    many = [{"id": n, "memory": f"memory {n}", "score": 0.5} for n in range(15_000)]
    big = json.dumps({"results": many}).encode()
    assert LOOP_JSON_BYTES < len(big) < MAX_ANSWER_BYTES  # decoded in a thread
    bomb = gzip.compress(b" " * (MAX_ANSWER_BYTES * 4) + b"[]")
    answers = iter(
        [
            web.Response(body=big, content_type="application/json"),
            web.Response(
                body=b"[" + b"0," * MAX_ANSWER_BYTES + b"0]",
                content_type="application/json",
            ),
            web.Response(
                body=bomb,
                content_type="application/json",
                headers={"Content-Encoding": "gzip"},
            ),
            # Within the size, but its values would hold the GIL (55 ms at 2 MiB).
            web.Response(
                body=b"[" + b"0," * (MAX_JSON_VALUES + 1) + b"0]",
                content_type="application/json",
            ),
        ]
    )

    async def handler(request: web.Request) -> web.Response:
        return next(answers)

    backend = Mem0Server(session, await stub(handler))
    found = await backend.search("tea", user_id="alice", agent_id=None)
    assert [item.memory_id for item in found] == ["0", "1", "2", "3", "4"]  # top 5
    for _ in range(2):  # too large; too large once decompressed
        with pytest.raises(MemoryBackendError, match="larger than"):
            await backend.search("tea", user_id="alice", agent_id=None)
    with pytest.raises(MemoryBackendError, match=f"more than {MAX_JSON_VALUES} values"):
        await backend.search("tea", user_id="alice", agent_id=None)


async def test_slow_server_times_out(stub, session: aiohttp.ClientSession) -> None:
    release = asyncio.Event()

    async def handler(request: web.Request) -> web.Response:
        await release.wait()
        return web.json_response({"results": []})

    backend = Mem0Server(session, await stub(handler), timeout=0.2)
    with pytest.raises(MemoryBackendError, match=r"no answer within 0\.2 s"):
        await backend.health()
    release.set()


async def test_bare_list_answers_and_paths(
    stub, session: aiohttp.ClientSession
) -> None:
    """Older servers answer bare lists; ids are escaped into the path."""
    seen: list[str] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append(f"{request.method} {request.raw_path}")
        return web.json_response(
            [{"id": 7, "memory": "tea", "score": 0.9, "event": "ADD"}]
        )

    backend = Mem0Server(session, await stub(handler) + "/mem0/")
    (item,) = await backend.search("tea", user_id="alice", agent_id="soul-a")
    assert (item.memory_id, item.text, item.score) == ("7", "tea", 0.9)
    assert await backend.add(TEA, user_id="alice", agent_id=None, metadata={}) == ["7"]
    await backend.delete("a/b c")
    await backend.delete_all(user_id="alice")
    assert seen == [
        "POST /mem0/search",
        "POST /mem0/memories",
        "DELETE /mem0/memories/a%2Fb%20c",
        "DELETE /mem0/memories?user_id=alice",
    ]
