"""Tests of the memory backends: mem0 in process, mem0's REST server, none.

The mem0 tests run the real mem0 (local Qdrant on disk under ``tmp_path``)
against ``devtools.fake_llm``, which embeds and answers mem0's prompts. They
need mem0ai: the ``mem0_installed`` fixture installs it as Soul does
(tests/mem0_environment.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from custom_components.soul.core.memory.mem0_embedded import EmbeddedMem0Config
from devtools.fake_llm import DEFAULT_MODEL, FakeOpenAI

EMBEDDING_DIMS = 64
ALICE_META = {
    "type": "fact",
    "tags": ["drink", "morning"],
    "timestamp": 1_771_753_200.5,
    "soul_id": "soul-a",
    "terminal_id": "desk-1",
    "session_id": "session-1",
}


def make_config(data_dir: Path, llm: FakeOpenAI, **changes: Any) -> EmbeddedMem0Config:
    """Return an embedded-mem0 config pointing at the fake LLM (no retries)."""
    settings: dict[str, Any] = {
        "data_dir": str(data_dir),
        "llm_base_url": llm.base_url,
        "llm_model": DEFAULT_MODEL,
        "llm_api_key": "",
        "embedding_model": "fake-embedding",
        "embedding_dims": EMBEDDING_DIMS,
        "request_timeout": 5.0,
        "max_retries": 0,
    } | changes
    return EmbeddedMem0Config(**settings)
