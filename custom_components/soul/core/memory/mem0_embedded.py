"""mem0 in the Home Assistant process: local Qdrant on disk, an OpenAI-compatible LLM.

mem0's ``Memory`` is synchronous and does file, SQLite and HTTP work, so it is
built, and every call is made, through the ``executor`` the host gives
(Home Assistant's ``hass.async_add_executor_job``), one call at a time: the
local Qdrant client is not thread-safe.

mem0 reads two environment variables once, when it is first imported, so this
module imports it lazily, inside the executor, after setting them:

- ``MEM0_DIR``: where mem0 keeps its own ``config.json`` (an anonymous id);
  otherwise ``~/.mem0``. It is set to ``<data_dir>/mem0`` of the first backend.
- ``MEM0_TELEMETRY=False``: otherwise mem0 sends usage events to PostHog from
  a background thread and fetches notice texts from GitHub.

Importing this module does not import mem0; ``mem0_available()`` says whether
it is installed (it is optional, installed on demand: see ``memory.py``) and
``import_mem0()`` imports it, which proves its dependencies are there.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
import importlib.util
import os
from pathlib import Path
import sys
import threading
from typing import Any, Protocol, TypeVar

import httpx

from .. import untrusted
from ..http_limits import LimitedSyncTransport
from ..llm import MAX_COMPLETION_BYTES, NO_API_KEY
from .base import MemoryBackendError, MemoryItem

T = TypeVar("T")


class Executor(Protocol):
    """Runs a blocking job off the event loop (``hass.async_add_executor_job``)."""

    def __call__(self, job: Callable[[], T], /) -> Awaitable[T]:
        """Return what ``job()`` returns, run in a worker thread."""


HEALTH_PROBE = "Soul memory health check"
# Events whose ids mem0 returns for stored memories (older releases also
# report NONE and DELETE).
STORED_EVENTS = frozenset({"ADD", "UPDATE"})
_MAX_DETAIL = 200
# The mem0 modules of the providers ``EmbeddedMem0Config.mem0_config`` names
# (qdrant-client, openai).
MEM0_PROVIDERS = (
    "mem0.vector_stores.qdrant",
    "mem0.llms.openai",
    "mem0.embeddings.openai",
)


def mem0_available() -> bool:
    """Return whether the ``mem0ai`` package is installed (without importing it).

    Looks at the import path again, so a package installed at run time counts.
    """
    importlib.invalidate_caches()
    return importlib.util.find_spec("mem0") is not None


@dataclass(frozen=True, slots=True)
class EmbeddedMem0Config:
    """Where mem0 keeps its files and which OpenAI-compatible endpoint it uses.

    The same endpoint serves the fact-extraction model (``llm_model``) and the
    embeddings (``embedding_model``, ``embedding_dims`` wide).
    """

    data_dir: str
    llm_base_url: str
    llm_model: str
    llm_api_key: str = field(repr=False)
    embedding_model: str
    embedding_dims: int
    collection: str = "soul"
    # Per HTTP request to the endpoint; the openai client's own default is 600 s.
    request_timeout: float = 60.0
    max_retries: int = 1

    @property
    def vector_path(self) -> str:
        """The local Qdrant storage directory."""
        return str(Path(self.data_dir) / "qdrant")

    @property
    def history_db_path(self) -> str:
        """mem0's SQLite history of memory changes."""
        return str(Path(self.data_dir) / "history.db")

    @property
    def mem0_dir(self) -> str:
        """What ``MEM0_DIR`` points to (mem0's own config.json)."""
        return str(Path(self.data_dir) / "mem0")

    def mem0_config(self) -> dict[str, Any]:
        """Return the configuration for ``mem0.Memory.from_config``."""
        api_key = self.llm_api_key or NO_API_KEY
        return {
            "vector_store": {
                "provider": "qdrant",
                "config": {
                    "collection_name": self.collection,
                    "embedding_model_dims": self.embedding_dims,
                    "path": self.vector_path,
                    "on_disk": True,
                },
            },
            "llm": {
                "provider": "openai",
                "config": {
                    "model": self.llm_model,
                    "api_key": api_key,
                    "openai_base_url": self.llm_base_url,
                    "temperature": 0.1,
                },
            },
            "embedder": {
                "provider": "openai",
                "config": {
                    "model": self.embedding_model,
                    "api_key": api_key,
                    "openai_base_url": self.llm_base_url,
                    "embedding_dims": self.embedding_dims,
                },
            },
            "history_db_path": self.history_db_path,
        }


def import_mem0(mem0_dir: str) -> Any:
    """Import mem0 with its home directory and telemetry settled; return ``Memory``.

    Also imports the providers ``mem0_config`` chooses, so every dependency
    the backend uses is loaded. Runs in the executor: the first import reads
    and writes files. Raises ``ImportError`` when mem0 or a module it needs is
    missing (mem0ai is installed without its dependencies: see ``memory.py``).
    """
    if "mem0" not in sys.modules:
        Path(mem0_dir).mkdir(parents=True, exist_ok=True)
        os.environ["MEM0_DIR"] = mem0_dir
        os.environ["MEM0_TELEMETRY"] = "False"
    from mem0 import Memory  # noqa: PLC0415
    from mem0.memory import main as mem0_main, telemetry  # noqa: PLC0415

    for provider in MEM0_PROVIDERS:
        importlib.import_module(provider)

    # Imported earlier by someone else with telemetry on: switch it off anyway.
    if telemetry.MEM0_TELEMETRY or getattr(mem0_main, "MEM0_TELEMETRY", False):
        telemetry.MEM0_TELEMETRY = False
        mem0_main.MEM0_TELEMETRY = False
        telemetry.client_telemetry.close()
    return Memory


def _describe_openai(err: BaseException) -> str | None:
    """Describe an ``openai`` error (its texts can quote the key and whole bodies)."""
    if type(err).__module__.split(".")[0] != "openai":
        return None
    name = type(err).__name__
    if name in ("AuthenticationError", "PermissionDeniedError"):
        return "the LLM endpoint refused the API key"
    if name == "APITimeoutError":
        return "the LLM endpoint timed out"
    if name == "APIConnectionError":
        return "cannot reach the LLM endpoint"
    status = getattr(err, "status_code", None)
    return f"the LLM endpoint answered HTTP {status}" if status is not None else None


def describe_error(err: BaseException, secret: str = "") -> str:
    """Return a short description of ``err`` without ``secret`` in it.

    An ``openai`` error, raised or wrapped by mem0 (``LLMError``), is described
    by what went wrong with the endpoint; anything else by its own text.
    """
    cause: BaseException | None = err
    for _ in range(4):
        if cause is None:
            break
        if (described := _describe_openai(cause)) is not None:
            return described
        cause = cause.__cause__ or cause.__context__
    name = type(err).__name__
    text = str(err) or name
    if secret and secret != NO_API_KEY:
        text = text.replace(secret, "***")
    text = untrusted.shortened(" ".join(text.split()), _MAX_DETAIL)
    return f"{name}: {text}"


def item_from_mem0(raw: Any) -> MemoryItem:
    """Return a ``MemoryItem`` for one of mem0's result dicts."""
    if not isinstance(raw, Mapping) or raw.get("id") is None:
        raise MemoryBackendError("mem0 returned a memory without an id")
    score = raw.get("score")
    metadata = raw.get("metadata")
    created = raw.get("created_at")
    user_id, agent_id = raw.get("user_id"), raw.get("agent_id")
    return MemoryItem(
        memory_id=str(raw["id"]),
        text=str(raw.get("memory") or ""),
        score=float(score) if isinstance(score, int | float) else None,
        metadata=dict(metadata) if isinstance(metadata, Mapping) else {},
        user_id=str(user_id) if user_id is not None else None,
        agent_id=str(agent_id) if agent_id is not None else None,
        created_at=str(created) if created is not None else None,
    )


def results_from_mem0(payload: Any) -> list[Any]:
    """Return the result list of a mem0 answer: ``{"results": [...]}`` or a bare list."""
    results = payload.get("results") if isinstance(payload, Mapping) else payload
    if not isinstance(results, list):
        raise MemoryBackendError("mem0 returned no result list")
    return results


def items_from_mem0(payload: Any, limit: int | None = None) -> list[MemoryItem]:
    """Return the memories of a mem0 search or listing, at most ``limit``."""
    return [item_from_mem0(raw) for raw in results_from_mem0(payload)[:limit]]


def stored_ids(payload: Any) -> list[str]:
    """Return the ids of the memories a mem0 ``add`` stored or updated."""
    ids = []
    for raw in results_from_mem0(payload):
        if not isinstance(raw, Mapping) or raw.get("id") is None:
            raise MemoryBackendError("mem0 returned a memory without an id")
        if raw.get("event", "ADD") in STORED_EVENTS:
            ids.append(str(raw["id"]))
    return ids


def scope(user_id: str, agent_id: str | None) -> dict[str, str]:
    """Return mem0's entity filter for a user, and a soul when given."""
    filters = {"user_id": user_id}
    if agent_id:
        filters["agent_id"] = agent_id
    return filters


class EmbeddedMem0:
    """The ``MemoryBackend`` running mem0 in process."""

    name = "mem0_embedded"

    def __init__(self, config: EmbeddedMem0Config, executor: Executor) -> None:
        """Remember the settings; mem0 starts on first use (see ``health``)."""
        self.config = config
        self._executor = executor
        self._memory: Any = None
        self._closed = False
        self._lock = asyncio.Lock()
        self._thread_lock = threading.Lock()

    def __repr__(self) -> str:
        """Name the store, never the key."""
        return f"EmbeddedMem0(data_dir={self.config.data_dir!r})"

    # -- plumbing ----------------------------------------------------------
    def _open(self) -> Any:
        """Build mem0's ``Memory`` (in the executor)."""
        if not mem0_available():
            raise MemoryBackendError("mem0 is not installed (pip package mem0ai)")
        Path(self.config.data_dir).mkdir(parents=True, exist_ok=True)
        memory_class = import_mem0(self.config.mem0_dir)
        memory = memory_class.from_config(self.config.mem0_config())
        # mem0 builds its openai clients with the library defaults (600 s, 2
        # retries), whose HTTP client reads any answer whole (an error's body
        # too) and parses it, here in the executor holding the GIL: each gets
        # one whose answers are bounded as the chat model's are
        # (``http_limits``; and an httpx client, as openai 3 needs).
        for part in (memory.llm, memory.embedding_model):
            client = getattr(part, "client", None)
            if client is not None and hasattr(client, "with_options"):
                part.client = client.with_options(
                    timeout=self.config.request_timeout,
                    max_retries=self.config.max_retries,
                    http_client=httpx.Client(
                        transport=LimitedSyncTransport(
                            httpx.HTTPTransport(), MAX_COMPLETION_BYTES
                        ),
                        follow_redirects=True,
                    ),
                )
        return memory

    async def run(self, operation: str, job: Callable[[Any], T]) -> T:
        """Run ``job(memory)`` in the executor, one at a time; wrap its errors.

        ``memory`` is mem0's ``Memory``; ``devtools/mem0_rest.py`` uses this to
        serve mem0's own answers.
        """
        secret = self.config.llm_api_key

        def call() -> T:
            # Also held in the thread: a cancelled caller leaves its job running.
            with self._thread_lock:
                if self._closed:
                    raise MemoryBackendError("the memory backend is closed")
                if self._memory is None:
                    self._memory = self._open()
                return job(self._memory)

        async with self._lock:
            if self._closed:
                raise MemoryBackendError("the memory backend is closed")
            try:
                return await self._executor(call)
            except MemoryBackendError:
                raise
            except Exception as err:
                raise MemoryBackendError(
                    f"mem0 {operation} failed: {describe_error(err, secret)}"
                ) from err

    # -- MemoryBackend -----------------------------------------------------
    async def health(self) -> None:
        """Open the store and embed a probe text through the configured endpoint.

        Fails when the endpoint is down, refuses the key, or returns vectors of
        another width than ``embedding_dims``.
        """

        def probe(memory: Any) -> int:
            memory.vector_store.col_info()
            return len(memory.embedding_model.embed(HEALTH_PROBE, "search"))

        dims = await self.run("health check", probe)
        if dims != self.config.embedding_dims:
            raise MemoryBackendError(
                f"the embedding model returns {dims} dimensions,"
                f" {self.config.embedding_dims} are configured"
            )

    async def add(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        user_id: str,
        agent_id: str | None,
        metadata: Mapping[str, Any],
        infer: bool = True,
    ) -> list[str]:
        """Store memories from ``messages``; return the ids stored or updated."""
        chat = [
            {"role": str(m.get("role", "user")), "content": str(m.get("content", ""))}
            for m in messages
        ]
        extra = dict(metadata)
        result = await self.run(
            "add",
            lambda m: m.add(
                chat, metadata=extra, infer=infer, **scope(user_id, agent_id)
            ),
        )
        return stored_ids(result)

    async def search(
        self, query: str, *, user_id: str, agent_id: str | None, limit: int = 5
    ) -> list[MemoryItem]:
        """Return the memories most relevant to ``query``, best first."""
        result = await self.run(
            "search",
            lambda m: m.search(query, filters=scope(user_id, agent_id), top_k=limit),
        )
        return items_from_mem0(result, limit)

    async def get_all(
        self, *, user_id: str, agent_id: str | None = None, limit: int = 100
    ) -> list[MemoryItem]:
        """Return a user's memories (one soul's when ``agent_id`` is given)."""
        result = await self.run(
            "get_all",
            lambda m: m.get_all(filters=scope(user_id, agent_id), top_k=limit),
        )
        return items_from_mem0(result, limit)

    async def delete(self, memory_id: str) -> None:
        """Forget one memory; an unknown id is an error."""
        await self.run("delete", lambda m: m.delete(memory_id))

    async def delete_all(self, *, user_id: str) -> None:
        """Forget every memory of a user."""
        await self.run("delete_all", lambda m: m.delete_all(user_id=user_id))

    async def close(self) -> None:
        """Close mem0's SQLite history, its HTTP clients and Qdrant (its file lock).

        Waits for a running call; later calls raise ``MemoryBackendError``.
        """

        def close_in_thread() -> None:
            with self._thread_lock:
                memory, self._memory = self._memory, None
                if memory is not None:
                    _close_memory(memory)

        async with self._lock:
            self._closed = True
            await self._executor(close_in_thread)


def _close_memory(memory: Any) -> None:
    """Release what a mem0 ``Memory`` holds; best effort, part by part."""
    closers: list[Callable[[], object]] = [memory.close]
    for part in (memory.llm, memory.embedding_model):
        client = getattr(part, "client", None)
        if client is not None and hasattr(client, "close"):
            closers.append(client.close)
    qdrant = getattr(memory.vector_store, "client", None)
    if qdrant is not None:
        closers.append(qdrant.close)  # shared with the entity store
    for closer in closers:
        try:
            closer()
        except Exception:  # noqa: BLE001, S112 - closing the rest matters more
            continue
