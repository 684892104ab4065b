"""Real MCP servers, written with the official SDK, for the tests of Soul's MCP client.

- ``tools``: the test tools, registered on a FastMCP server (one definition).
- ``stdio_server``: a script serving them over stdio (plus ``crash``).
- ``http_server``: the same tools over streamable HTTP and SSE, in a subprocess.
- ``hostile_server``: a server that floods its client, over stdio or (``--http``)
  as ``http_server`` serves.
- ``fixtures``: pytest fixtures starting them (load them with
  ``pytest_plugins = ["tests.mcp_servers.fixtures"]``).
- ``processes``: the scripts' paths; which of them run as children of this process.
"""
