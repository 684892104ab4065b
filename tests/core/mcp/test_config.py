"""The ``mcpServers`` configuration is checked field by field (XingChen-V §4.1)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from custom_components.soul.core.mcp.config import (
    McpConfigError,
    dump_config,
    parse_config,
)

GOOD = {
    "mcpServers": {
        "files": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-filesystem", "/share"],
            "env": {"TOKEN": "s3cret"},
        },
        "search": {
            "url": "https://user:pw@mcp.example/mcp?key=abc",
            "headers": {"Authorization": "Bearer s3cret"},
        },
        "legacy": {"url": "http://10.0.0.5:8000/sse", "type": "sse"},
        "puppeteer": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-puppeteer"],
            "disabled": False,  # other clients' keys are ignored
        },
    }
}


def test_the_spec_shape_is_read() -> None:
    servers = parse_config(json.dumps(GOOD))
    assert list(servers) == ["files", "search", "legacy", "puppeteer"]
    files = servers["files"]
    assert (files.transport, files.command) == ("stdio", "npx")
    assert files.args == ("-y", "@modelcontextprotocol/server-filesystem", "/share")
    assert dict(files.env) == {"TOKEN": "s3cret"}
    assert servers["search"].transport == "http"
    assert servers["legacy"].transport == "sse"
    # Round trip through the options form's text.
    assert parse_config(dump_config(servers)) == servers
    assert parse_config("") == {} and parse_config("  ") == {}
    assert parse_config({"mcpServers": {}}) == {}


def test_secrets_are_redacted() -> None:
    servers = parse_config(GOOD)
    shown = json.dumps([s.redacted() for s in servers.values()])
    assert "s3cret" not in shown and "pw" not in shown and "abc" not in shown
    assert servers["search"].redacted()["url"] == (
        "https://**REDACTED**@mcp.example/mcp?**REDACTED**"
    )
    assert servers["files"].redacted()["env"] == {"TOKEN": "**REDACTED**"}


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ("{not json", "mcpServers"),
        ("[1]", "mcpServers"),
        ({"servers": {}}, "servers"),
        ({"mcpServers": []}, "mcpServers"),
        ({"mcpServers": {"bad name": {"command": "x"}}}, "mcpServers.bad name"),
        ({"mcpServers": {"a__b": {"command": "x"}}}, "mcpServers.a__b"),
        ({"mcpServers": {"x" * 30: {"command": "x"}}}, "mcpServers." + "x" * 30),
        ({"mcpServers": {"a": {"command": "x"}, "A": {"command": "y"}}}, "mcpServers.A"),
        ({"mcpServers": {"a": "npx"}}, "mcpServers.a"),
        ({"mcpServers": {"a": {}}}, "mcpServers.a"),
        ({"mcpServers": {"a": {"command": "x", "url": "http://h"}}}, "mcpServers.a"),
        ({"mcpServers": {"a": {"command": ""}}}, "mcpServers.a.command"),
        ({"mcpServers": {"a": {"command": 5}}}, "mcpServers.a.command"),
        ({"mcpServers": {"a": {"command": "x\x00y"}}}, "mcpServers.a.command"),
        ({"mcpServers": {"a": {"command": "x", "args": "-y"}}}, "mcpServers.a.args"),
        ({"mcpServers": {"a": {"command": "x", "args": ["ok", 3]}}}, "mcpServers.a.args[1]"),
        ({"mcpServers": {"a": {"command": "x", "args": ["a"] * 65}}}, "mcpServers.a.args"),
        ({"mcpServers": {"a": {"command": "x", "env": {"1X": "v"}}}}, "mcpServers.a.env.1X"),
        ({"mcpServers": {"a": {"command": "x", "env": {"X": 1}}}}, "mcpServers.a.env.X"),
        ({"mcpServers": {"a": {"command": "x", "env": {"X": "a\nb"}}}}, "mcpServers.a.env.X"),
        ({"mcpServers": {"a": {"command": "x", "shell": True}}}, "mcpServers.a.shell"),
        ({"mcpServers": {"a": {"command": "x", "type": "sse"}}}, "mcpServers.a.type"),
        ({"mcpServers": {"a": {"url": "ftp://h/x"}}}, "mcpServers.a.url"),
        ({"mcpServers": {"a": {"url": "http://"}}}, "mcpServers.a.url"),
        ({"mcpServers": {"a": {"url": "http://h", "type": "ws"}}}, "mcpServers.a.type"),
        ({"mcpServers": {"a": {"url": "http://h", "headers": {"A B": "v"}}}}, "mcpServers.a.headers.A B"),
        ({"mcpServers": {"a": {"url": "http://h", "headers": {"X": "v\r\nY: z"}}}}, "mcpServers.a.headers.X"),
        # A black-box run stored a bell and a start-of-heading.
        ({"mcpServers": {"a": {"command": "x", "env": {"X": "a\x07b"}}}}, "mcpServers.a.env.X"),
        ({"mcpServers": {"a": {"url": "http://h", "headers": {"X": "a\x01b"}}}}, "mcpServers.a.headers.X"),
        ({"mcpServers": {"a": {"url": "http://h", "headers": {"X": "a\x7fb"}}}}, "mcpServers.a.headers.X"),
        ({"mcpServers": {"a": {"url": "http://h", "headers": {"X": "Bearer clé"}}}}, "mcpServers.a.headers.X"),
        *(
            ({"mcpServers": {"a": {"command": "x", "env": {"X": f"a{c}b"}}}}, "mcpServers.a.env.X")
            for c in ("\x85", "\x9b", "\u2028", "\u202e", "\r", "\n")
        ),
        ({"mcpServers": {"a": {"url": "http://h", "args": []}}}, "mcpServers.a.args"),
        ({"mcpServers": {f"s{i}": {"command": "x"} for i in range(17)}}, "mcpServers"),
    ],
)  # fmt: skip
def test_each_bad_field_is_named(config: Any, field: str) -> None:
    with pytest.raises(McpConfigError) as raised:
        parse_config(config)
    assert raised.value.field == field
    assert raised.value.message


def test_hostile_text_is_refused_not_crashed() -> None:
    for text in (
        "\ud800",
        '{"mcpServers": {"a": {"command": "\\ud800"}}}',
        "9" * 100_000,
    ):
        with pytest.raises(McpConfigError):
            parse_config(text)
    deep = '{"mcpServers": ' + "[" * 50 + "]" * 50 + "}"
    with pytest.raises(McpConfigError):
        parse_config(deep)
