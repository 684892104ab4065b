"""The backend used when memory is off."""

from __future__ import annotations

import pytest

from custom_components.soul.core.memory import MemoryBackendError
from custom_components.soul.core.memory.none import NoMemory


async def test_no_memory_keeps_nothing() -> None:
    memory = NoMemory()
    assert memory.name == "none"
    with pytest.raises(MemoryBackendError, match=r"^memory is off$"):
        await memory.health()
    chat = [{"role": "user", "content": "I like tea"}]
    assert await memory.add(chat, user_id="alice", agent_id=None, metadata={}) == []
    assert await memory.search("tea", user_id="alice", agent_id=None) == []
    assert await memory.get_all(user_id="alice", agent_id="soul-a") == []
    with pytest.raises(MemoryBackendError, match="memory is off"):
        await memory.delete("42")
    await memory.delete_all(user_id="alice")
    await memory.close()
