"""Constants of the Soul integration."""

from __future__ import annotations

from typing import Final

from .core.invoker import DEFAULT_TIMEOUT
from .core.logs import trace_logger
from .core.topics import DEFAULT_PREFIX

DOMAIN: Final = "soul"
LOGGER = trace_logger(__package__)

TITLE: Final = "Soul"

CONF_TOPIC_PREFIX: Final = "topic_prefix"
CONF_LLM_BASE_URL: Final = "llm_base_url"
CONF_LLM_API_KEY: Final = "llm_api_key"
CONF_LLM_MODEL: Final = "llm_model"
CONF_INVOKE_TIMEOUT: Final = "invoke_timeout"
# The LLM endpoint lives in the entry's data; everything else in its options.
ENDPOINT_KEYS: Final = (CONF_LLM_BASE_URL, CONF_LLM_API_KEY, CONF_LLM_MODEL)
# The options form's folded sections (stored flat).
SECTION_MEMORY: Final = "memory"
SECTION_ADVANCED: Final = "advanced"
SECTION_MCP: Final = "mcp"

DEFAULT_TOPIC_PREFIX: Final = DEFAULT_PREFIX
DEFAULT_INVOKE_TIMEOUT: Final = DEFAULT_TIMEOUT

CONF_EMOTION_TICK_INTERVAL: Final = "emotion_tick_interval"
DEFAULT_EMOTION_TICK_INTERVAL: Final = 3.0

SUBENTRY_SOUL: Final = "soul"
CONF_NAME: Final = "name"
CONF_MBTI_TYPE: Final = "mbti_type"
CONF_PERSONA: Final = "persona"
CONF_USER_ID: Final = "user_id"

# Home Assistant events (automations can listen to them).
EVENT_EMOTION_UPDATE: Final = "soul_emotion_update"
EVENT_USER_EMOTION: Final = "soul_user_emotion"
EVENT_MOOD_CHANGED: Final = "soul_mood_changed"
EVENT_EXEC_MODE_CHANGED: Final = "soul_exec_mode_changed"

CONF_MAX_TOOL_ROUNDS: Final = "max_tool_rounds"
DEFAULT_MAX_TOOL_ROUNDS: Final = 3
# §2 step 8: one model call by default; follow-up rounds are opt-in.
CONF_FOLLOW_UP: Final = "follow_up"
DEFAULT_FOLLOW_UP: Final = False
ISSUE_LLM_NOT_CONFIGURED: Final = "llm_not_configured"
# The event journal (docs/cognition.md): a SQLite file in the configuration
# directory, kept this many days and at most this many megabytes.
JOURNAL_FILE: Final = "soul_journal.db"
CONF_JOURNAL_DAYS: Final = "journal_days"
DEFAULT_JOURNAL_DAYS: Final = 30
CONF_JOURNAL_MB: Final = "journal_mb"
DEFAULT_JOURNAL_MB: Final = 100
ISSUE_JOURNAL_UNAVAILABLE: Final = "journal_unavailable"
# The navigator (S-brain): every so many user turns, on a swing of the PAD
# larger than this in one turn, and with a model of its own (default: the chat's).
CONF_NAVIGATOR_TURNS: Final = "navigator_turns"
DEFAULT_NAVIGATOR_TURNS: Final = 5
CONF_NAVIGATOR_SWING: Final = "navigator_swing"
DEFAULT_NAVIGATOR_SWING: Final = 0.5
CONF_NAVIGATOR_MODEL: Final = "navigator_model"
EVENT_EVOLUTION_REQUEST: Final = "soul_evolution_request"
CONF_TERMINAL: Final = "terminal_id"
# MCP servers (docs/mcp.md): the hub's options hold their configuration (the
# spec's {"mcpServers": …}); a soul lists the servers it may use (none listed:
# all of them).
CONF_MCP_CONFIG: Final = "mcp_config"
CONF_MCP_SERVERS: Final = "mcp_servers"
ISSUE_MCP_SERVER_FAILED: Final = "mcp_server_failed"

CONF_MEMORY_BACKEND: Final = "memory_backend"
CONF_MEM0_URL: Final = "mem0_url"
CONF_MEM0_API_KEY: Final = "mem0_api_key"
CONF_EMBEDDING_MODEL: Final = "embedding_model"
CONF_EMBEDDING_DIMS: Final = "embedding_dims"
CONF_MEMORY_TIMEOUT: Final = "memory_timeout"
MEMORY_NONE: Final = "none"
MEMORY_EMBEDDED: Final = "mem0_embedded"
MEMORY_SERVER: Final = "mem0_server"
MEMORY_BACKENDS: Final = (MEMORY_EMBEDDED, MEMORY_SERVER, MEMORY_NONE)
DEFAULT_EMBEDDING_MODEL: Final = "text-embedding-3-small"
DEFAULT_EMBEDDING_DIMS: Final = 1536
DEFAULT_MEMORY_TIMEOUT: Final = 5.0
# mem0ai is installed on demand and never listed in manifest.json: its metadata
# pins protobuf<7, which Home Assistant >= 2026.10 (protobuf 7) cannot install,
# although mem0 never imports protobuf (docs/decisions.md). Its real runtime
# requirements (mem0ai's own, without protobuf) go through Home Assistant's
# requirements helper, then mem0ai itself is installed without dependencies
# (memory.py). Both change together: a test compares them with mem0ai's metadata.
MEM0_REQUIREMENT: Final = "mem0ai==2.2.1"
MEM0_DEPENDENCIES: Final = (
    "httpx>=0.28.0",
    "openai>=1.90.0",
    "posthog>=7.14.0",
    "pydantic>=2.7.3",
    "pytz>=2024.1",
    "qdrant-client>=1.12.0",
    "sqlalchemy>=2.0.31",
)
ISSUE_MEM0_UNAVAILABLE: Final = "mem0_unavailable"
MAX_SETTING_LENGTH: Final = 2048  # a URL, a key, a model name
# A soul's choice of MCP servers, as its flow stores it.
MAX_SOUL_SERVERS: Final = 32
MAX_SERVER_NAME: Final = 40
