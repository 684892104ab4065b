"""Pytest fixtures starting the test MCP servers (real servers, written with the SDK).

Load them as a plugin: ``pytest_plugins = ["tests.mcp_servers.fixtures"]`` in the
root tests/conftest.py or in a test module (pytest refuses it in a non-root
conftest.py; importing the fixtures by name works too, but ruff's F811 then
flags every test taking one).

The HTTP fixtures run the server in a subprocess (no thread is left behind) and
request ``socket_enabled``, so the test may connect to 127.0.0.1 under
pytest-socket (which pytest-homeassistant-custom-component turns on for every
test, Home Assistant's or not). Each is function-scoped: a test's ``grow`` does
not leak into another test.
"""

from __future__ import annotations

from collections.abc import Iterator
import sys

import pytest

from .http_server import HttpServer, serve_http_server
from .processes import STDIO_SERVER

HTTP_TOKEN = "soul-test-token"


@pytest.fixture
def mcp_stdio_command() -> list[str]:
    """Argv of the stdio test server (the tools, plus ``crash``); any cwd works."""
    return [sys.executable, STDIO_SERVER]


@pytest.fixture
def mcp_stdio_never_answers_command() -> list[str]:
    """Argv of a stdio server that reads its input and never answers nor exits."""
    return [sys.executable, STDIO_SERVER, "--never-answer"]


@pytest.fixture
def mcp_stdio_exit_at_start_command() -> list[str]:
    """Argv of a stdio server that exits (status 1) before serving."""
    return [sys.executable, STDIO_SERVER, "--exit-at-start"]


@pytest.fixture
def mcp_http_server(socket_enabled: None) -> Iterator[HttpServer]:
    """A test HTTP server without a token (killed and reaped at teardown)."""
    with serve_http_server() as server:
        yield server


@pytest.fixture
def mcp_http_url(mcp_http_server: HttpServer) -> str:
    """The streamable HTTP endpoint of a test server without a token."""
    return mcp_http_server.mcp_url


@pytest.fixture
def mcp_sse_url(mcp_http_server: HttpServer) -> str:
    """The SSE endpoint of a test server without a token."""
    return mcp_http_server.sse_url


@pytest.fixture
def mcp_never_answers_url(mcp_http_server: HttpServer) -> str:
    """A URL that accepts connections and requests and never answers."""
    return mcp_http_server.never_url


@pytest.fixture
def mcp_http_token() -> str:
    """The token of ``mcp_http_url_with_token``: send ``Authorization: Bearer <it>``."""
    return HTTP_TOKEN


@pytest.fixture
def mcp_http_server_with_token(
    socket_enabled: None, mcp_http_token: str
) -> Iterator[HttpServer]:
    """A test HTTP server answering 401 without ``Authorization: Bearer <token>``."""
    with serve_http_server(mcp_http_token) as server:
        yield server


@pytest.fixture
def mcp_http_url_with_token(mcp_http_server_with_token: HttpServer) -> str:
    """The streamable HTTP endpoint of a server requiring ``mcp_http_token``."""
    return mcp_http_server_with_token.mcp_url
