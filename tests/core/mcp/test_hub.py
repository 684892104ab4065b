"""The MCP hub against real MCP servers (stdio and streamable HTTP), through chats.

The servers are tests/mcp_servers (written with the SDK); the model is the
local OpenAI-compatible test server. Nothing is mocked.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
import json
import sys
import time
from typing import Any

import httpx
import pytest

from custom_components.soul.core.cognition.events import EventBus, EventType
from custom_components.soul.core.llm import OpenAICompatibleLLM
from custom_components.soul.core.mcp.config import parse_config
from custom_components.soul.core.mcp.connection import CONNECTED, FAILED
from custom_components.soul.core.mcp.hub import McpHub, McpToolError
from devtools.fake_llm import FakeOpenAI, tool_call
from tests.mcp_servers.http_server import HttpServer
from tests.mcp_servers.processes import STDIO_SERVER, child_processes
from tests.mcp_servers.tools import PICTURE_TEXT, RESOURCE_TEXT

from ..test_chat import Env, T, llm  # noqa: F401  # fixture
from ..test_chat_trace import Recorder

pytest_plugins = ["tests.mcp_servers.fixtures"]


def _hub(servers: dict[str, Any], **options: Any) -> McpHub:
    loop = asyncio.get_running_loop()
    hub = McpHub(
        run_blocking=lambda fn, *args: loop.run_in_executor(None, fn, *args),
        http_client=lambda headers, timeout, wrap: httpx.AsyncClient(
            headers=headers,
            timeout=timeout,
            transport=wrap(httpx.AsyncHTTPTransport()),
        ),
        spawn=asyncio.ensure_future,
        clock=time.time,
        backoff=(0.1, 0.5),
        **options,
    )
    hub.start(parse_config({"mcpServers": servers}))
    return hub


async def until(check: Callable[[], bool], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out waiting"
        await asyncio.sleep(0.02)


@pytest.fixture
async def hub(mcp_http_server: HttpServer) -> AsyncIterator[McpHub]:
    hub = _hub(
        {
            "local": {
                "command": sys.executable,
                "args": [STDIO_SERVER],
                "env": {"MCP_TEST_TOKEN": "from-soul"},
            },
            "remote": {"url": mcp_http_server.mcp_url},
        },
        call_timeout=1.0,
    )
    await until(lambda: all(c.status == CONNECTED for c in hub.connections.values()))
    yield hub
    await hub.stop()
    assert child_processes(STDIO_SERVER) == {}  # unload leaves no child process


async def test_a_chat_uses_tools_of_both_servers(
    hub: McpHub,
    fake_llm: FakeOpenAI,
    llm: OpenAICompatibleLLM,  # noqa: F811
) -> None:
    env = Env(llm)
    env.souls.bind(T, "s1")
    journal = Recorder()
    hub._events = lambda: bus
    bus = EventBus(journal)
    env.pipeline.events = bus
    env.pipeline.reasoner.soul_tools = lambda _soul_id: hub.tool_set()
    fake_llm.reply(
        "我算一下。",
        tool_calls=[
            tool_call("local__add", {"a": 2, "b": 3}),
            tool_call("remote__picture", {}),
            tool_call("remote__resource", {}),
            tool_call("local__whoami", {}),
        ],
    )
    fake_llm.reply("是 5，还有一张红色的小图。")
    response = await env.say("2 加 3 是多少？顺便给我看张图")
    assert response["reply"] == "是 5，还有一张红色的小图。"
    assert response["executed_skills"] == [
        "local__add", "remote__picture", "remote__resource", "local__whoami"
    ]  # fmt: skip
    first, second = fake_llm.chat_requests[-2:]
    offered = {t["function"]["name"] for t in first["tools"]}
    assert {"local__add", "remote__add", "remote__grow", "local__crash"} <= offered
    add = next(t for t in first["tools"] if t["function"]["name"] == "local__add")
    assert add["function"]["parameters"]["required"] == ["a", "b"]
    results = [
        json.loads(m["content"]) for m in second["messages"] if m["role"] == "tool"
    ]
    assert results[0] == {"ok": True, "output": "5"}
    assert results[1]["output"].startswith(PICTURE_TEXT + "\n[image: image/png, ")
    assert RESOURCE_TEXT in results[2]["output"]
    assert results[3]["output"] == "from-soul"  # the configured env reached it


async def test_errors_become_tool_errors_and_notices(
    hub: McpHub,
    fake_llm: FakeOpenAI,
    llm: OpenAICompatibleLLM,  # noqa: F811
) -> None:
    env = Env(llm)
    env.souls.bind(T, "s1")
    journal = Recorder()
    bus = EventBus(journal)
    hub._events = lambda: bus
    env.pipeline.events = bus
    env.pipeline.reasoner.soul_tools = lambda _soul_id: hub.tool_set()
    fake_llm.reply(
        "试试。",
        tool_calls=[
            tool_call("remote__fail", {"reason": "disk full"}),
            tool_call("local__slow", {"seconds": 30}),
            tool_call("local__add", {"a": "two", "b": 3}),
        ],
    )
    fake_llm.reply("都没成功，抱歉。")
    started = time.monotonic()
    response = await env.say("帮我做三件事")
    assert time.monotonic() - started < 10  # the slow tool timed out (1 s)
    assert response["reply"] == "都没成功，抱歉。"
    assert response["executed_skills"] == []
    results = [
        json.loads(m["content"])
        for m in fake_llm.chat_requests[-1]["messages"]
        if m["role"] == "tool"
    ]
    assert [r["ok"] for r in results] == [False, False, False]
    assert "disk full" in results[0]["error"]
    assert "longer than 1 s" in results[1]["error"]
    assert "invalid arguments" in results[2]["error"]
    failed = [
        e for e in journal.events
        if e.type is EventType.SYSTEM_NOTIFICATION
        and e.payload.get("event") == "mcp_tool_failed"
    ]  # fmt: skip
    # The two the servers saw; invalid arguments never left Soul.
    assert [(e.payload["server"], e.payload["tool"]) for e in failed[:2]] == [
        ("remote", "fail"), ("local", "slow")
    ]  # fmt: skip
    assert {e.trace_id for e in failed} == {response["trace_id"]}
    # The slow call did not break the session: the server still answers.
    assert await hub.tool_set().call("local__add", {"a": 1, "b": 1}) == "2"  # type: ignore[union-attr]


async def test_a_crashed_stdio_server_is_restarted(hub: McpHub) -> None:
    local = hub.connections["local"]
    tools = hub.tool_set()
    assert tools is not None
    (pid,) = child_processes(STDIO_SERVER)
    with pytest.raises(McpToolError):
        await tools.call("local__crash", {})
    await until(lambda: local.connects == 2 and local.status == CONNECTED)
    assert list(child_processes(STDIO_SERVER)) != [pid]
    again = hub.tool_set()
    assert again is not None
    assert await again.call("local__add", {"a": 20, "b": 22}) == "42"


async def test_tool_lists_follow_list_changed(hub: McpHub) -> None:
    tools = hub.tool_set(["remote"])
    assert tools is not None
    assert "remote__extra" not in {s["function"]["name"] for s in tools.specs}
    assert all(s["function"]["name"].startswith("remote__") for s in tools.specs)
    await tools.call("remote__grow", {})
    await until(lambda: any(t.tool == "extra" for t in hub.tools(["remote"])))
    grown = hub.tool_set(["remote"])
    assert grown is not None
    assert await grown.call("remote__extra", {"x": "hi"})
    assert hub.tool_set([]) is None  # a soul with no servers gets no tools


async def test_servers_that_never_answer_or_cannot_start(
    mcp_http_server: HttpServer,
    mcp_stdio_never_answers_command: list[str],
    mcp_stdio_exit_at_start_command: list[str],
) -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    beat = asyncio.ensure_future(ticker())
    command, *args = mcp_stdio_never_answers_command
    dead, *dead_args = mcp_stdio_exit_at_start_command
    hub = _hub(
        {
            "silent": {"command": command, "args": args},
            "silent_http": {"url": mcp_http_server.never_url},
            "broken": {"command": dead, "args": dead_args},
            "missing": {"command": "/nonexistent/mcp-server"},
        },
        connect_timeout=0.5,
    )
    try:
        await until(
            lambda: (
                all(c.attempts >= 2 for c in hub.connections.values())
                and all(c.status == FAILED for c in hub.connections.values())
            )
        )
        errors = {name: c.error or "" for name, c in hub.connections.items()}
        assert "no answer in time" in errors["silent"]
        assert "no answer in time" in errors["silent_http"]
        assert "command not found" in errors["missing"]
        assert errors["broken"]
        # stderr apart from the error (entities and diagnostics show the error).
        assert "exiting at start" not in errors["broken"]
        assert "exiting at start" in (hub.connections["broken"].stderr or "")
        assert "exiting at start" not in str(hub.diagnostics())
        assert hub.tool_set() is None
        # The event loop kept running while they hung: about 100 ticks a second.
        assert ticks > 20
    finally:
        beat.cancel()
        await hub.stop()
    assert child_processes(STDIO_SERVER) == {}


async def test_headers_reach_an_http_server(
    mcp_http_server_with_token: HttpServer, mcp_http_token: str
) -> None:
    url = mcp_http_server_with_token.mcp_url
    hub = _hub(
        {
            "good": {
                "url": url,
                "headers": {"Authorization": f"Bearer {mcp_http_token}"},
            },
            "bad": {"url": url, "headers": {"Authorization": "Bearer wrong"}},
        },
        connect_timeout=3,
    )
    try:
        await until(
            lambda: (
                hub.connections["good"].status == CONNECTED
                and hub.connections["bad"].status == FAILED
            )
        )
        assert "401" in (hub.connections["bad"].error or "")
    finally:
        await hub.stop()


async def test_an_sse_server(mcp_sse_url: str) -> None:
    hub = _hub({"legacy": {"url": mcp_sse_url, "type": "sse"}}, connect_timeout=5)
    try:
        await until(lambda: hub.connections["legacy"].status == CONNECTED)
        tools = hub.tool_set()
        assert tools is not None
        assert await tools.call("legacy__add", {"a": 2, "b": 2}) == "4"
    finally:
        await hub.stop()
