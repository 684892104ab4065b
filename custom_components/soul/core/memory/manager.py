"""What Soul does with a memory backend: readiness, recall, archival with a retry queue.

``MemoryManager`` wraps one ``MemoryBackend``:

- **Readiness** comes only from a real health check (``check()``); the chat
  pipeline offers ``recall_memory`` only while ready (§2 step 11).
- **Recall** is bounded by ``search_timeout``; a failure or timeout raises
  ``MemoryBackendError`` and marks the backend not ready until the next check.
- **Archival** of idle sessions (§2 step 12) goes through a queue that the
  glue stores on disk (``dump``/``load``); entries leave it only once the
  backend accepted them, so nothing is lost while it is down.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .. import stored
from ..logs import trace_logger
from ..session import MAX_TURNS, stored_turn
from .base import MemoryBackend, MemoryBackendError, MemoryItem

_LOGGER = trace_logger(__name__)

DEFAULT_SEARCH_TIMEOUT = 5.0
DEFAULT_LIMIT = 5
MAX_QUEUE = 500
ANONYMOUS_USER = "default_user"

MemoryListener = Callable[[str, Mapping[str, Any]], None]


class MemoryManager:
    """Readiness, recall, remember, forget and the archive queue of one backend."""

    def __init__(
        self,
        backend: MemoryBackend,
        *,
        clock: Callable[[], float],
        search_timeout: float = DEFAULT_SEARCH_TIMEOUT,
        on_dirty: Callable[[], None] = lambda: None,
        on_ready_changed: Callable[[bool], None] = lambda _ready: None,
    ) -> None:
        """Manage ``backend``; ``on_dirty`` is called when the queue changed."""
        self.backend = backend
        self._clock = clock
        self.search_timeout = search_timeout
        self._on_dirty = on_dirty
        self._on_ready_changed = on_ready_changed
        self.ready = False
        self.last_error: str | None = None
        self.queue: list[dict[str, Any]] = []
        self._flush_lock = asyncio.Lock()
        self.archived = 0
        self._listeners: list[MemoryListener] = []
        self._told_error: str | None = None

    # -- readiness ------------------------------------------------------------------

    def listen(self, listener: MemoryListener) -> Callable[[], None]:
        """Call ``listener(what, details)`` on what happens to memory; return the unlistener.

        ``what``: ``failing`` (the backend stopped answering, ``error``),
        ``ready`` (it answers again), ``archived`` (one queued entry stored:
        ``soul_id``, ``session_id``, ``user_id``, ``type``), ``dropped`` (the
        queue was full; the same ids).
        """
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def _tell(self, what: str, **details: Any) -> None:
        for listener in list(self._listeners):
            listener(what, details)

    def _set_ready(self, ready: bool, error: str | None = None) -> None:
        self.last_error = error
        if ready != self.ready:
            self.ready = ready
            self._on_ready_changed(ready)
            if ready:
                self._tell("ready")
        if not ready and error is not None and error != self._told_error:
            self._tell("failing", error=error[:200])
        self._told_error = None if ready else error

    async def check(self) -> bool:
        """Run the backend's health check; on success flush the archive queue."""
        try:
            await self.backend.health()
        except MemoryBackendError as err:
            self._set_ready(False, str(err))
            return False
        self._set_ready(True)
        await self.flush()
        return True

    # -- recall / remember / forget ---------------------------------------------------

    async def recall(
        self,
        query: str,
        *,
        user_id: str | None,
        soul_id: str | None,
        limit: int = DEFAULT_LIMIT,
    ) -> list[MemoryItem]:
        """Search the user's memories with this soul; raise ``MemoryBackendError``."""
        try:
            async with asyncio.timeout(self.search_timeout):
                return await self.backend.search(
                    query,
                    user_id=user_id or ANONYMOUS_USER,
                    agent_id=soul_id,
                    limit=limit,
                )
        except TimeoutError as err:
            self._set_ready(False, "search timed out")
            raise MemoryBackendError(
                f"memory search took longer than {self.search_timeout} s"
            ) from err
        except MemoryBackendError as err:
            self._set_ready(False, str(err))
            raise

    async def remember(
        self,
        text: str,
        *,
        user_id: str | None,
        soul_id: str | None,
        memory_type: str = "fact",
        tags: Sequence[str] = (),
        infer: bool = True,
    ) -> list[str]:
        """Store one text now (the ``soul.remember`` action)."""
        return await self.backend.add(
            [{"role": "user", "content": text}],
            user_id=user_id or ANONYMOUS_USER,
            agent_id=soul_id,
            metadata=self._metadata(memory_type, tags, soul_id, None, None),
            infer=infer,
        )

    async def forget(
        self, *, user_id: str | None = None, memory_id: str | None = None
    ) -> None:
        """Forget one memory, or every memory of a user."""
        if memory_id:
            await self.backend.delete(memory_id)
        elif user_id:
            await self.backend.delete_all(user_id=user_id)
        else:
            raise MemoryBackendError("name a user_id or a memory_id")

    def _metadata(
        self,
        memory_type: str,
        tags: Sequence[str],
        soul_id: str | None,
        terminal_id: str | None,
        session_id: str | None,
    ) -> dict[str, Any]:
        return {
            "type": memory_type,
            "tags": list(tags),
            "timestamp": int(self._clock()),  # §5.1: Unix seconds
            "soul_id": soul_id,
            "terminal_id": terminal_id,
            "session_id": session_id,
        }

    # -- archival -----------------------------------------------------------------------

    async def archive_session(
        self,
        *,
        session_id: str,
        terminal_id: str,
        soul_id: str,
        user_id: str | None,
        summary: str,
        turns: Sequence[Mapping[str, str]],
    ) -> None:
        """Queue a summarised session (summary as an episode, turns for facts), then flush."""
        user = user_id or ANONYMOUS_USER
        if summary:
            self._enqueue(
                {
                    "messages": [{"role": "user", "content": summary}],
                    "user_id": user,
                    "agent_id": soul_id,
                    "infer": False,
                    "metadata": self._metadata(
                        "episode", ["session_summary"], soul_id, terminal_id, session_id
                    ),
                }
            )
        if turns:
            self._enqueue(
                {
                    "messages": [dict(t) for t in turns],
                    "user_id": user,
                    "agent_id": soul_id,
                    "infer": True,
                    "metadata": self._metadata(
                        "fact", ["conversation"], soul_id, terminal_id, session_id
                    ),
                }
            )
        await self.flush()

    def _enqueue(self, entry: dict[str, Any]) -> None:
        self.queue.append(entry)
        if len(self.queue) > MAX_QUEUE:
            dropped = self.queue.pop(0)
            self._tell(
                "dropped",
                soul_id=dropped.get("agent_id"),
                session_id=dropped["metadata"].get("session_id"),
                user_id=dropped.get("user_id"),
            )
            _LOGGER.warning(
                "Memory archive queue full; dropped the oldest entry (session %s)",
                dropped["metadata"].get("session_id"),
            )
        self._on_dirty()

    async def flush(self) -> int:
        """Send queued archives in order; stop at the first failure (kept for later)."""
        sent = 0
        async with self._flush_lock:
            while self.queue:
                entry = self.queue[0]
                try:
                    await self.backend.add(
                        entry["messages"],
                        user_id=entry["user_id"],
                        agent_id=entry.get("agent_id"),
                        metadata=entry["metadata"],
                        infer=entry.get("infer", True),
                    )
                except MemoryBackendError as err:
                    _LOGGER.info("Memory archive deferred: %s", err)
                    self._set_ready(False, str(err))
                    break
                self.queue.pop(0)
                sent += 1
                self.archived += 1
                self._on_dirty()
                self._tell(
                    "archived",
                    soul_id=entry.get("agent_id"),
                    session_id=entry["metadata"].get("session_id"),
                    user_id=entry.get("user_id"),
                    type=entry["metadata"].get("type"),
                )
        return sent

    def load(self, data: Any) -> None:
        """Take a stored queue (``dump()``'s); malformed entries are dropped."""
        if not isinstance(data, dict) or not isinstance(data.get("queue"), list):
            return
        self.queue = [
            entry
            for raw in data["queue"][-MAX_QUEUE:]
            if (entry := _stored_entry(raw, self._clock())) is not None
        ]

    def dump(self) -> dict[str, Any]:
        """Return the queue for storage."""
        return {"queue": list(self.queue)}


_MEMORY_TYPES = ("episode", "fact")
_METADATA_IDS = ("soul_id", "terminal_id", "session_id")
MAX_TAGS = 8


def _stored_entry(raw: Any, now: float) -> dict[str, Any] | None:
    """Return a stored queue entry as ``archive_session`` makes one, or None.

    Rebuilt from what it may hold (``core.stored``): an entry whose message
    was not an object made every later archive fail, and stayed first in
    the queue for good (a fuzz of the stores, 2026-11-29).
    """
    if not isinstance(raw, dict):
        return None
    messages = raw.get("messages")
    metadata = raw.get("metadata")
    user_id = stored.ident(raw.get("user_id"))
    agent_id = raw.get("agent_id")
    if (
        not isinstance(messages, list)
        or not 0 < len(messages) <= MAX_TURNS
        or not isinstance(metadata, dict)
        or user_id is None
        or (agent_id is not None and stored.ident(agent_id) is None)
        or metadata.get("type") not in _MEMORY_TYPES
    ):
        return None
    kept = [stored_turn(message) for message in messages]
    if None in kept:
        return None
    tags = metadata.get("tags")
    ids = {key: metadata.get(key) for key in _METADATA_IDS}
    if any(
        v is not None
        and stored.ident(v) is None
        and not (key == "terminal_id" and v == "")  # a session without a body
        for key, v in ids.items()
    ):
        return None
    return {
        "messages": kept,  # every one read
        "user_id": user_id,
        "agent_id": agent_id,
        "infer": raw.get("infer") is not False,
        "metadata": {
            "type": metadata["type"],
            "tags": [t for t in tags[:MAX_TAGS] if stored.ident(t, 64) is not None]
            if isinstance(tags, list)
            else [],
            "timestamp": int(stored.seconds(metadata.get("timestamp"), now)),
            **ids,
        },
    }
