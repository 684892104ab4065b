"""MemoryManager and the chat pipeline's recall_memory, with an in-memory backend."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
import json
from typing import Any

import pytest

from custom_components.soul.core.memory import MemoryBackendError, MemoryItem
from custom_components.soul.core.memory.manager import ANONYMOUS_USER, MemoryManager
from devtools.fake_llm import FakeOpenAI, tool_call

from .test_chat import Env, T, llm  # noqa: F401  # fixture

T0 = 1_771_753_200.0


class ListMemory:
    """A backend keeping memories in a list; ``down`` makes every call fail."""

    name = "list"

    def __init__(self) -> None:
        self.items: list[MemoryItem] = []
        self.down = False
        self.slow = 0.0
        self.adds: list[dict[str, Any]] = []

    def _check(self) -> None:
        if self.down:
            raise MemoryBackendError("backend down")

    async def health(self) -> None:
        self._check()

    async def add(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        user_id: str,
        agent_id: str | None,
        metadata: Mapping[str, Any],
        infer: bool = True,
    ) -> list[str]:
        self._check()
        self.adds.append(
            {
                "messages": list(messages),
                "user_id": user_id,
                "infer": infer,
                "metadata": dict(metadata),
            }
        )
        ids = []
        for message in messages:
            if message["role"] == "user":
                item = MemoryItem(
                    f"m{len(self.items)}",
                    message["content"],
                    None,
                    dict(metadata),
                    user_id,
                    agent_id,
                )
                self.items.append(item)
                ids.append(item.memory_id)
        return ids

    async def search(
        self, query: str, *, user_id: str, agent_id: str | None, limit: int = 5
    ) -> list[MemoryItem]:
        import asyncio

        self._check()
        if self.slow:
            await asyncio.sleep(self.slow)
        hits = [
            i
            for i in self.items
            if i.user_id == user_id
            and agent_id in (None, i.agent_id)
            and any(ch in i.text for ch in query if not ch.isspace())
        ]
        return hits[:limit]

    async def get_all(
        self, *, user_id: str, agent_id: str | None = None, limit: int = 100
    ) -> list[MemoryItem]:
        self._check()
        return [i for i in self.items if i.user_id == user_id][:limit]

    async def delete(self, memory_id: str) -> None:
        self._check()
        self.items = [i for i in self.items if i.memory_id != memory_id]

    async def delete_all(self, *, user_id: str) -> None:
        self._check()
        self.items = [i for i in self.items if i.user_id != user_id]

    async def close(self) -> None:
        pass


def manager(backend: ListMemory, **kwargs: Any) -> MemoryManager:
    return MemoryManager(backend, clock=lambda: T0, **kwargs)


async def test_readiness_follows_the_health_check() -> None:
    backend = ListMemory()
    changes: list[bool] = []
    memory = manager(backend, on_ready_changed=changes.append)
    assert not memory.ready  # nothing is ready before a real check
    assert await memory.check()
    backend.down = True
    assert not await memory.check()
    assert memory.last_error == "backend down"
    assert changes == [True, False]


async def test_recall_timeout_and_failure_mark_not_ready() -> None:
    backend = ListMemory()
    memory = manager(backend, search_timeout=0.05)
    await memory.check()
    await memory.remember("我家猫叫咪咪", user_id="u1", soul_id="s1")
    (hit,) = await memory.recall("猫", user_id="u1", soul_id="s1")
    assert hit.text == "我家猫叫咪咪"
    assert hit.metadata["type"] == "fact"
    assert await memory.recall("猫", user_id="u2", soul_id="s1") == []
    backend.slow = 1
    with pytest.raises(MemoryBackendError, match="longer than"):
        await memory.recall("猫", user_id="u1", soul_id="s1")
    assert not memory.ready


async def test_archive_queue_survives_outages_and_restarts() -> None:
    backend = ListMemory()
    dirty: list[int] = []
    memory = manager(backend, on_dirty=lambda: dirty.append(1))
    backend.down = True
    await memory.archive_session(
        session_id="s1", terminal_id=T, soul_id="soul", user_id=None,
        summary="用户养了一只猫", turns=[{"role": "user", "content": "我家猫叫咪咪"}],
    )  # fmt: skip
    assert len(memory.queue) == 2 and dirty
    stored = json.loads(json.dumps(memory.dump()))
    # Restart while the backend is still down: the queue comes back from disk.
    again = manager(backend)
    again.load(stored)
    again.load({"queue": [{"bad": 1}]})  # garbage is dropped, not kept
    again.load(stored)
    assert len(again.queue) == 2
    backend.down = False
    assert await again.check()  # ready again: the queue is flushed
    assert again.queue == []
    summary, turns = backend.adds
    assert summary["infer"] is False and summary["metadata"]["type"] == "episode"
    assert turns["infer"] is True and turns["metadata"]["type"] == "fact"
    assert summary["user_id"] == ANONYMOUS_USER
    assert set(summary["metadata"]) == {
        "type", "tags", "timestamp", "soul_id", "terminal_id", "session_id"
    }  # fmt: skip
    assert summary["metadata"]["session_id"] == "s1"
    assert summary["metadata"]["timestamp"] == 1_771_753_200  # Unix seconds (§5.1)


async def test_forget() -> None:
    backend = ListMemory()
    memory = manager(backend)
    ids = await memory.remember("a", user_id="u1", soul_id=None)
    await memory.remember("b", user_id="u2", soul_id=None)
    await memory.forget(memory_id=ids[0])
    assert [i.text for i in backend.items] == ["b"]
    await memory.forget(user_id="u2")
    assert backend.items == []
    with pytest.raises(MemoryBackendError):
        await memory.forget()


async def test_recall_memory_in_the_chat(fake_llm: FakeOpenAI, llm: Any) -> None:  # noqa: F811
    env = Env(llm)
    env.souls.bind(T, "s1")
    backend = ListMemory()
    env.pipeline.memory = manager(backend)
    # Not ready: recall_memory is not offered.
    fake_llm.reply("我不记得了。")
    await env.say("我家的猫叫什么？")
    assert "recall_memory" not in {
        t["function"]["name"] for t in fake_llm.chat_requests[-1]["tools"]
    }
    await env.pipeline.memory.check()
    await env.pipeline.memory.remember("我家猫叫咪咪", user_id=None, soul_id="s1")
    fake_llm.reply(tool_calls=[tool_call("recall_memory", {"query": "猫的名字"})])
    fake_llm.reply(
        "你家猫叫咪咪。", tool_calls=[tool_call("set_head_motion", {"action": "点头"})]
    )
    calls_before = len(fake_llm.chat_requests)
    response = await env.say("我家的猫叫什么？")
    # §2 step 10: the recall, then one more call that answers and acts.
    assert len(fake_llm.chat_requests) - calls_before == 2
    assert response["reply"] == "你家猫叫咪咪。"
    assert response["executed_skills"] == ["recall_memory", "set_head_motion"]
    statuses = [m["status"] for m in env.body.on("status")]
    assert statuses == ["mem0_searching", "mem0_search_done"]
    assert all(m["session_id"] == "s1" for m in env.body.on("status"))
    tool_result = json.loads(fake_llm.chat_requests[-1]["messages"][-1]["content"])
    assert tool_result["memories"] == ["我家猫叫咪咪"]
    # The backend fails: mem0_search_failed, and still an answer.
    backend.down = True
    fake_llm.reply(tool_calls=[tool_call("recall_memory", {"query": "猫"})])
    fake_llm.reply("我一时想不起来。")
    response = await env.say("我家的猫叫什么？")
    assert response["reply"] == "我一时想不起来。"
    assert [m["status"] for m in env.body.on("status")][-2:] == [
        "mem0_searching",
        "mem0_search_failed",
    ]


async def test_idle_sessions_are_archived() -> None:
    env = Env(None)
    env.souls.bind(T, "s1")
    backend = ListMemory()
    env.pipeline.memory = manager(backend)
    await env.pipeline.memory.check()
    await env.say("我喜欢绿色", user_id="u1")
    env.now += 180
    await env.pipeline.summarize_idle()
    assert [a["metadata"]["type"] for a in backend.adds] == ["episode", "fact"]
    assert backend.adds[0]["user_id"] == "u1"
    assert backend.adds[0]["metadata"]["soul_id"] == "s1"
