"""The LLM endpoint check, without Home Assistant, over real HTTP."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
import gc
import gzip
import json
from pathlib import Path
import subprocess
import sys
import time
from typing import Any

from aiohttp import web
import pytest

from custom_components.soul.core import llm as llm_module, untrusted
from custom_components.soul.core.llm import (
    DEADLINE_TIMEOUTS,
    MAX_COMPLETION_BYTES,
    LLMAuthError,
    LLMConnectionError,
    LLMEndpoint,
    LLMResponseError,
    OpenAICompatibleLLM,
)
from devtools.broker import free_port
from devtools.fake_llm import DEFAULT_MODEL, FakeOpenAI


@pytest.fixture
async def make_llm() -> AsyncGenerator[Callable[..., OpenAICompatibleLLM]]:
    """Build clients with their own HTTP pool and close them after the test."""
    made: list[OpenAICompatibleLLM] = []

    def make(url: str, api_key: str = "") -> OpenAICompatibleLLM:
        made.append(OpenAICompatibleLLM(LLMEndpoint(url, DEFAULT_MODEL, api_key)))
        return made[-1]

    yield make
    for llm in made:
        await llm.close()
    # An answer refused halfway leaves the HTTP client's readers (httpx's and
    # openai's async generators) to the collector, whose finaliser closes each
    # in a task of its own: done now, not in the next test's teardown check
    # (a lingering task there, once, on Python 3.14).
    gc.collect()
    for _ in range(3):  # each closing may take a turn or two of the loop
        await asyncio.sleep(0)


async def test_verify_ok(
    fake_llm: FakeOpenAI, make_llm: Callable[..., OpenAICompatibleLLM]
) -> None:
    fake_llm.api_key = "sk-1"
    await make_llm(fake_llm.base_url, "sk-1").verify()
    assert [r["path"] for r in fake_llm.requests] == ["/v1/models"]


async def test_verify_without_key_sends_placeholder(
    fake_llm: FakeOpenAI, make_llm: Callable[..., OpenAICompatibleLLM]
) -> None:
    """Local servers need no key; the client still starts and the request goes out."""
    await make_llm(fake_llm.base_url).verify()
    assert len(fake_llm.requests) == 1


async def test_verify_wrong_key(
    fake_llm: FakeOpenAI, make_llm: Callable[..., OpenAICompatibleLLM]
) -> None:
    fake_llm.api_key = "sk-1"
    with pytest.raises(LLMAuthError):
        await make_llm(fake_llm.base_url, "sk-2").verify()


async def test_verify_unreachable(
    fake_llm: FakeOpenAI, make_llm: Callable[..., OpenAICompatibleLLM]
) -> None:
    with pytest.raises(LLMConnectionError):
        await make_llm(f"http://127.0.0.1:{free_port()}/v1").verify()


async def test_verify_falls_back_to_completion(
    fake_llm: FakeOpenAI, make_llm: Callable[..., OpenAICompatibleLLM]
) -> None:
    fake_llm.models = None
    fake_llm.reply("pong")
    await make_llm(fake_llm.base_url).verify()
    fake_llm.fail(404, "model not found")
    with pytest.raises(LLMConnectionError):
        await make_llm(fake_llm.base_url).verify()


def test_endpoint_repr_hides_key() -> None:
    assert "sk-secret" not in repr(LLMEndpoint("http://x/v1", "m", "sk-secret"))


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        ("<html><body>502 Bad Gateway</body></html>", "text/html"),
        ('{"choices": "nope"}', "application/json"),
        ('{"choices": [{"message": {"content": 5}}]}', "application/json"),
        ("[]", "application/json"),
    ],
)
async def test_a_page_that_is_no_completion_is_a_response_error(
    fake_llm: FakeOpenAI,
    make_llm: Callable[..., OpenAICompatibleLLM],
    body: str,
    content_type: str,
) -> None:
    """Issue 13: a 200 with an HTML page became a 500 of Soul's chat."""
    fake_llm.raw(body, content_type)
    with pytest.raises(LLMResponseError):
        await make_llm(fake_llm.base_url).chat([{"role": "user", "content": "hi"}])


async def _ask(
    llm: OpenAICompatibleLLM, *, streamed: bool, timeout: float = 30.0
) -> None:
    """Ask ``llm`` one question, streamed or not, reading the whole answer."""
    messages = [{"role": "user", "content": "hi"}]
    if streamed:
        async for _piece in llm.stream(messages, timeout=timeout):
            pass
    else:
        await llm.chat(messages, timeout=timeout)


@asynccontextmanager
async def _endpoint(
    handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
) -> AsyncIterator[str]:
    """Serve ``handler`` as an endpoint's chat completions on 127.0.0.1 (real HTTP)."""
    app = web.Application()
    app.router.add_post("/v1/chat/completions", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        await runner.cleanup()


@pytest.fixture
async def dripping_endpoint(socket_enabled: None) -> AsyncGenerator[str]:
    """An endpoint that answers with a byte every 50 ms, forever."""

    async def drip(request: web.Request) -> web.StreamResponse:
        streamed = (await request.json()).get("stream", False)
        response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream" if streamed else "application/json"
            }
        )
        await response.prepare(request)
        first = b'data: {"choices": [{"delta": {"content": "' if streamed else b"{"
        await response.write(first)
        while True:  # until the client goes away
            await asyncio.sleep(0.05)
            await response.write(b" ")

    async with _endpoint(drip) as url:
        yield url


@pytest.mark.parametrize("streamed", [False, True])
async def test_an_endpoint_that_drips_is_cut_off(
    dripping_endpoint: str,
    make_llm: Callable[..., OpenAICompatibleLLM],
    streamed: bool,
) -> None:
    """A byte every 50 ms never lets the 0.3 s timeout run out; the deadline does.

    A hostile model dripping a byte a second held a turn for 200 s (black box,
    2026-11-28).
    """
    llm = make_llm(dripping_endpoint)
    started = time.monotonic()
    with pytest.raises(LLMConnectionError, match="did not finish its answer within"):
        await _ask(llm, streamed=streamed, timeout=0.3)
    assert time.monotonic() - started < DEADLINE_TIMEOUTS * 0.3 + 0.5


async def test_an_endpoint_check_that_drips_is_not_waited_for(
    dripping_endpoint: str,
    make_llm: Callable[..., OpenAICompatibleLLM],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Setting Soul up waits for the check: only the answer's status counts.

    It read the body once, and waited for a dripping one until its deadline.
    """
    monkeypatch.setattr(llm_module, "VERIFY_TIMEOUT", 5)
    started = time.monotonic()
    await make_llm(dripping_endpoint).verify()
    assert time.monotonic() - started < 2


@pytest.fixture
async def broken_endpoint(socket_enabled: None) -> AsyncGenerator[str]:
    """An endpoint that answers 500 with a page of control characters."""

    async def broken(_request: web.Request) -> web.Response:
        return web.Response(
            status=500,
            body="boom\x00\u202eevil\nINFO forged line".encode(),
            content_type="text/plain",
        )

    async with _endpoint(broken) as url:
        yield url


async def test_an_error_page_becomes_one_clean_line(
    broken_endpoint: str, make_llm: Callable[..., OpenAICompatibleLLM]
) -> None:
    """An error page's NUL bytes and overrides went into Home Assistant's log (black box)."""
    with pytest.raises(LLMConnectionError) as caught:
        await make_llm(broken_endpoint).chat([{"role": "user", "content": "hi"}])
    said = str(caught.value)
    assert "boom" in said
    assert not {"\x00", "\u202e", "\n"} & set(said), said


@pytest.fixture
async def counting_endpoint(socket_enabled: None) -> AsyncGenerator[str]:
    """An endpoint whose completion (or one streamed event) holds too many values."""
    zeros = [0] * (untrusted.MAX_JSON_VALUES + 2)

    async def many(request: web.Request) -> web.Response:
        if (await request.json()).get("stream", False):
            chunk = {"choices": [{"delta": {"content": "hi"}}], "padding": zeros}
            return web.Response(
                text=f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n",
                content_type="text/event-stream",
            )
        completion = {
            "choices": [{"message": {"role": "assistant", "content": "hi"}}],
            "padding": zeros,
        }
        return web.json_response(completion)

    async with _endpoint(many) as url:
        yield url


@pytest.mark.parametrize("streamed", [False, True])
async def test_an_answer_of_too_many_values_is_refused(
    counting_endpoint: str,
    make_llm: Callable[..., OpenAICompatibleLLM],
    streamed: bool,
) -> None:
    """A million zeros within the 2 MiB held the loop 0.1 s, decoded in a thread.

    The decoder holds the GIL while it builds the values (benchmarks.hostile,
    class 7, 2026-11-29).
    """
    with pytest.raises(LLMResponseError, match="values"):
        await _ask(make_llm(counting_endpoint), streamed=streamed)


BIG = json.dumps({"error": {"message": "x" * (MAX_COMPLETION_BYTES + 10)}})


@pytest.fixture
async def flooding_endpoint(
    socket_enabled: None,
) -> AsyncGenerator[tuple[str, list[str]]]:
    """An endpoint whose answers are over the bound: an error, its models, gzip.

    ``/v1/models`` answers 200 with a body over the bound (``?fail`` in the
    base address: 500); a completion is answered with an error over the
    bound, or, for the model ``gzip``, compressed. Yields the base address
    and the ``Accept-Encoding`` of each request.
    """
    asked: list[str] = []

    async def models(request: web.Request) -> web.Response:
        asked.append(request.headers.get("Accept-Encoding", ""))
        status = 500 if "fail" in request.path else 200
        return web.Response(status=status, text=BIG, content_type="application/json")

    async def completion(request: web.Request) -> web.Response:
        asked.append(request.headers.get("Accept-Encoding", ""))
        if (await request.json())["model"] == "gzip":
            return web.Response(
                body=gzip.compress(b'{"choices": []}'),
                headers={
                    "Content-Type": "application/json",
                    "Content-Encoding": "gzip",
                },
            )
        return web.Response(status=400, text=BIG, content_type="application/json")

    app = web.Application()
    for base in ("/v1", "/fail/v1"):
        app.router.add_get(base + "/models", models)
        app.router.add_post(base + "/chat/completions", completion)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield f"http://127.0.0.1:{port}", asked
    finally:
        await runner.cleanup()


async def test_answers_over_the_bound_are_not_read(
    flooding_endpoint: tuple[str, list[str]],
) -> None:
    """The openai client read an error's body whole and parsed it on the loop.

    A 47 MB error took 850 MB; a 47 MB list of models held the loop 2 s in the
    endpoint check (2026-11-28).
    """
    base, asked = flooding_endpoint
    llm = OpenAICompatibleLLM(LLMEndpoint(base + "/v1", DEFAULT_MODEL))
    failing = OpenAICompatibleLLM(LLMEndpoint(base + "/fail/v1", DEFAULT_MODEL))
    compressing = OpenAICompatibleLLM(LLMEndpoint(base + "/v1", "gzip"))
    messages = [{"role": "user", "content": "hi"}]
    try:
        await llm.verify()  # its status is all the check reads
        with pytest.raises(
            LLMConnectionError, match=f"larger than {MAX_COMPLETION_BYTES}"
        ):
            await failing.verify()
        with pytest.raises(
            LLMResponseError, match=f"larger than {MAX_COMPLETION_BYTES}"
        ):
            await llm.chat(messages)
        with pytest.raises(
            LLMResponseError, match=f"larger than {MAX_COMPLETION_BYTES}"
        ):
            async for _piece in llm.stream(messages):
                pass
        with pytest.raises(LLMResponseError, match="compressed as 'gzip'"):
            await compressing.chat(messages)
    finally:
        for client in (llm, failing, compressing):
            await client.close()
    assert set(asked) == {"identity"}


_FIRST_USE = """
import sys
from custom_components.soul.core.llm import LLMEndpoint, OpenAICompatibleLLM
llm = OpenAICompatibleLLM(LLMEndpoint("http://127.0.0.1:9/v1", "m"))
before = set(sys.modules)
client = llm.client.with_options(timeout=1, max_retries=0)
client.chat.completions.with_streaming_response.create
client.models.with_streaming_response.list
imported = sorted(set(sys.modules) - before)
sys.exit(f"imported on first use: {imported}" if imported else 0)
"""


def test_the_clients_resources_are_imported_with_soul() -> None:
    """The openai client imports its resources at their first use: 150 ms on the loop.

    What the endpoint check and a chat reach first imports nothing more once
    Soul is imported (openai 3.57 made ``import openai.resources`` load none of
    them: the newest lane, 2026-11-29).
    """
    done = subprocess.run(  # noqa: S603 - this interpreter, this test's code
        [sys.executable, "-c", _FIRST_USE],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


@pytest.fixture
async def breaking_endpoint(socket_enabled: None) -> AsyncGenerator[str]:
    """An endpoint that starts its answer, then closes the connection or falls silent.

    The model named ``silent`` falls silent after its first bytes; any other
    has its connection closed halfway.
    """

    async def breaking(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        streamed = body.get("stream", False)
        response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream" if streamed else "application/json"
            }
        )
        response.content_length = 10_000  # promised, never sent
        await response.prepare(request)
        await response.write(b'data: {"choices": [' if streamed else b'{"choices": [')
        if body["model"] == "silent":
            await asyncio.sleep(2)
        else:
            assert request.transport is not None
            request.transport.close()
        return response

    async with _endpoint(breaking) as url:
        yield url


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize(
    ("model", "said"),
    [("closing", "the answer broke off"), ("silent", "went silent for 0.3 s")],
)
async def test_an_answer_that_breaks_off_is_a_connection_error(
    breaking_endpoint: str, streamed: bool, model: str, said: str
) -> None:
    """A server closing or falling silent inside its answer gave a 500 and a traceback.

    httpx raises those while Soul reads the body, past the openai client's own
    errors (black-box run, 2026-11-29).
    """
    llm = OpenAICompatibleLLM(LLMEndpoint(breaking_endpoint, model))
    try:
        with pytest.raises(LLMConnectionError, match=said):
            await _ask(llm, streamed=streamed, timeout=0.3)
    finally:
        await llm.close()
    gc.collect()
    for _ in range(3):
        await asyncio.sleep(0)


@pytest.fixture
async def chattering_endpoint(socket_enabled: None) -> AsyncGenerator[str]:
    """An endpoint streaming, at once, many tiny events: empty ones or pieces.

    The model names the events: ``empty`` (``{}``, no choice), ``pieces``
    (content of one character) or ``arguments`` (one tool call's arguments,
    a character an event).
    """

    async def chatter(request: web.Request) -> web.Response:
        model = (await request.json())["model"]
        event = {
            "empty": {},
            "pieces": {"choices": [{"delta": {"content": "a"}}]},
            "arguments": {
                "choices": [
                    {
                        "delta": {
                            "tool_calls": [{"index": 0, "function": {"arguments": "b"}}]
                        }
                    }
                ]
            },
        }[model]
        line = f"data: {json.dumps(event)}\n\n"
        return web.Response(
            text=line * TINY_EVENTS + "data: [DONE]\n\n",
            content_type="text/event-stream",
        )

    async with _endpoint(chatter) as url:
        yield url


TINY_EVENTS = 6_000


@asynccontextmanager
async def _loop_turns() -> AsyncIterator[list[int]]:
    """Count the event loop's turns while the block runs: ``counted[0]``."""
    counted = [0]
    running = True

    async def count() -> None:
        while running:
            counted[0] += 1
            await asyncio.sleep(0)

    counter = asyncio.create_task(count())
    try:
        yield counted
    finally:
        running = False
        await counter


@pytest.mark.parametrize("model", ["empty", "pieces", "arguments"])
async def test_many_tiny_events_let_the_loop_run(
    chattering_endpoint: str, model: str
) -> None:
    """Thousands of events sent at once were read without a turn of the loop between.

    200,000 ``data: {}`` events held it 0.3 s, and 60,000 pieces of content
    became as many deltas of Assist's chat log (black-box run, 2026-11-29).
    The loop turns at least once every LINES_BETWEEN_YIELDS lines (an event
    is two), and the content read together is one piece. A stream with no
    choice at all is no completion.
    """
    llm = OpenAICompatibleLLM(LLMEndpoint(chattering_endpoint, model))
    replies: list[Any] = []
    try:
        async with _loop_turns() as turns:
            if model == "empty":
                with pytest.raises(LLMResponseError, match="did not stream a chat"):
                    await _ask(llm, streamed=True)
            else:
                async for item in llm.stream([{"role": "user", "content": "hi"}]):
                    replies.append(item)  # noqa: PERF401 - an async stream
    finally:
        await llm.close()
    assert turns[0] >= 2 * TINY_EVENTS // llm_module.LINES_BETWEEN_YIELDS
    if model == "pieces":
        *pieces, reply = replies
        assert reply.content == "".join(pieces) == "a" * TINY_EVENTS
        assert len(pieces) <= TINY_EVENTS // 100  # one a read, not one an event
    elif model == "arguments":
        assert replies[-1].tool_calls[0].arguments == "b" * TINY_EVENTS


@pytest.mark.parametrize(
    "body", ["<html><body>502 Bad Gateway</body></html>", "", "data: [DONE]\n\n"]
)
async def test_a_stream_that_is_no_completion_is_a_response_error(
    fake_llm: FakeOpenAI, make_llm: Callable[..., OpenAICompatibleLLM], body: str
) -> None:
    """A 200 page streamed became a silent empty reply (black-box run, 2026-11-29)."""
    fake_llm.raw(body, "text/event-stream")
    with pytest.raises(LLMResponseError, match="did not stream a chat completion"):
        await _ask(make_llm(fake_llm.base_url), streamed=True)


async def test_blank_lines_let_the_loop_run(socket_enabled: None) -> None:
    """2 MiB of blank lines held the loop 61 ms: every line counts, not only data.

    The loop turns at least once every LINES_BETWEEN_YIELDS lines; read as
    they come, 200,000 lines in a few chunks would give it a few turns.
    """
    lines = 200_000
    event = {"choices": [{"delta": {"content": "hi"}}]}

    async def blank(_request: web.Request) -> web.Response:
        return web.Response(
            text="\n" * lines + f"data: {json.dumps(event)}\n\ndata: [DONE]\n\n",
            content_type="text/event-stream",
        )

    async with _endpoint(blank) as url:
        llm = OpenAICompatibleLLM(LLMEndpoint(url, DEFAULT_MODEL))
        try:
            async with _loop_turns() as turns:
                messages = [{"role": "user", "content": "x"}]
                pieces = [p async for p in llm.stream(messages)]
        finally:
            await llm.close()
    assert pieces[0] == "hi"
    assert turns[0] >= lines // llm_module.LINES_BETWEEN_YIELDS
