"""The backend used when memory is off: it remembers nothing.

``health`` fails, so the host can show memory as unavailable. Reads find
nothing, writes store nothing (a turn's memory is simply not kept),
``delete_all`` has nothing to forget, and ``delete`` fails: no id can name a
memory here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .base import MemoryBackendError, MemoryItem

MEMORY_OFF = "memory is off"


class NoMemory:
    """The ``MemoryBackend`` that keeps nothing."""

    name = "none"

    async def health(self) -> None:
        """Raise ``MemoryBackendError``: there is no memory to use."""
        raise MemoryBackendError(MEMORY_OFF)

    async def add(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        user_id: str,
        agent_id: str | None,
        metadata: Mapping[str, Any],
        infer: bool = True,
    ) -> list[str]:
        """Store nothing; no ids."""
        return []

    async def search(
        self, query: str, *, user_id: str, agent_id: str | None, limit: int = 5
    ) -> list[MemoryItem]:
        """Find nothing."""
        return []

    async def get_all(
        self, *, user_id: str, agent_id: str | None = None, limit: int = 100
    ) -> list[MemoryItem]:
        """List nothing."""
        return []

    async def delete(self, memory_id: str) -> None:
        """Fail: no memory has this id."""
        raise MemoryBackendError(f"{MEMORY_OFF}: there is no memory {memory_id!r}")

    async def delete_all(self, *, user_id: str) -> None:
        """Nothing to forget."""

    async def close(self) -> None:
        """Nothing to release."""
