"""Star clients: connections to ``/api/soul/star/…`` that keep reading."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
import contextlib
import json
import time
from typing import Any

import aiohttp

PERMISSION = "PERMISSION_DENIED"


class StarClient:
    """One Star connection that keeps reading (and answering heartbeats)."""

    def __init__(
        self, ws: aiohttp.ClientWebSocketResponse, party: dict[str, str]
    ) -> None:
        """Use an open socket whose identity is ``party``."""
        self.ws = ws
        self.party = party
        self.frames: list[dict[str, Any]] = []
        self.close_code: int | None = None
        self.closed_at: float | None = None
        self.changed = asyncio.Event()
        self._reader = asyncio.get_running_loop().create_task(self._read())
        self._keepalive = asyncio.get_running_loop().create_task(self._beat())

    @classmethod
    async def connect(
        cls,
        session: aiohttp.ClientSession,
        url: str,
        path: str,
        token: str,
        *,
        frame_auth: bool = False,
    ) -> StarClient:
        """Connect to ``/api/soul/star/{path}`` (header or first-frame auth).

        Raises ``aiohttp.WSServerHandshakeError`` when Home Assistant refuses
        the upgrade (its ``status`` says why).
        """
        headers = {} if frame_auth else {"Authorization": f"Bearer {token}"}
        ws = await session.ws_connect(
            f"{url}/api/soul/star/{path}",
            headers=headers,
            heartbeat=None,
            max_msg_size=8 * 1024 * 1024,
        )
        parts = path.split("/")
        if parts[0] == "human":
            party = {"id": parts[1], "type": "human"}
        elif len(parts) == 4:
            party = {"id": parts[3], "type": "agent"}
        else:
            party = {"id": parts[1], "type": "environment"}
        client = cls(ws, party)
        if frame_auth:
            await ws.send_json({"type": "auth", "access_token": token})
        return client

    async def _read(self) -> None:
        try:
            async for message in self.ws:
                if message.type is aiohttp.WSMsgType.TEXT:
                    try:
                        frame = json.loads(message.data)
                    except ValueError:
                        frame = {"unparsed": message.data[:200]}
                    frame["_at"] = time.monotonic()
                    self.frames.append(frame)
                    self.changed.set()
                    if frame.get("type") == "heartbeat" and not self.ws.closed:
                        with contextlib.suppress(ConnectionError, RuntimeError):
                            await self.send(self.heartbeat())
        except (aiohttp.ClientError, ConnectionError):
            pass
        finally:
            self.close_code = self.ws.close_code
            self.closed_at = time.monotonic()
            self.changed.set()

    async def _beat(self) -> None:
        while not self.ws.closed:
            await asyncio.sleep(20)
            with contextlib.suppress(ConnectionError, RuntimeError):
                await self.send(self.heartbeat())

    def heartbeat(self) -> dict[str, Any]:
        """Return a heartbeat envelope (a client's pong)."""
        return {
            "type": "heartbeat",
            "sender": self.party,
            "recipient": {"id": "hub", "type": "hub"},
            "payload": {},
        }

    def message(self, recipient: dict[str, str], payload: Any) -> dict[str, Any]:
        """Return a message envelope from this client."""
        return {
            "type": "message",
            "sender": self.party,
            "recipient": recipient,
            "payload": payload,
        }

    async def send(self, envelope: Any) -> None:
        """Send one frame (JSON, or a string as it is)."""
        if isinstance(envelope, str):
            await self.ws.send_str(envelope)
        else:
            await self.ws.send_str(json.dumps(envelope, ensure_ascii=False))

    @property
    def closed(self) -> bool:
        """Return whether the connection ended."""
        return self.closed_at is not None

    def errors(self, code: str | None = None) -> list[dict[str, Any]]:
        """Return the error frames received (of one ``error_code``)."""
        return [
            f
            for f in self.frames
            if f.get("type") == "error"
            and (code is None or f.get("payload", {}).get("error_code") == code)
        ]

    def messages_from(self, sender_id: str) -> list[dict[str, Any]]:
        """Return the message frames ``sender_id`` sent here."""
        return [
            f
            for f in self.frames
            if f.get("type") == "message" and f.get("sender", {}).get("id") == sender_id
        ]

    async def wait(self, predicate: Callable[[StarClient], Any], timeout: float) -> Any:
        """Wait until ``predicate(self)`` is truthy (or the connection closes)."""
        deadline = time.monotonic() + timeout
        while True:
            if value := predicate(self):
                return value
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self.closed:
                return predicate(self)
            self.changed.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(min(remaining, 0.5)):
                    await self.changed.wait()

    async def close(self) -> None:
        """Close the connection."""
        self._keepalive.cancel()
        with contextlib.suppress(Exception):
            await self.ws.close()
        with contextlib.suppress(Exception):
            async with asyncio.timeout(5):
                await self._reader


async def star_refused(
    session: aiohttp.ClientSession,
    url: str,
    path: str,
    token: str,
    *,
    frame_auth: bool = False,
) -> tuple[bool, str]:
    """Try to connect; return (refused, how) — 403, or PERMISSION_DENIED/close."""
    try:
        client = await StarClient.connect(
            session, url, path, token, frame_auth=frame_auth
        )
    except aiohttp.WSServerHandshakeError as err:
        return err.status in (401, 403), f"HTTP {err.status}"
    await client.wait(lambda c: c.closed, 5)  # refused: PERMISSION_DENIED, 1008
    denied = client.errors(PERMISSION)
    closed, code = client.closed, client.close_code
    await client.close()
    if denied or closed:
        return True, f"{'PERMISSION_DENIED, ' if denied else ''}close {code}"
    return False, "connected and stayed connected"


def outcome_of(client: StarClient, action_id: str) -> dict[str, Any] | None:
    """Return the outcome of a Star action, or None yet."""
    for frame in client.frames:
        payload = frame.get("payload")
        if (
            frame.get("type") == "message"
            and isinstance(payload, dict)
            and payload.get("type") == "outcome"
            and payload.get("id") == action_id
        ):
            return payload.get("outcome") or {"status": None}
    return None


def not_found(client: StarClient, action_id: str) -> bool:
    """Return whether the hub answered an action with RECIPIENT_NOT_FOUND."""
    return any(
        f.get("payload", {}).get("details", {}).get("original_message_id") == action_id
        for f in client.errors("RECIPIENT_NOT_FOUND")
    )
