"""The runtime objects of a Soul hub entry (``entry.runtime_data``): types only.

``builder.py`` makes them; everything else reads them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from homeassistant.config_entries import ConfigEntry

from .core.chat import ChatPipeline
from .core.cognition.events import EventBus
from .core.cognition.journal import SqliteJournal
from .core.cognition.profiles import ProfileStore
from .core.invoker import Invoker
from .core.llm import OpenAICompatibleLLM
from .core.mcp.hub import McpHub
from .core.memory.manager import MemoryManager
from .core.registry import TerminalRegistry
from .core.souls import SoulHub
from .core.star.hub import StarHub
from .core.topics import Topics

if TYPE_CHECKING:
    from .mqtt_bridge import MqttBridge
    from .storage import DebouncedStore


@dataclass(slots=True)
class SoulRuntime:
    """Everything a loaded hub entry owns; dropped on unload."""

    topics: Topics
    llm: OpenAICompatibleLLM | None
    registry: TerminalRegistry
    invoker: Invoker
    bridge: MqttBridge
    souls: SoulHub
    chat: ChatPipeline
    memory: MemoryManager | None
    star: StarHub
    memory_store: DebouncedStore
    store: DebouncedStore
    sessions_store: DebouncedStore
    star_store: DebouncedStore
    # The event journal (None when its file cannot be used) and its bus.
    events: EventBus
    journal: SqliteJournal | None
    # User profiles and the souls' system state (XingChen-V §5.2).
    profiles: ProfileStore
    profiles_store: DebouncedStore
    # The MCP servers and their tools (docs/mcp.md).
    mcp: McpHub
    # The options and data the runtime was built from: other changes (the
    # souls, subentries) need no reload.
    options: dict[str, Any]
    data: dict[str, Any]

    @property
    def topic_prefix(self) -> str:
        """Return the MQTT topic prefix."""
        return self.topics.prefix


type SoulConfigEntry = ConfigEntry[SoulRuntime]
