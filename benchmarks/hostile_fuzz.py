"""Class 9 of ``benchmarks.hostile``: the slow inputs a fuzzer found (2026-11-25).

Each was seconds long before its fix: a model reply of a code fence and
spaces (a backtracking pattern), a long inner voice streamed before the reply
(quadratic), a skills payload whose one long ``enum`` is referenced 1,600
times (the inlining cap did not count array items), ``uniqueItems`` over
4,000 arguments (jsonschema's pairwise check), and 256 intents sharing one
keyword against a command of 2,000 of it. A helper module, not a benchmark.
"""

from __future__ import annotations

import json
from typing import Any

from benchmarks.hostile_meter import (
    ORDINARY_ZH,
    Meter,
    Row,
    Section,
    cut,
    in_executor,
    quietly,
)
from custom_components.soul.core import json_schema, protocol, untrusted
from custom_components.soul.core.cognition.driver import ReplyField, parse_driver_reply
from custom_components.soul.core.intent_filter import cached_catalog, filter_intents
from custom_components.soul.core.registry import TerminalRegistry
from custom_components.soul.core.topics import Kind

SPACES = 2000
INNER_VOICE = 20_000  # quadratic before its fix: 30 ms; the pieces are many loop turns
PIECE = 4


def _stream(answer: str) -> None:
    field = ReplyField()
    for start in range(0, len(answer), PIECE):
        field.feed(answer[start : start + PIECE])


def _enum_skills(values: list[Any]) -> bytes:
    schema = {
        "$defs": {"a": {"enum": values}, "b": {"allOf": [{"$ref": "#/$defs/a"}] * 40}},
        "properties": {f"p{i}": {"$ref": "#/$defs/b"} for i in range(40)},
    }
    return json.dumps({"skills": [{"name": "a", "input_schema": schema}]}).encode()


def _benign_skills() -> bytes:
    """Return 52 ordinary skills of 12 described properties each (about 128 KiB)."""
    skills = [
        {
            "name": f"skill_{n}",
            "input_schema": {
                "type": "object",
                "properties": {
                    f"p{i}": {"type": "string", "description": f"colour {n} " * 16}
                    for i in range(12)
                },
            },
        }
        for n in range(52)
    ]
    return json.dumps({"skills": skills}).encode()


async def fuzzed(meter: Meter) -> list[Section]:
    """Class 9: the slow inputs found by fuzzing, each with a benign twin."""
    section = Section(
        "9",
        "Found by fuzzing",
        "parse_driver_reply, ReplyField, TerminalRegistry.prepare, "
        "Skill.argument_errors, filter_intents",
    )
    fence = "```{" + " " * SPACES + "}"
    benign_reply = json.dumps({"reply": "x" * (SPACES - 12)})
    section.rows.append(
        Row(
            "a code fence and 2,000 spaces (model reply)",
            f"{len(fence):,} chars",
            "loop",
            meter.loop(quietly(parse_driver_reply, fence, 4096)),
            meter.loop(quietly(parse_driver_reply, benign_reply, 4096)),
            "benign: a JSON reply as long",
        )
    )
    voice = json.dumps({"inner_voice": "a" * INNER_VOICE, "reply": "hi"})
    plain = json.dumps({"reply": "a" * INNER_VOICE})
    section.rows.append(
        Row(
            "20,000-char inner voice streamed in 4-char pieces (all 5,000)",
            f"{len(voice):,} chars",
            "loop",
            meter.loop(quietly(_stream, voice)),
            meter.loop(quietly(_stream, plain)),
            "benign: a reply as long, streamed",
        )
    )
    blowup = _enum_skills(list(range(20000)))
    benign = _benign_skills()
    section.rows.append(
        Row(
            "skills: one 20,000-value enum referenced 1,600 times",
            f"{len(blowup) // 1024} KiB",
            "stall",
            await meter.stall(
                lambda: in_executor(
                    quietly(TerminalRegistry.prepare, Kind.SKILLS, "t1", blowup)
                ),
                json_schema._compile_schema.cache_clear,  # noqa: SLF001
            ),
            await meter.stall(
                lambda: in_executor(
                    quietly(TerminalRegistry.prepare, Kind.SKILLS, "t1", benign)
                ),
                json_schema._compile_schema.cache_clear,  # noqa: SLF001
            ),
            "benign: 52 ordinary skills, as many bytes",
        )
    )
    skill = protocol.parse_skill(
        {
            "name": "a",
            "input_schema": {
                "type": "object",
                "properties": {"a": {"type": "array", "uniqueItems": True}},
            },
        }
    )
    unique = untrusted.loads(json.dumps({"a": ["x", *range(4000)]}), max_bytes=65536)
    numbers = untrusted.loads(json.dumps({"a": list(range(4001))}), max_bytes=65536)
    section.rows.append(
        Row(
            "uniqueItems over 4,001 arguments",
            "23 KB",
            "stall",
            await meter.stall(
                lambda: in_executor(quietly(skill.argument_errors, unique))
            ),
            await meter.stall(
                lambda: in_executor(quietly(skill.argument_errors, numbers))
            ),
            "benign: 4,001 distinct numbers",
        )
    )
    shared = [{"id": f"i{n}", "match": {"keywords_any": ["一"]}} for n in range(256)]
    cached_catalog(shared)
    ordinary = cut(ORDINARY_ZH + "，", 2000)
    section.rows.append(
        Row(
            "256 intents share 一, the command is 一 2,000 times",
            "2,000 chars",
            "loop",
            meter.loop(
                quietly(
                    filter_intents, {"command": "一" * 2000, "intent_catalog": shared}
                )
            ),
            meter.loop(
                quietly(filter_intents, {"command": ordinary, "intent_catalog": shared})
            ),
            "benign: an ordinary 2,000-char command, same catalog",
        )
    )
    return [section]
