"""mem0 in process: the real mem0 with local Qdrant, against the fake LLM over HTTP."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Generator
import json
import os
from pathlib import Path
import sys
import threading
import time

import pytest

from custom_components.soul.core.http_limits import AnswerRefusedError
from custom_components.soul.core.llm import MAX_COMPLETION_BYTES
from custom_components.soul.core.memory import MemoryBackendError
from custom_components.soul.core.memory.mem0_embedded import EmbeddedMem0
from devtools.fake_llm import FakeOpenAI, mem0_responder

from . import ALICE_META, EMBEDDING_DIMS, make_config

# mem0 is imported by the backend only: importing it before the backend sets
# MEM0_DIR and MEM0_TELEMETRY would write ~/.mem0 and switch telemetry on.
pytestmark = pytest.mark.usefixtures("mem0_installed")

ROOT = Path(__file__).resolve().parents[3]
TEA = [{"role": "user", "content": "I like green tea. I live in Paris."}]


def names_in(directory: str | Path) -> set[str]:
    """Return the names in ``directory``."""
    return {p.name for p in Path(directory).iterdir()}


@pytest.fixture(autouse=True)
def fake_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Generator[Path]:
    """Point HOME at an empty directory; nothing may appear in it."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    yield home
    assert list(home.iterdir()) == []


@pytest.fixture
def llm(fake_llm: FakeOpenAI) -> FakeOpenAI:
    """The fake LLM, answering mem0's extraction prompt."""
    fake_llm.responders.append(mem0_responder)
    return fake_llm


@pytest.fixture
async def memory(tmp_path: Path, llm: FakeOpenAI) -> AsyncGenerator[EmbeddedMem0]:
    """An embedded mem0 in ``tmp_path/memory``, closed after the test."""
    backend = EmbeddedMem0(make_config(tmp_path / "memory", llm), asyncio.to_thread)
    yield backend
    await backend.close()


async def test_add_then_search_is_scoped(memory: EmbeddedMem0, llm: FakeOpenAI) -> None:
    """mem0 extracts one memory per clause; search finds it only in its scope."""
    ids = await memory.add(TEA, user_id="alice", agent_id="soul-a", metadata=ALICE_META)
    assert len(ids) == 2

    found = await memory.search("green tea", user_id="alice", agent_id=None)
    assert [m.text for m in found][:1] == ["I like green tea"]
    best = found[0]
    assert best.memory_id in ids
    assert best.score is not None
    assert best.score > 0.5
    assert (best.user_id, best.agent_id) == ("alice", "soul-a")
    assert best.created_at

    assert await memory.search("green tea", user_id="bob", agent_id=None) == []
    assert await memory.search("green tea", user_id="alice", agent_id="soul-b") == []
    in_soul = await memory.search("green tea", user_id="alice", agent_id="soul-a")
    assert [m.memory_id for m in in_soul] == [best.memory_id]

    # One extraction call, asking for JSON, carrying the user's words.
    (extraction,) = llm.chat_requests
    assert extraction["response_format"] == {"type": "json_object"}
    assert "I like green tea" in extraction["messages"][-1]["content"]


async def test_search_ranks_by_meaning_and_limits(memory: EmbeddedMem0) -> None:
    """The closest memory comes first; ``limit`` caps the answer; CJK works."""
    chat = [{"role": "user", "content": "我喜欢喝绿茶。我住在上海。我养了一只猫。"}]
    await memory.add(chat, user_id="alice", agent_id=None, metadata={})
    found = await memory.search("你住在哪里", user_id="alice", agent_id=None)
    assert found[0].text == "我住在上海"
    assert len(await memory.search("我", user_id="alice", agent_id=None, limit=1)) == 1


async def test_metadata_round_trip(memory: EmbeddedMem0) -> None:
    """Soul's metadata comes back unchanged from search and get_all, with and without inference."""
    await memory.add(TEA[:1], user_id="alice", agent_id="soul-a", metadata=ALICE_META)
    episode = ALICE_META | {"type": "episode", "tags": []}
    raw = [{"role": "user", "content": "Yesterday we talked about the weather"}]
    (raw_id,) = await memory.add(
        raw, user_id="alice", agent_id="soul-a", metadata=episode, infer=False
    )
    listed = {m.text: m for m in await memory.get_all(user_id="alice")}
    assert set(listed) == {
        "I like green tea",
        "I live in Paris",
        "Yesterday we talked about the weather",
    }
    assert listed["I like green tea"].metadata == ALICE_META
    assert listed["Yesterday we talked about the weather"].metadata == episode
    assert listed["Yesterday we talked about the weather"].memory_id == raw_id
    (hit,) = await memory.search("weather", user_id="alice", agent_id="soul-a")
    assert hit.metadata == episode
    assert hit.as_dict()["metadata"] == episode


async def test_same_fact_twice_is_stored_once(memory: EmbeddedMem0) -> None:
    await memory.add(TEA, user_id="alice", agent_id=None, metadata={})
    assert await memory.add(TEA, user_id="alice", agent_id=None, metadata={}) == []
    assert len(await memory.get_all(user_id="alice")) == 2


async def test_get_all_delete_and_delete_all(memory: EmbeddedMem0) -> None:
    """Listing is per user and soul; deleting one or all leaves others alone."""
    await memory.add(TEA, user_id="alice", agent_id="soul-a", metadata={})
    chat = [{"role": "user", "content": "I play the cello"}]
    await memory.add(chat, user_id="alice", agent_id="soul-b", metadata={})
    await memory.add(chat, user_id="bob", agent_id="soul-a", metadata={})

    assert len(await memory.get_all(user_id="alice")) == 3
    assert len(await memory.get_all(user_id="alice", limit=2)) == 2
    soul_b = await memory.get_all(user_id="alice", agent_id="soul-b")
    assert [m.text for m in soul_b] == ["I play the cello"]
    assert soul_b[0].score is None

    await memory.delete(soul_b[0].memory_id)
    assert await memory.get_all(user_id="alice", agent_id="soul-b") == []
    with pytest.raises(MemoryBackendError, match="delete failed"):
        await memory.delete(soul_b[0].memory_id)

    await memory.delete_all(user_id="alice")
    assert await memory.get_all(user_id="alice") == []
    assert [m.text for m in await memory.get_all(user_id="bob")] == ["I play the cello"]


async def test_health(memory: EmbeddedMem0, llm: FakeOpenAI) -> None:
    """Health embeds a probe at the configured width through the endpoint."""
    await memory.health()
    probe = llm.requests[-1]
    assert probe["path"] == "/v1/embeddings"
    assert probe["body"]["dimensions"] == EMBEDDING_DIMS


async def test_llm_down(memory: EmbeddedMem0, llm: FakeOpenAI) -> None:
    """With the endpoint gone every call fails with a short MemoryBackendError."""
    await memory.health()
    await llm.close()
    for call in (
        memory.health(),
        memory.search("tea", user_id="alice", agent_id=None),
        memory.add(TEA, user_id="alice", agent_id=None, metadata={}),
    ):
        with pytest.raises(MemoryBackendError, match="cannot reach the LLM endpoint"):
            await call


async def test_wrong_key_is_reported_without_the_key(
    tmp_path: Path, llm: FakeOpenAI
) -> None:
    llm.api_key = "sk-right"
    config = make_config(tmp_path / "m", llm, llm_api_key="sk-wrong-secret")
    assert "sk-wrong-secret" not in repr(config)
    backend = EmbeddedMem0(config, asyncio.to_thread)
    try:
        with pytest.raises(MemoryBackendError, match="refused the API key") as err:
            await backend.health()
        assert "sk-wrong" not in str(err.value)
        assert "sk-wrong" not in repr(backend)
    finally:
        await backend.close()


async def test_llm_errors_on_add_are_wrapped(
    tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    """A failing extraction (here HTTP 503) is a MemoryBackendError, not mem0's own."""
    backend = EmbeddedMem0(make_config(tmp_path / "m", fake_llm), asyncio.to_thread)
    fake_llm.fail(503, "overloaded")
    try:
        with pytest.raises(MemoryBackendError, match="mem0 add failed") as err:
            await backend.add(TEA, user_id="alice", agent_id=None, metadata={})
        assert "answered HTTP 503" in str(err.value)
        assert err.value.__cause__ is not None
        with pytest.raises(MemoryBackendError, match="user_id"):
            await backend.get_all(user_id="two words")
    finally:
        await backend.close()


async def test_an_endpoint_s_huge_answer_is_refused_while_read(
    tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    """mem0's own openai client read any answer whole and parsed it.

    In a thread, holding the GIL; its answers are now bounded as the chat
    model's are (``http_limits``).
    """
    backend = EmbeddedMem0(make_config(tmp_path / "m", fake_llm), asyncio.to_thread)
    huge = json.dumps({"error": {"message": "x" * (MAX_COMPLETION_BYTES + 10)}})
    fake_llm.raw(huge, content_type="application/json")
    try:
        with pytest.raises(MemoryBackendError, match="mem0 add failed") as err:
            await backend.add(TEA, user_id="alice", agent_id=None, metadata={})
        assert "x" * 100 not in str(err.value)
        assert isinstance(_root(err.value), AnswerRefusedError)
    finally:
        await backend.close()


def _root(err: BaseException) -> BaseException:
    while err.__cause__ is not None or err.__context__ is not None:
        err = err.__cause__ or err.__context__  # type: ignore[assignment]
    return err


async def test_data_survives_restart_and_the_lock_is_released(
    tmp_path: Path, llm: FakeOpenAI
) -> None:
    """Local Qdrant locks its directory until close(); a new instance then sees the data."""
    config = make_config(tmp_path / "m", llm)
    first = EmbeddedMem0(config, asyncio.to_thread)
    second = EmbeddedMem0(config, asyncio.to_thread)
    try:
        await first.add(TEA, user_id="alice", agent_id="soul-a", metadata=ALICE_META)
        with pytest.raises(MemoryBackendError, match="already accessed"):
            await second.health()
        await first.close()
        with pytest.raises(MemoryBackendError, match="closed"):
            await first.search("tea", user_id="alice", agent_id=None)
        found = await second.search("green tea", user_id="alice", agent_id=None)
        assert found[0].text == "I like green tea"
        assert found[0].metadata == ALICE_META
    finally:
        await first.close()
        await second.close()


async def test_cancelled_call_still_blocks_the_next(memory: EmbeddedMem0) -> None:
    """Local Qdrant is not thread-safe: a cancelled caller's job finishes first."""
    await memory.health()
    events: list[str] = []
    started = threading.Event()

    def slow(_: object) -> None:
        events.append("start")
        started.set()
        time.sleep(0.2)
        events.append("end")

    task = asyncio.create_task(memory.run("slow", slow))
    await asyncio.to_thread(started.wait, 5)
    task.cancel()
    await memory.run("next", lambda _: events.append("next"))
    assert events == ["start", "end", "next"]
    assert task.cancelled()


async def test_files_stay_in_data_dir(memory: EmbeddedMem0, tmp_path: Path) -> None:
    """Vector store and history live under data_dir; telemetry is off.

    mem0's own config.json goes to the MEM0_DIR of the first backend of the
    process (test_fresh_process_writes_nothing_home checks it).
    """
    await memory.add(TEA, user_id="alice", agent_id=None, metadata={})
    assert {"qdrant", "history.db"} <= names_in(memory.config.data_dir)
    assert os.environ["MEM0_TELEMETRY"] == "False"
    assert Path(os.environ["MEM0_DIR"]).name == "mem0"
    assert not [t for t in threading.enumerate() if "posthog" in repr(t).lower()]


FRESH_PROCESS = """
import asyncio, json, os, sys, threading, types
# The core alone: skip the integration's __init__ (and Home Assistant).
for name in ("custom_components", "custom_components.soul"):
    package = types.ModuleType(name)
    package.__path__ = [os.path.join(sys.argv[1], *name.split("."))]
    sys.modules[name] = package
from custom_components.soul.core.memory.mem0_embedded import EmbeddedMem0, EmbeddedMem0Config

async def main():
    config = EmbeddedMem0Config(
        data_dir=sys.argv[3], llm_base_url=sys.argv[2], llm_model="m",
        llm_api_key="", embedding_model="e", embedding_dims=16, max_retries=0,
    )
    backend = EmbeddedMem0(config, asyncio.to_thread)
    assert "mem0" not in sys.modules
    await backend.add([{"role": "user", "content": "I like tea"}],
                      user_id="alice", agent_id=None, metadata={})
    found = await backend.search("tea", user_id="alice", agent_id=None)
    await backend.close()
    await asyncio.get_running_loop().shutdown_default_executor()
    from mem0.memory import telemetry
    print(json.dumps({
        "homeassistant": "homeassistant" in sys.modules,
        "found": [m.text for m in found],
        "telemetry": telemetry.MEM0_TELEMETRY,
        "threads": sorted(t.name for t in threading.enumerate()),
    }))

asyncio.run(main())
"""


async def test_fresh_process_writes_nothing_home(
    tmp_path: Path, fake_home: Path, llm: FakeOpenAI
) -> None:
    """The first import of mem0 happens with MEM0_DIR and telemetry settled.

    Runs in a new interpreter: in this one another test may have imported mem0.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEM0_")}
    data_dir = tmp_path / "fresh"
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        FRESH_PROCESS,
        str(ROOT),
        llm.base_url,
        str(data_dir),
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(child.communicate(), 60)
    assert child.returncode == 0, err.decode()
    report = json.loads(out.decode().splitlines()[-1])
    assert report["found"] == ["I like tea"]
    assert report["telemetry"] is False
    assert report["homeassistant"] is False
    assert not [t for t in report["threads"] if t != "MainThread"]
    assert json.loads((data_dir / "mem0" / "config.json").read_text())["user_id"]
    # fake_home checks that HOME stayed empty.
