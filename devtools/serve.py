"""Start an aiohttp app on a local port, for the test servers in devtools."""

from __future__ import annotations

from aiohttp import web

STOP_WAIT = 1.0  # seconds a stop waits for requests in progress


async def serve(
    app: web.Application, host: str = "127.0.0.1", port: int = 0
) -> tuple[web.AppRunner, int]:
    """Listen on host:port (0 picks a free port); return the runner and the port."""
    # A development server stops at once: aiohttp's default waits up to 60 s
    # for a request still coming in (headers sent, body never).
    runner = web.AppRunner(
        app, access_log=None, handle_signals=False, shutdown_timeout=STOP_WAIT
    )
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1]  # noqa: SLF001
