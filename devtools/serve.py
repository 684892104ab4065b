"""Start an aiohttp app on a local port, for the test servers in devtools."""

from __future__ import annotations

from aiohttp import web


async def serve(
    app: web.Application, host: str = "127.0.0.1", port: int = 0
) -> tuple[web.AppRunner, int]:
    """Listen on host:port (0 picks a free port); return the runner and the port."""
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1]  # noqa: SLF001
