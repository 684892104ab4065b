"""MCP tools as the model's functions: names, schemas, arguments, results."""

from __future__ import annotations

import base64
import re

from mcp import types

from custom_components.soul.core.mcp.tools import (
    MAX_RESULT_CHARS,
    MAX_TOOLS_PER_SERVER,
    model_name,
    parse_tools,
    result_text,
)

OPENAI_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def tool(name: str, schema: object = None, **extra: object) -> types.Tool:
    return types.Tool.model_construct(
        name=name,
        inputSchema=schema if schema is not None else {"type": "object"},
        **extra,
    )


def test_names_follow_the_model_api_rules_and_stay_unique() -> None:
    taken: set[str] = set()
    names = []
    for raw in ("read_file", "read.file", "read file", "读文件", "x" * 200, "x" * 201):
        name = model_name("files", raw, taken)
        taken.add(name)
        names.append(name)
    assert names[0] == "files__read_file"
    assert all(OPENAI_NAME.fullmatch(n) for n in names), names
    assert len(set(names)) == len(names)
    # The same odd name gets the same model name every time (stable across restarts).
    assert model_name("files", "read.file", set()) == names[1]


def test_schemas_are_checked_like_skills() -> None:
    listed = [
        tool("add", {"type": "object", "properties": {"a": {"type": "integer"}},
                     "required": ["a"]}, description="Add."),
        tool("not_object", {"type": "string"}),
        tool("bad_schema", {"type": "object", "properties": {"a": {"type": 5}}}),
        tool("remote_ref", {"type": "object", "properties": {"a": {"$ref": "http://x/s"}}}),
        tool("evil_pattern", {"type": "object",
                              "properties": {"a": {"type": "string", "pattern": "(a+)+$"}}}),
        tool("", {"type": "object"}),
        tool("refs", {"type": "object", "properties": {"a": {"$ref": "#/$defs/n"}},
                      "$defs": {"n": {"type": "number"}}}),
    ]  # fmt: skip
    tools, skipped = parse_tools("calc", listed)
    # A catastrophic pattern is kept: it runs with a hard time limit.
    assert [t.tool for t in tools] == ["add", "evil_pattern", "refs"]
    assert len(skipped) == 4
    assert tools[1].skill.argument_errors({"a": "a" * 40 + "b"})
    add = tools[0]
    assert add.spec()["function"] == {
        "name": "calc__add",
        "description": "Add.",
        "parameters": add.skill.input_schema,
    }
    assert add.skill.argument_errors({"a": 1}) == []
    assert add.skill.argument_errors({"a": "one"})
    assert add.skill.argument_errors({})
    refs = tools[-1]
    assert "$defs" not in refs.skill.input_schema  # inlined for the model
    assert refs.skill.argument_errors({"a": "x"})


def test_a_flood_of_tools_is_cut() -> None:
    tools, skipped = parse_tools("big", [tool(f"t{i}") for i in range(500)])
    assert len(tools) == MAX_TOOLS_PER_SERVER
    assert skipped == [
        f"{500 - MAX_TOOLS_PER_SERVER} or more tools over {MAX_TOOLS_PER_SERVER}"
    ]


def test_results_become_text() -> None:
    png = base64.b64encode(b"\x89PNG" + b"\x00" * 96).decode()
    text = result_text(
        [
            types.TextContent(type="text", text="a cat"),
            types.ImageContent(type="image", data=png, mimeType="image/png"),
            types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(
                    uri="file:///notes.txt", text="buy milk", mimeType="text/plain"
                ),
            ),
            types.EmbeddedResource(
                type="resource",
                resource=types.BlobResourceContents(
                    uri="file:///a.bin", blob=png, mimeType="application/octet-stream"
                ),
            ),
        ]
    )
    assert text.splitlines() == [
        "a cat",
        "[image: image/png, 100 bytes]",
        "[resource file:///notes.txt]",
        "buy milk",
        "[resource file:///a.bin: application/octet-stream]",
    ]
    assert result_text([], {"temperature": 21}) == '{"temperature": 21}'
    huge = result_text([types.TextContent(type="text", text="x" * 100_000 + "\x00")])
    assert len(huge) <= MAX_RESULT_CHARS + 8 and huge.endswith("…(cut)")
    assert "\x00" not in result_text([types.TextContent(type="text", text="a\x00b")])
