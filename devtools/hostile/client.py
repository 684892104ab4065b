"""Home Assistant over HTTP and WebSocket, and the latency pinger."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
import contextlib
from dataclasses import dataclass
import http.client
import json
import threading
import time
from typing import Any
import urllib.parse

import aiohttp

PING_INTERVAL = 0.05


class Pinger:
    """A thread that sends ``GET /api/`` every 50 ms and keeps the latencies.

    It runs outside the harness's event loop, so the harness's own work does
    not delay the pings.
    """

    def __init__(self, url: str, token: str) -> None:
        """Ping ``url``'s ``/api/`` with ``token``."""
        parts = urllib.parse.urlsplit(url)
        self._https = parts.scheme == "https"
        self._host = parts.hostname or "localhost"
        self._port = parts.port or (443 if self._https else 80)
        self._token = token
        self._samples: list[tuple[float, float, int]] = []  # start, end, status
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pinger", daemon=True)

    def start(self) -> None:
        """Start pinging."""
        self._thread.start()

    def stop(self) -> None:
        """Stop pinging."""
        self._stop.set()
        self._thread.join(5)

    def _connection(self) -> http.client.HTTPConnection:
        if self._https:
            return http.client.HTTPSConnection(self._host, self._port, timeout=30)
        return http.client.HTTPConnection(self._host, self._port, timeout=30)

    def _run(self) -> None:
        connection: http.client.HTTPConnection | None = None
        headers = {"Authorization": f"Bearer {self._token}"}
        due = time.monotonic()
        while not self._stop.is_set():
            start = time.monotonic()
            try:
                if connection is None:
                    connection = self._connection()
                connection.request("GET", "/api/", headers=headers)
                response = connection.getresponse()
                response.read()
                status = response.status
            except (OSError, http.client.HTTPException):
                if connection is not None:
                    connection.close()
                connection = None
                status = 0
            end = time.monotonic()
            with self._lock:
                self._samples.append((start, end, status))
            due = max(due + PING_INTERVAL, end)
            self._stop.wait(max(0.0, due - time.monotonic()))

    def worst(self, since: float, until: float) -> tuple[float, int, int]:
        """Return (worst latency in ms, pings, failed pings) of ``[since, until]``.

        Waits (up to 10 s) for the ping in flight at ``until`` to finish.
        """
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with self._lock:
                if self._samples and self._samples[-1][0] >= until:
                    break
            time.sleep(0.01)
        with self._lock:
            window = [s for s in self._samples if s[1] >= since and s[0] <= until]
            window += [s for s in self._samples if s[0] > until][:1]
        if not window:
            return float("nan"), 0, 0
        worst = max(end - start for start, end, _status in window) * 1000
        failed = sum(1 for *_times, status in window if status != 200)
        return worst, len(window), failed


@dataclass
class Reply:
    """An HTTP answer."""

    status: int
    text: str
    elapsed: float

    def json(self) -> Any:
        """Return the decoded body, or None."""
        try:
            return json.loads(self.text)
        except ValueError:
            return None

    def brief(self, limit: int = 100) -> str:
        """Return status, time and the start of the body, for a report line."""
        body = " ".join(self.text.split())[:limit]
        return f"{self.status} in {self.elapsed * 1000:.0f} ms {body!r}"


class HAWebSocket:
    """Home Assistant's WebSocket API: commands, and events by subscription."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        """Use an authenticated socket (see ``connect``)."""
        self.ws = ws
        self._next = 1
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._events: dict[int, asyncio.Queue[dict[str, Any]]] = {}
        self._reader = asyncio.get_running_loop().create_task(self._read())

    @classmethod
    async def connect(
        cls, session: aiohttp.ClientSession, url: str, token: str
    ) -> HAWebSocket:
        """Open ``/api/websocket`` and authenticate with ``token``."""
        ws = await session.ws_connect(
            f"{url}/api/websocket", max_msg_size=64 * 1024 * 1024, heartbeat=None
        )
        await ws.receive_json()  # auth_required
        await ws.send_json({"type": "auth", "access_token": token})
        answer = await ws.receive_json()
        if answer.get("type") != "auth_ok":
            await ws.close()
            raise RuntimeError(f"WebSocket authentication failed: {answer}")
        return cls(ws)

    async def _read(self) -> None:
        async for message in self.ws:
            if message.type is not aiohttp.WSMsgType.TEXT:
                continue
            data = json.loads(message.data)
            for item in data if isinstance(data, list) else [data]:
                ident = item.get("id")
                if item.get("type") == "event" and ident in self._events:
                    self._events[ident].put_nowait(item["event"])
                elif (
                    future := self._waiting.pop(ident, None)
                ) is not None and not future.done():
                    future.set_result(item)
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(ConnectionError("WebSocket closed"))

    async def call(self, message_type: str, timeout: float = 60, **data: Any) -> dict:
        """Send a command; return the whole result message (``success`` etc.)."""
        ident = self._next
        self._next += 1
        future: asyncio.Future[dict[str, Any]] = (
            asyncio.get_running_loop().create_future()
        )
        self._waiting[ident] = future
        await self.ws.send_json({"id": ident, "type": message_type, **data})
        async with asyncio.timeout(timeout):
            return await future

    async def result(self, message_type: str, **data: Any) -> Any:
        """Send a command; return its result or raise."""
        answer = await self.call(message_type, **data)
        if not answer.get("success"):
            raise RuntimeError(f"{message_type} failed: {answer.get('error')}")
        return answer.get("result")

    async def subscribe(self, event_type: str) -> asyncio.Queue[dict[str, Any]]:
        """Subscribe to an event type; return the queue its events arrive in."""
        ident = self._next
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._events[ident] = queue
        await self.result("subscribe_events", event_type=event_type)
        return queue

    async def close(self) -> None:
        """Close the socket."""
        await self.ws.close()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader


class HA:
    """Home Assistant's HTTP API for the three users."""

    def __init__(self, session: aiohttp.ClientSession, url: str) -> None:
        """Talk to ``url``."""
        self.session = session
        self.url = url.rstrip("/")

    async def request(
        self,
        method: str,
        path: str,
        token: str | None,
        *,
        body: Any = None,
        raw: bytes | None = None,
        chunked: bool = False,
        timeout: float = 60,
    ) -> Reply:
        """Send a request; JSON ``body`` or ``raw`` bytes (``chunked``: no length)."""
        headers = {"Content-Type": "application/json"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        data: Any = None
        if raw is not None:
            data = raw
            if chunked:

                async def chunks(payload: bytes = raw) -> AsyncIterator[bytes]:
                    for start in range(0, len(payload), 64 * 1024):
                        yield payload[start : start + 64 * 1024]

                data = chunks()
        elif body is not None:
            data = json.dumps(body, ensure_ascii=False).encode()
        started = time.monotonic()
        async with self.session.request(
            method,
            f"{self.url}{path}",
            data=data,
            headers=headers,
            timeout=aiohttp.ClientTimeout(total=timeout),
        ) as response:
            text = await response.text(errors="replace")
        return Reply(response.status, text, time.monotonic() - started)

    async def ws(self, token: str) -> HAWebSocket:
        """Return an authenticated WebSocket API connection."""
        return await HAWebSocket.connect(self.session, self.url, token)
