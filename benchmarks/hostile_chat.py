"""Classes 7-8 of ``benchmarks.hostile``: chat and what reading the code found.

7 chat bodies (``parse_chat_request``), tool-call arguments, and a 20 MiB model
reply through ``OpenAICompatibleLLM``: ``serve_llm`` is the OpenAI-compatible
server that ``python -m benchmarks.hostile --serve-llm KIND`` runs in a child
process. 8 attacks found by reading the code: the intent filter on repeated
keywords and on times and numbers, a chat turn's argument checks, emotion
cues, and ``uniqueItems`` in the Invoker. A helper module, not a benchmark.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
import json
import sys
import time
from typing import Any

from aiohttp import web

from benchmarks.hostile_meter import (
    BENIGN_OBJECT,
    DESK_ROBOT,
    KIB,
    NOW,
    ORDINARY_ZH,
    ROOT,
    TERMINAL,
    Meter,
    Row,
    Section,
    chain,
    cut,
    in_executor,
    json_array,
    ordinary_pattern,
    quietly,
    size_label,
)
from custom_components.soul.core import protocol, untrusted
from custom_components.soul.core.chat import ChatPipeline
from custom_components.soul.core.chat_request import parse_chat_request
from custom_components.soul.core.emotion import analyze_emotion
from custom_components.soul.core.intent_filter import cached_catalog, filter_intents
from custom_components.soul.core.llm import (
    MAX_COMPLETION_BYTES,
    LLMEndpoint,
    LLMResponseError,
    OpenAICompatibleLLM,
)
from custom_components.soul.core.reasoning import MAX_ARGUMENTS_BYTES, MAX_REPLY
from custom_components.soul.core.registry import TerminalRegistry
from custom_components.soul.core.topics import Kind

# -- 7. chat bodies and model replies ------------------------------------------------


def chat_body(inputs: list[dict[str, Any]]) -> dict[str, Any]:
    """Return a §4.2.1 chat body with ``inputs``."""
    return {"session_id": "s1", "terminal_id": TERMINAL, "inputs": inputs}


def _completion(content: str, **extra: Any) -> bytes:
    return json.dumps(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            **extra,
        }
    ).encode()


async def serve_llm(kind: str) -> None:
    """Serve one completion until stdin closes.

    ``kind`` "hostile" or "benign": 20 MiB (a text of NULs and lone
    surrogates, or of "x"); "values" or "values-benign": just under
    ``MAX_COMPLETION_BYTES``, most of it one extra field of zeros (a million
    values for the decoder to build) or one string as long; "stream" or
    "stream-benign": a streamed completion just under its bound, of 38,000
    tiny events (two characters each) or of 550 events of 3,600 characters.
    """
    content_type = "application/json"
    if kind.startswith("stream"):
        pieces = ["ab"] * 38_000 if kind == "stream" else ["ab" * 1800] * 550
        body = (
            "".join(
                f"data: {json.dumps({'choices': [{'delta': {'content': p}}]})}\n\n"
                for p in pieces
            )
            + "data: [DONE]\n\n"
        ).encode()
        content_type = "text/event-stream"
    elif kind in ("hostile", "benign"):
        size = 20 * 1024 * 1024
        content = "\x00\ud800" * (size // 12) if kind == "hostile" else "x" * size
        body = _completion(content)
    else:
        room = MAX_COMPLETION_BYTES - len(_completion("hi", padding=[])) - 16
        padding: Any = [0] * (room // 3) if kind == "values" else "x" * room
        body = _completion("hi", padding=padding)

    async def completion(_request: web.Request) -> web.Response:
        return web.Response(body=body, content_type=content_type)

    app = web.Application()
    app.router.add_post("/v1/chat/completions", completion)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    print(site._server.sockets[0].getsockname()[1], len(body), flush=True)  # noqa: SLF001
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


async def model_reply_stall(meter: Meter, kind: str) -> tuple[float, int]:
    """Return the loop stall of one completion (``serve_llm``) through ``OpenAICompatibleLLM``."""
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "benchmarks.hostile",
        "--serve-llm",
        kind,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        cwd=ROOT,
    )
    try:
        assert child.stdout is not None
        port, size = map(
            int, (await asyncio.wait_for(child.stdout.readline(), 60)).split()
        )
        llm = await asyncio.to_thread(
            OpenAICompatibleLLM, LLMEndpoint(f"http://127.0.0.1:{port}/v1", "m")
        )

        async def turn() -> None:
            messages = [{"role": "user", "content": "hi"}]
            if kind.startswith("stream"):  # as the reasoner reads it
                async for item in llm.stream(messages):
                    if isinstance(item, str):
                        untrusted.clean(item, MAX_REPLY)
                return
            try:
                reply = await llm.chat(messages)
            except LLMResponseError:
                return  # refused: over MAX_COMPLETION_BYTES, or too many values
            untrusted.clean(reply.content, MAX_REPLY)

        await turn()  # warm the client up
        stall = await meter.stall(turn, rounds=min(meter.rounds, 3))
        await llm.close()
        return stall, size
    finally:
        assert child.stdin is not None
        child.stdin.close()
        try:
            await asyncio.wait_for(child.wait(), 10)
        except TimeoutError:
            child.kill()
            await child.wait()


async def chat(meter: Meter) -> list[Section]:
    """Class 7: chat bodies, tool-call arguments and a 20 MiB model reply."""
    section = Section(
        "7",
        "Chat bodies and model replies",
        "parse_chat_request and Reasoner._tool (untrusted.loads, depth 16) on the "
        "loop; untrusted.clean; OpenAICompatibleLLM.chat",
    )
    text = "x" * 4095
    hostile = chat_body(
        [{"type": "speech_text", "text": text + "y"}] * 31
        + [{"type": "speech_text", "text": text + "\x00"}]
    )
    benign = chat_body([{"type": "speech_text", "text": text + "y"}] * 32)
    section.rows.append(
        Row(
            "32 inputs × 4,096 chars, control char last",
            "128 Ki chars",
            "loop",
            meter.loop(quietly(parse_chat_request, hostile)),
            meter.loop(quietly(parse_chat_request, benign)),
        )
    )
    item_bytes = 500 * KIB  # what a 512 KiB HTTP body can carry

    def as_the_view(body: dict[str, Any]) -> Callable[[], object]:
        """Return the on-loop part of ChatView: parsing what the executor decoded."""
        raw = json.dumps(body).encode()
        try:
            decoded = untrusted.loads(raw, max_bytes=512 * KIB)
        except untrusted.UntrustedInputError:
            return lambda: None  # refused in the executor: a 400, nothing on the loop
        return quietly(parse_chat_request, decoded)

    for name, unit in (("depth-8 chains", chain(6)), ("empty arrays", "[]")):
        data = json.loads(json_array(unit, item_bytes))
        hostile = chat_body(
            [
                {"type": "speech_text", "text": "hi"},
                {"type": "sensor_state", "data": data},
            ]
        )
        benign = chat_body(
            [
                {"type": "speech_text", "text": "hi"},
                {"type": "sensor_state", "data": "x" * item_bytes},
            ]
        )
        section.rows.append(
            Row(
                f"context item of {name}",
                size_label(item_bytes),
                "loop",
                meter.loop(as_the_view(hostile)),
                meter.loop(as_the_view(benign)),
                "as ChatView: decoded in the executor (refused there past 10,000 "
                "containers), parsed on the loop; benign: a string of the same size",
            )
        )
    arguments = json_array(chain(15), MAX_ARGUMENTS_BYTES).decode()
    benign_arguments = json_array(BENIGN_OBJECT, MAX_ARGUMENTS_BYTES).decode()
    section.rows.append(
        Row(
            "tool-call arguments, depth-16 chains",
            size_label(MAX_ARGUMENTS_BYTES),
            "loop",
            meter.loop(
                quietly(
                    untrusted.loads,
                    arguments,
                    max_bytes=MAX_ARGUMENTS_BYTES,
                    max_depth=16,
                )
            ),
            meter.loop(
                quietly(
                    untrusted.loads,
                    benign_arguments,
                    max_bytes=MAX_ARGUMENTS_BYTES,
                    max_depth=16,
                )
            ),
        )
    )
    huge = "\x00\ud800" * (10 * 1024 * 1024)
    plain = "x" * (20 * 1024 * 1024)
    section.rows.append(
        Row(
            "untrusted.clean of a 20 Mi-char reply",
            "20 Mi chars",
            "loop",
            meter.loop(lambda: untrusted.clean(huge, MAX_REPLY)),
            meter.loop(lambda: untrusted.clean(plain, MAX_REPLY)),
        )
    )
    for hostile, benign, name, note in (
        (
            "hostile",
            "benign",
            "20 MiB completion (\\u0000\\ud800…) via openai",
            "OpenAICompatibleLLM.chat + clean; benign: 20 MiB of x",
        ),
        (
            "values",
            "values-benign",
            "a completion of a million zeros (0,0,…), just under its 2 MiB",
            "OpenAICompatibleLLM.chat; benign: one string as long",
        ),
        (
            "stream",
            "stream-benign",
            "a streamed completion of 38,000 tiny events, just under its 2 MiB",
            "OpenAICompatibleLLM.stream; benign: 550 events of 3,600 characters",
        ),
    ):
        hostile_stall, size = await model_reply_stall(meter, hostile)
        benign_stall, _ = await model_reply_stall(meter, benign)
        section.rows.append(
            Row(name, size_label(size), "stall", hostile_stall, benign_stall, note)
        )
    return [section]


# -- 8. found by reading the code -----------------------------------------------------


_WORDS = [
    "开灯",
    "关灯",
    "闹钟",
    "提醒",
    "点头",
    "摇头",
    "音乐",
    "音量",
    "亮度",
    "颜色",
    "窗帘",
    "空调",
    "温度",
    "风扇",
    "电视",
    "播放",
]


def all_rules_intent(n: int) -> dict[str, Any]:
    """Return a catalog intent that uses every rule kind and every slot source."""
    word = _WORDS[n % len(_WORDS)]
    return {
        "id": f"intent_{n}",
        "name": f"意图{n}",
        "priority": n % 100,
        "match": {
            "keywords_any": [word, _WORDS[(n + 3) % 16], f"词{n}"],
            "negative_keywords": ["不要"],
            "regex_any": [r"(\d+)\s*(?:分钟|秒|小时)", r"(?:调到|设为)\s*(\d+)"],
            "entity_types_any": ["number", "time", "color"],
            "examples": [
                f"{word}然后{_WORDS[(n + 5) % 16]}三分钟后提醒我",
                f"把{word}调到50",
            ],
        },
        "slots": [
            {"name": "value", "regex": r"(\d+)", "regex_group": 1},
            {"name": "when", "from_time_key": "seconds", "time_kind": "duration"},
            {"name": "at", "from_time_key": "iso", "time_kind": "time_point"},
            {"name": "color", "from_entity_types": ["color"]},
            {"name": "brightness_level"},
            {"name": "mode"},
        ],
    }


def chat_validation(pattern: str) -> Callable[[], object]:
    """Return the synchronous span of a chat turn: filter, then 8 argument checks.

    As ``ChatPipeline._route`` → ``IntentRoute.execute`` do on the loop: the intent filter
    on the terminal's catalog, then ``IntentRoute._action_intent`` (``Skill.argument_errors``)
    for each ready intent, before the first ``await``.
    """
    registry = TerminalRegistry()
    schema = {
        "type": "object",
        "properties": {
            name: {"type": "string", "pattern": pattern} for name in ("text", "text2")
        },
    }
    skills = {"skills": [{"name": "say", "input_schema": schema}]}
    registry.handle_message(Kind.SKILLS, TERMINAL, json.dumps(skills).encode())
    registry.handle_message(Kind.ONLINE, TERMINAL, b"online")
    catalog = [
        {
            "id": f"say_{n}",
            "match": {"keywords_any": [f"kw{n}"]},
            "slots": [
                {"name": "skill", "default": "say"},
                {"name": "text", "regex": "(a+x)"},
                {"name": "text2", "regex": "(a+x)"},
            ],
        }
        for n in range(8)
    ]
    registry.handle_message(
        Kind.INTENT_CATALOG, TERMINAL, json.dumps({"intent_catalog": catalog}).encode()
    )
    pipeline = ChatPipeline(registry, None, None, None, None, clock=time.monotonic)  # type: ignore[arg-type]
    command = "，".join(f"kw{n} {'a' * 80}x" for n in range(8))

    def turn() -> None:
        response = registry.filter_command(
            TERMINAL, {"command": command}, default_timezone="UTC"
        )
        ready = [i for i in response["intents"] if i.get("status") == "ready"]
        pipeline.intents._valid_intents(TERMINAL, ready)  # noqa: SLF001

    return turn


async def found(meter: Meter) -> list[Section]:
    """Class 8: attacks found by reading the code."""
    section = Section(
        "8",
        "Found by reading the code",
        "filter_intents / registry.filter_command, IntentRoute._action_intent, "
        "analyze_emotion, Invoker (argument_errors in the executor)",
    )
    desk = json.loads(DESK_ROBOT.read_text(encoding="utf-8"))
    ordinary = cut(ORDINARY_ZH + "，", 2000)
    shared = [
        {"id": f"intent_{n}", "match": {"keywords_any": [*_WORDS[:10], "灯"]}}
        for n in range(16)
    ]
    for name, entries, command in (
        ("one keyword 2,000 times, desk-robot catalog", desk, "灯" * 2000),
        ("one keyword 2,000 times, 16 intents share it", shared, "灯" * 2000),
    ):
        cached_catalog(entries)
        section.rows.append(
            Row(
                name,
                "2,000 chars",
                "loop",
                meter.loop(
                    quietly(
                        filter_intents, {"command": command, "intent_catalog": entries}
                    )
                ),
                meter.loop(
                    quietly(
                        filter_intents, {"command": ordinary, "intent_catalog": entries}
                    )
                ),
                "benign: an ordinary 2,000-char command",
            )
        )
    rules = [all_rules_intent(n) for n in range(256)]
    cached_catalog(rules)
    timey = cut("明天早上8点半，3分钟后，1.5小时，二十五，下午三点一刻，", 2000)
    section.rows.append(
        Row(
            "times, numbers, separators vs 256 all-rule intents",
            "2,000 chars",
            "loop",
            meter.loop(
                quietly(
                    filter_intents,
                    {"command": timey, "intent_catalog": rules, "now": NOW},
                )
            ),
            meter.loop(
                quietly(
                    filter_intents,
                    {"command": ordinary, "intent_catalog": rules, "now": NOW},
                )
            ),
            "benign: an ordinary 2,000-char command, same catalog",
        )
    )
    section.rows.append(
        Row(
            "chat turn: 8 intents × schema pattern (a|aa)+$",
            "8 × 85 chars",
            "loop",
            meter.loop(chat_validation("(a|aa)+$")),
            meter.loop(chat_validation(ordinary_pattern(len("(a|aa)+$")))),
            "filter_command + IntentRoute._action_intent × 8",
        )
    )
    cues = cut("太开心了！！！好难过啊真的很生气，", 4096)
    section.rows.append(
        Row(
            "analyze_emotion on 4,096 chars of cues",
            "4,096 chars",
            "loop",
            meter.loop(lambda: analyze_emotion(cues)),
            meter.loop(
                lambda: analyze_emotion(cut("今天天气一般我们去吃饭吧，", 4096))
            ),
        )
    )
    unique = protocol.parse_skill(
        {
            "name": "store",
            "input_schema": {
                "type": "object",
                "properties": {
                    "items": {
                        "type": "array",
                        "uniqueItems": True,
                        "items": {"type": "object"},
                    }
                },
            },
        }
    )
    plain = protocol.parse_skill(
        {
            "name": "store",
            "input_schema": {
                "type": "object",
                "properties": {"items": {"type": "array", "items": {"type": "object"}}},
            },
        }
    )
    items = [{"k": 0, "v": [0, n]} for n in range(800)]
    size = len(json.dumps({"items": items}))
    busy: list[float] = []

    async def check(skill: protocol.Skill) -> None:
        started = time.perf_counter()
        await in_executor(lambda: skill.argument_errors({"items": items}))
        busy.append(time.perf_counter() - started)

    section.rows.append(
        Row(
            "uniqueItems over 800 objects (Invoker)",
            size_label(size),
            "stall",
            await meter.stall(lambda: check(unique), rounds=1),
            await meter.stall(lambda: check(plain), rounds=1),
            f"executor busy {busy[0] * 1000:,.0f} ms (quadratic: 64 KiB ≈ 16×); "
            f"benign: no uniqueItems",
        )
    )
    return [section]
