"""A scripted OpenAI-compatible HTTP server for tests and local development.

It speaks the parts of the OpenAI API Soul uses — ``GET /v1/models``,
``POST /v1/chat/completions`` (plain and streamed, with tool calls) and
``POST /v1/embeddings`` — so tests drive the real ``openai`` client over real
HTTP. Replies are queued per test::

    llm.reply("Hello!")
    llm.reply(tool_calls=[tool_call("control_light", {"mode": "on"})])
    llm.fail(500, "overloaded")

Responders answer the requests they recognise before the queue is consulted:
``FakeOpenAI(responders=[mem0_responder])`` lets mem0 extract memories while the
chat requests of the same test still take the scripted replies. Embeddings are
hashed bags of words (CJK characters one by one), so texts that share words are
similar and semantic search works.

Every request body is kept in ``llm.requests``. ``python -m devtools.fake_llm``
runs it in the foreground, answers mem0 and echoes the user when nothing is queued.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
from collections import deque
from collections.abc import Callable
import contextlib
from dataclasses import dataclass, field
import hashlib
import itertools
import json
import math
import re
import time
from typing import Any

from aiohttp import web

from devtools.serve import serve

DEFAULT_MODEL = "soul-test-model"
EMBEDDING_DIMENSIONS = 16
_ids = itertools.count(1)


def tool_call(
    name: str, arguments: dict[str, Any] | str, call_id: str | None = None
) -> dict:
    """Return one tool call in the shape of the chat completions API."""
    return {
        "id": call_id or f"call_{next(_ids)}",
        "type": "function",
        "function": {
            "name": name,
            "arguments": arguments
            if isinstance(arguments, str)
            else json.dumps(arguments),
        },
    }


# Han, kana, hangul: one feature per character, as such text has no spaces.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+")
_STOPWORDS = frozenset(
    re.findall(
        r"\w+",
        "a an and are as at be but by did do does for from had has have he her his i"
        " in is it its me my of on or our she so that the their them they this to was"
        " we were what when where which who will with you your",
    )
)


def _features(text: str) -> list[str]:
    """Return the words of ``text`` (lower case, a plural "s" dropped), CJK characters one by one."""
    tokens = [
        t if len(t) < 4 or not t.endswith("s") else t[:-1]
        for t in _TOKEN.findall(text.lower())
    ]
    return [t for t in tokens if t not in _STOPWORDS] or tokens


def embed(text: str, dimensions: int = EMBEDDING_DIMENSIONS) -> list[float]:
    """Return a deterministic unit vector for ``text`` (equal texts, equal vectors).

    Each word is hashed to a signed position, so texts that share words point
    the same way and texts that share none are near orthogonal. Text without
    words hashes as a whole.
    """
    raw = [0.0] * dimensions
    for feature in _features(text) or [text]:
        digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
        index = int.from_bytes(digest[:4], "big") % dimensions
        raw[index] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in raw))
    if not norm:  # the features cancelled out: any fixed direction will do
        raw[0], norm = 1.0, 1.0
    return [v / norm for v in raw]


@dataclass
class Reply:
    """One scripted answer to a chat completion request."""

    content: str | None = None
    tool_calls: list[dict] | None = None
    status: int = 200
    error: str | None = None
    delay: float = 0.0
    # Streamed replies: seconds between chunks (to see deltas arrive early).
    chunk_delay: float = 0.0
    # Sent as the whole HTTP body instead of a completion (an HTML page, say).
    raw: str | None = None
    content_type: str = "text/html"


@dataclass
class FakeOpenAI:
    """The server; ``await start()`` it, then point a client at ``base_url``."""

    api_key: str | None = None
    # None: GET /v1/models answers 404, as some servers do.
    models: list[str] | None = field(default_factory=lambda: [DEFAULT_MODEL])
    # Called with the request body when no reply is queued; None (or it
    # returning None) → HTTP 500.
    default: Callable[[dict], Reply | None] | None = None
    # Asked in turn before the queue; the first that returns a Reply answers.
    responders: list[Callable[[dict], Reply | None]] = field(default_factory=list)
    requests: list[dict] = field(default_factory=list)
    _replies: deque[Reply] = field(default_factory=deque)
    _runner: web.AppRunner | None = None
    port: int = 0

    # -- scripting -------------------------------------------------------
    def reply(
        self,
        content: str | None = None,
        *,
        tool_calls: list[dict] | None = None,
        delay: float = 0.0,
        chunk_delay: float = 0.0,
    ) -> None:
        """Queue a successful completion: text, tool calls, or both."""
        self._replies.append(
            Reply(
                content=content,
                tool_calls=tool_calls,
                delay=delay,
                chunk_delay=chunk_delay,
            )
        )

    def raw(self, body: str, content_type: str = "text/html") -> None:
        """Queue a 200 answer whose body is ``body``, not a completion."""
        self._replies.append(Reply(raw=body, content_type=content_type))

    def fail(self, status: int, message: str = "scripted failure") -> None:
        """Queue an HTTP error for the next completion."""
        self._replies.append(Reply(status=status, error=message))

    @property
    def pending(self) -> int:
        """How many queued replies no request has taken yet."""
        return len(self._replies)

    @property
    def chat_requests(self) -> list[dict]:
        """The bodies of the chat completion requests received so far."""
        return [r["body"] for r in self.requests if r["path"] == "/v1/chat/completions"]

    @property
    def base_url(self) -> str:
        """The URL to give an OpenAI client (ends in /v1)."""
        return f"http://127.0.0.1:{self.port}/v1"

    # -- server ----------------------------------------------------------
    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Listen on host:port (0 picks a free port) and return ``base_url``."""
        app = web.Application()
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/embeddings", self._embeddings)
        self._runner, self.port = await serve(app, host, port)
        return self.base_url

    async def close(self) -> None:
        """Stop listening."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @staticmethod
    def _error(status: int, message: str, code: str | None = None) -> web.Response:
        return web.json_response(
            {"error": {"message": message, "type": "fake_error", "code": code}},
            status=status,
        )

    def _unauthorized(self, request: web.Request) -> web.Response | None:
        if self.api_key is None:
            return None
        if request.headers.get("Authorization") == f"Bearer {self.api_key}":
            return None
        return self._error(401, "Incorrect API key provided", "invalid_api_key")

    async def _record(self, request: web.Request) -> dict:
        body = await request.json() if request.can_read_body else {}
        self.requests.append({"path": request.path, "body": body})
        return body

    async def _models(self, request: web.Request) -> web.Response:
        await self._record(request)
        if denied := self._unauthorized(request):
            return denied
        if self.models is None:
            return self._error(404, "Not found")
        return web.json_response(
            {
                "object": "list",
                "data": [
                    {"id": m, "object": "model", "created": 0, "owned_by": "fake"}
                    for m in self.models
                ],
            }
        )

    async def _embeddings(self, request: web.Request) -> web.Response:
        body = await self._record(request)
        if denied := self._unauthorized(request):
            return denied
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else list(texts or [])
        dims = int(body.get("dimensions") or EMBEDDING_DIMENSIONS)
        return web.json_response(
            {
                "object": "list",
                "model": body.get("model", DEFAULT_MODEL),
                "data": [
                    {
                        "object": "embedding",
                        "index": i,
                        "embedding": embed(str(t), dims),
                    }
                    for i, t in enumerate(texts)
                ],
                "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)},
            }
        )

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await self._record(request)
        if denied := self._unauthorized(request):
            return denied
        reply = next(
            (r for responder in self.responders if (r := responder(body))), None
        )
        if reply is None and self._replies:
            reply = self._replies.popleft()
        elif reply is None and self.default is not None:
            reply = self.default(body)
        if reply is None:
            return self._error(500, "fake LLM: no scripted reply left")
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.status != 200:
            return self._error(reply.status, reply.error or "error")
        if reply.raw is not None:
            return web.Response(text=reply.raw, content_type=reply.content_type)
        model = body.get("model", DEFAULT_MODEL)
        finish = "tool_calls" if reply.tool_calls else "stop"
        if body.get("stream"):
            return await self._stream(request, reply, model, finish)
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.tool_calls:
            message["tool_calls"] = reply.tool_calls
        return web.json_response(
            {
                "id": f"chatcmpl-{next(_ids)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {
                    "prompt_tokens": 1,
                    "completion_tokens": 1,
                    "total_tokens": 2,
                },
            }
        )

    async def _stream(
        self, request: web.Request, reply: Reply, model: str, finish: str
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        chunk_id = f"chatcmpl-{next(_ids)}"

        async def send(delta: dict, finish_reason: str | None = None) -> None:
            chunk = {
                "id": chunk_id,
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [
                    {"index": 0, "delta": delta, "finish_reason": finish_reason}
                ],
            }
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
            if reply.chunk_delay:
                await asyncio.sleep(reply.chunk_delay)

        await send({"role": "assistant", "content": ""})
        if reply.content:
            # Two pieces, so clients really assemble deltas.
            half = len(reply.content) // 2
            for piece in (reply.content[:half], reply.content[half:]):
                if piece:
                    await send({"content": piece})
        for index, call in enumerate(reply.tool_calls or []):
            await send(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call["id"],
                            "type": "function",
                            "function": {
                                "name": call["function"]["name"],
                                "arguments": "",
                            },
                        }
                    ]
                }
            )
            await send(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "function": {"arguments": call["function"]["arguments"]},
                        }
                    ]
                }
            )
        await send({}, finish)
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


def echo(body: dict) -> Reply:
    """Answer with the last user message: a stand-in model for local development."""
    user = [m for m in body.get("messages", []) if m.get("role") == "user"]
    text = user[-1].get("content") if user else ""
    return Reply(content=f"(fake LLM) You said: {text}")


# -- mem0 -------------------------------------------------------------------
# mem0 ≥ 1.1 extracts memories with one prompt (ADDITIVE_EXTRACTION_PROMPT);
# older releases ask for facts (FACT_RETRIEVAL_PROMPT and its user/agent
# variants), then for ADD/UPDATE/DELETE/NONE events (DEFAULT_UPDATE_MEMORY_PROMPT).
_EXTRACTOR = "You are a Memory Extractor"
_FACT_ORGANIZERS = ("Personal Information Organizer", "Assistant Information Organizer")
_UPDATER = "You are a smart memory manager"
_CLAUSE_END = re.compile(r"[.!?;,\n。！？；，、]+")


def clauses(text: str) -> list[str]:
    """Split ``text`` into sentences and clauses: the facts the fake model extracts."""
    return [c.strip() for c in _CLAUSE_END.split(text) if c.strip()]


def _section(prompt: str, title: str) -> str:
    """Return the body of ``## title`` in a mem0 prompt ("" when absent)."""
    match = re.search(
        rf"^## {re.escape(title)}\n(.*?)(?=^## |^# |\Z)", prompt, re.M | re.S
    )
    return match.group(1).strip() if match else ""


def _user_lines(conversation: str) -> list[str]:
    """Return the user turns of mem0's ``role: content`` transcript."""
    return [line[6:] for line in conversation.splitlines() if line.startswith("user: ")]


def _literal(text: str) -> Any:
    """Parse JSON or a Python literal (mem0 formats lists with str())."""
    try:
        return json.loads(text)
    except ValueError:
        return ast.literal_eval(text)


def _fenced_after(prompt: str, marker: str) -> str | None:
    """Return the first ``` block after ``marker``."""
    start = prompt.find(marker)
    if start < 0:
        return None
    match = re.search(r"```(.*?)```", prompt[start:], re.S)
    return match.group(1).strip() if match else None


def _first_content(body: dict, role: str) -> str:
    """Return the text of the first ``role`` message of a chat request."""
    for message in body.get("messages") or []:
        if isinstance(message, dict) and message.get("role") == role:
            content = message.get("content")
            return content if isinstance(content, str) else ""
    return ""


def _json_reply(payload: dict) -> Reply:
    return Reply(content=json.dumps(payload, ensure_ascii=False))


def quiet_navigator(body: dict) -> Reply | None:
    """Answer Soul's navigator (its S-brain) with advice that changes nothing."""
    messages = body.get("messages") or [{}]
    if not str(messages[0].get("content", "")).startswith("You are the navigator"):
        return None
    return Reply(
        content=json.dumps(
            {
                "suggestion": "",
                "psyche_delta": {"pleasure": 0, "arousal": 0, "dominance": 0},
                "memory_archival": False,
                "evolution_request": None,
            }
        )
    )


def mem0_responder(body: dict) -> Reply | None:
    """Answer mem0's memory prompts like a literal-minded model; None for others.

    Every clause a user said becomes a memory, except those already stored
    with the same text, so adding the same thing twice stores it once.
    """
    system = _first_content(body, "system")
    prompt = _first_content(body, "user")
    if _EXTRACTOR in system:
        known = {
            m.get("text")
            for m in _literal(_section(prompt, "Existing Memories") or "[]")
        }
        facts = [
            fact
            for line in _user_lines(_section(prompt, "New Messages"))
            for fact in clauses(line)
            if fact not in known
        ]
        return _json_reply(
            {
                "memory": [
                    {"id": str(i), "text": fact, "attributed_to": "user"}
                    for i, fact in enumerate(dict.fromkeys(facts))
                ]
            }
        )
    if any(name in system for name in _FACT_ORGANIZERS):
        conversation = prompt.split("Input:\n", 1)[-1]
        facts = [fact for line in _user_lines(conversation) for fact in clauses(line)]
        return _json_reply({"facts": list(dict.fromkeys(facts))})
    if _UPDATER in prompt:
        old_block = _fenced_after(
            prompt, "You have to update it in the following format only"
        )
        old = _literal(old_block) if old_block else []
        new_block = _fenced_after(prompt, "The new retrieved facts are mentioned")
        new = _literal(new_block) if new_block else []
        known = {m.get("text") for m in old}
        events = [
            {"id": str(m.get("id")), "text": m.get("text"), "event": "NONE"}
            for m in old
        ]
        fresh = [f for f in dict.fromkeys(new) if isinstance(f, str) and f not in known]
        events += [
            {"id": str(len(old) + i), "text": fact, "event": "ADD"}
            for i, fact in enumerate(fresh)
        ]
        return _json_reply({"memory": events})
    return None


def chain(
    *responders: Callable[[dict], Reply | None],
) -> Callable[[dict], Reply | None]:
    """Return a responder that asks ``responders`` in turn (for ``FakeOpenAI.default``)."""

    def respond(body: dict) -> Reply | None:
        return next((r for responder in responders if (r := responder(body))), None)

    return respond


async def _serve(host: str, port: int) -> None:
    server = FakeOpenAI(responders=[mem0_responder], default=echo)
    url = await server.start(host, port)
    print(f"Fake OpenAI-compatible API at {url} (model {DEFAULT_MODEL})", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await server.close()


def main() -> None:
    """Serve the echoing fake LLM in the foreground."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(args.host, args.port))


if __name__ == "__main__":
    main()
