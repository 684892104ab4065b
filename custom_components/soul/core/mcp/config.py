"""The ``mcpServers`` configuration (XingChen-V §4.1), checked field by field.

The shape is the one desktop MCP clients use::

    {"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/share"],
                  "env": {"TOKEN": "…"}},
        "search": {"url": "https://mcp.example/mcp", "headers": {"Authorization": "Bearer …"}},
        "legacy": {"url": "http://10.0.0.5:8000/sse", "type": "sse"}}}

A server is either a child process (``command``, ``args``, ``env``; started
with an argument list, never through a shell) or a remote one (``url``,
``headers``; streamable HTTP, or SSE with ``"type": "sse"``). Every error
names its field (``mcpServers.files.args[2]: …``) so the options flow can say
exactly what to fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
import json
import re
from typing import Any, Literal
from urllib.parse import urlsplit

from .. import untrusted
from ..redaction import REDACTED, redact_url

MAX_SERVERS = 16
MAX_CONFIG_BYTES = 64 * 1024
MAX_ARGS = 64
MAX_ARG_CHARS = 4096
MAX_ENV = 64
MAX_VALUE_CHARS = 4096
# A server's name becomes the prefix of its tools' names (``<server>__<tool>``),
# which the model APIs limit to [A-Za-z0-9_-]{1,64}.
SERVER_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,23}")
ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
HEADER_NAME_RE = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}")
STDIO_KEYS = {"command", "args", "env", "type", "cwd"}
REMOTE_KEYS = {"url", "headers", "type"}
# Keys other clients write that Soul ignores on purpose.
IGNORED_KEYS = {"disabled", "autoApprove", "alwaysAllow", "description", "timeout"}

Transport = Literal["stdio", "http", "sse"]


class McpConfigError(ValueError):
    """The configuration is not usable; ``field`` says where."""

    def __init__(self, where: str, message: str) -> None:
        """Keep the field path and the message apart (the flow shows both)."""
        super().__init__(f"{where}: {message}")
        self.field = where
        self.message = message


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """One MCP server Soul may start or connect to."""

    name: str
    transport: Transport
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)

    def redacted(self) -> dict[str, Any]:
        """Return the server's configuration with its secrets (env, headers) hidden."""
        if self.transport == "stdio":
            return {
                "transport": self.transport,
                "command": self.command,
                "args": list(self.args),
                "env": dict.fromkeys(self.env, REDACTED),
            }
        return {
            "transport": self.transport,
            "url": redact_url(self.url or ""),
            "headers": dict.fromkeys(self.headers, REDACTED),
        }


def parse_config(value: Any) -> dict[str, ServerConfig]:
    """Return the servers of an ``mcpServers`` document (JSON text or data).

    An empty text or ``{}`` is no servers. Raise ``McpConfigError``.
    """
    if isinstance(value, str):
        if not value.strip():
            return {}
        try:
            value = untrusted.loads(value, max_bytes=MAX_CONFIG_BYTES, max_depth=8)
        except untrusted.UntrustedInputError as err:
            raise McpConfigError("mcpServers", f"not valid JSON: {err}") from None
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise McpConfigError("mcpServers", "must be a JSON object")
    unknown = set(value) - {"mcpServers"}
    if unknown:
        raise McpConfigError(
            sorted(map(str, unknown))[0], 'unknown key; write {"mcpServers": {…}}'
        )
    servers = value.get("mcpServers", {})
    if not isinstance(servers, Mapping):
        raise McpConfigError("mcpServers", "must be an object of named servers")
    if len(servers) > MAX_SERVERS:
        raise McpConfigError("mcpServers", f"at most {MAX_SERVERS} servers")
    parsed: dict[str, ServerConfig] = {}
    for name, raw in servers.items():
        where = f"mcpServers.{str(name)[:40]}"
        if not isinstance(name, str) or not SERVER_NAME_RE.fullmatch(name):
            raise McpConfigError(
                where,
                "a server name is 1-24 letters, digits, '-' or '_',"
                " starting with a letter or digit",
            )
        if "__" in name:
            raise McpConfigError(where, "a server name may not contain '__'")
        if name.lower() in (n.lower() for n in parsed):
            raise McpConfigError(where, "another server has this name")
        parsed[name] = _server(name, raw, where)
    return parsed


def _server(name: str, raw: Any, where: str) -> ServerConfig:
    if not isinstance(raw, Mapping):
        raise McpConfigError(where, "must be an object with a command or a url")
    kind = raw.get("type")
    if kind is not None and kind not in ("stdio", "http", "streamable-http", "sse"):
        raise McpConfigError(
            f"{where}.type", "must be stdio, http, streamable-http or sse"
        )
    if ("command" in raw) == ("url" in raw):
        raise McpConfigError(where, "needs either a command or a url (not both)")
    keys = STDIO_KEYS if "command" in raw else REMOTE_KEYS
    for key in raw:
        if key not in keys and key not in IGNORED_KEYS:
            raise McpConfigError(f"{where}.{str(key)[:40]}", "unknown key")
    if "command" in raw:
        if kind not in (None, "stdio"):
            raise McpConfigError(f"{where}.type", "a command is a stdio server")
        return ServerConfig(
            name=name,
            transport="stdio",
            command=_text(raw["command"], f"{where}.command", MAX_ARG_CHARS),
            args=_args(raw.get("args", []), f"{where}.args"),
            env=_pairs(raw.get("env", {}), f"{where}.env", ENV_NAME_RE),
            cwd=(
                None
                if raw.get("cwd") is None
                else _text(raw["cwd"], f"{where}.cwd", MAX_ARG_CHARS)
            ),
        )
    if kind == "stdio":
        raise McpConfigError(f"{where}.type", "a stdio server needs a command")
    url = _text(raw["url"], f"{where}.url", 2048)
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises for a port that is not 0-65535
    except ValueError:  # a bad IPv6 address, a port, characters NFKC changes
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise McpConfigError(f"{where}.url", "must be an http:// or https:// URL")
    return ServerConfig(
        name=name,
        transport="sse" if kind == "sse" else "http",
        url=url,
        headers=_pairs(
            raw.get("headers", {}), f"{where}.headers", HEADER_NAME_RE, ascii_only=True
        ),
    )


def _text(value: Any, where: str, limit: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise McpConfigError(where, "must be a non-empty string")
    if len(value) > limit:
        raise McpConfigError(where, f"is longer than {limit} characters")
    if "\x00" in value or untrusted.clean(value, limit) != value:
        # Control characters, and bidirectional overrides that would show a
        # command or an address as another (``untrusted.clean``).
        raise McpConfigError(where, "contains control or bidirectional characters")
    return value


def _args(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise McpConfigError(where, "must be a list of strings")
    if len(value) > MAX_ARGS:
        raise McpConfigError(where, f"at most {MAX_ARGS} arguments")
    args = []
    for index, arg in enumerate(value):
        if not isinstance(arg, str):
            raise McpConfigError(f"{where}[{index}]", "must be a string")
        if len(arg) > MAX_ARG_CHARS or "\x00" in arg:
            raise McpConfigError(
                f"{where}[{index}]", f"must be text of at most {MAX_ARG_CHARS}"
            )
        args.append(arg)
    return tuple(args)


def _pairs(
    value: Any, where: str, key_re: re.Pattern[str], *, ascii_only: bool = False
) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise McpConfigError(where, "must be an object of strings")
    if len(value) > MAX_ENV:
        raise McpConfigError(where, f"at most {MAX_ENV} entries")
    pairs = {}
    for key, item in value.items():
        if not isinstance(key, str) or not key_re.fullmatch(key):
            raise McpConfigError(f"{where}.{str(key)[:40]}", "is not a valid name")
        if not isinstance(item, str):
            raise McpConfigError(f"{where}.{key}", "must be a string")
        # One line without control characters (a tab is fine): a black-box
        # run stored a bell and a start-of-heading in them.
        try:
            untrusted.text(
                item.replace("\t", " "),
                f"{where}.{key}",
                max_length=MAX_VALUE_CHARS,
                required=False,
            )
        except untrusted.UntrustedInputError:
            raise McpConfigError(
                f"{where}.{key}",
                f"must be one line of at most {MAX_VALUE_CHARS} characters,"
                " without control characters",
            ) from None
        if ascii_only and not item.isascii():
            # An HTTP header's value: "clé" would fail in the client instead.
            raise McpConfigError(f"{where}.{key}", "must be ASCII (an HTTP header)")
        pairs[key] = item
    return pairs


def dump_config(servers: Mapping[str, ServerConfig]) -> str:
    """Return servers as the ``mcpServers`` JSON text (for the options form)."""
    return json.dumps(config_data(servers), ensure_ascii=False, indent=2)


def config_data(servers: Mapping[str, ServerConfig]) -> dict[str, Any]:
    """Return servers as the ``{"mcpServers": …}`` data ``parse_config`` reads."""
    out: dict[str, Any] = {}
    for name, server in servers.items():
        if server.transport == "stdio":
            entry: dict[str, Any] = {
                "command": server.command,
                "args": list(server.args),
            }
            if server.env:
                entry["env"] = dict(server.env)
            if server.cwd:
                entry["cwd"] = server.cwd
        else:
            entry = {"url": server.url}
            if server.transport == "sse":
                entry["type"] = "sse"
            if server.headers:
                entry["headers"] = dict(server.headers)
        out[name] = entry
    return {"mcpServers": out}
