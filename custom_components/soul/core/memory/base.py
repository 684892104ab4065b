"""The memory interface every backend implements (mem0 embedded, mem0 server, none).

Memories are scoped to a user (``user_id``) and a soul (``agent_id``) and
carry metadata (xingchen-v-protocol §5): ``type`` (``fact`` | ``episode`` |
``skill``), ``tags``, ``timestamp``, ``soul_id``, ``terminal_id``,
``session_id``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

MEMORY_TYPES = ("fact", "episode", "skill")


class MemoryBackendError(Exception):
    """The memory backend failed; the text says why (never a secret)."""


@dataclass(frozen=True, slots=True)
class MemoryItem:
    """One stored memory."""

    memory_id: str
    text: str
    score: float | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    user_id: str | None = None
    agent_id: str | None = None
    created_at: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """Return the memory for action responses and the model."""
        return {
            "id": self.memory_id,
            "memory": self.text,
            "score": self.score,
            "metadata": dict(self.metadata),
            "user_id": self.user_id,
            "agent_id": self.agent_id,
            "created_at": self.created_at,
        }


class MemoryBackend(Protocol):
    """A place to remember and recall; every method may raise ``MemoryBackendError``."""

    name: str

    async def health(self) -> None:
        """Make a real round trip; raise ``MemoryBackendError`` when unusable."""

    async def add(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        user_id: str,
        agent_id: str | None,
        metadata: Mapping[str, Any],
        infer: bool = True,
    ) -> list[str]:
        """Store memories from chat messages (``infer``: let mem0 extract facts).

        Returns the ids of the memories added or updated.
        """

    async def search(
        self, query: str, *, user_id: str, agent_id: str | None, limit: int = 5
    ) -> list[MemoryItem]:
        """Return the memories most relevant to ``query``, best first."""

    async def get_all(
        self, *, user_id: str, agent_id: str | None = None, limit: int = 100
    ) -> list[MemoryItem]:
        """Return a user's memories (optionally one soul's)."""

    async def delete(self, memory_id: str) -> None:
        """Forget one memory."""

    async def delete_all(self, *, user_id: str) -> None:
        """Forget every memory of a user."""

    async def close(self) -> None:
        """Release files, clients and threads."""
