"""Diagnostics for Soul, with secrets redacted."""

from __future__ import annotations

from typing import Any

from homeassistant.components.diagnostics import async_redact_data
from homeassistant.components.http import KEY_HASS_USER
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import Unauthorized
from homeassistant.helpers.http import current_request

from .const import (
    CONF_LLM_API_KEY,
    CONF_LLM_BASE_URL,
    CONF_MCP_CONFIG,
    CONF_MEM0_API_KEY,
    CONF_MEM0_URL,
)
from .core.memory import MemoryBackendError
from .core.redaction import redact_url
from .helpers import entry_settings
from .memory import memory_backend_name
from .models import SoulConfigEntry

TO_REDACT = {CONF_LLM_API_KEY, CONF_MEM0_API_KEY}
TO_REDACT_OPTIONS = {*TO_REDACT, CONF_MCP_CONFIG}
# Addresses may hold a user, a password or a token in the query.
URLS = (CONF_LLM_BASE_URL, CONF_MEM0_URL)


def _redacted(settings: dict[str, Any], keys: set[str]) -> dict[str, Any]:
    redacted = async_redact_data(settings, keys)
    for key in URLS:
        if isinstance(url := redacted.get(key), str) and url:
            redacted[key] = redact_url(url)
    return redacted


async def async_get_config_entry_diagnostics(
    hass: HomeAssistant, entry: SoulConfigEntry
) -> dict[str, Any]:
    """Return what helps to debug a Soul hub, without secrets; administrators only.

    Home Assistant serves the download over REST to any signed-in user
    (its WebSocket commands ask for an administrator): diagnostics name
    Home Assistant's users, Star clients and bodies' last commands.
    """
    if (request := current_request.get()) is not None and not (
        (user := request.get(KEY_HASS_USER)) is not None and user.is_admin
    ):
        raise Unauthorized
    runtime = entry.runtime_data
    memory = runtime.memory
    counts: dict[str, int | str] = {}
    if memory is not None and memory.ready:
        # Memories per user Soul has talked with (the count, never the content).
        users = {s.user_id or "default_user" for s in runtime.chat.sessions.values()}
        for user in sorted(users)[:20]:
            try:
                counts[user] = len(
                    await memory.backend.get_all(user_id=user, limit=1000)
                )
            except MemoryBackendError as err:
                counts[user] = f"error: {err}"
    return {
        "data": _redacted(dict(entry.data), TO_REDACT),
        # The MCP configuration holds secrets (env, headers): see "mcp".
        "options": _redacted(dict(entry.options), TO_REDACT_OPTIONS),
        "topic_prefix": runtime.topic_prefix,
        "llm": None
        if runtime.llm is None
        else {
            "base_url": redact_url(runtime.llm.endpoint.base_url),
            "model": runtime.llm.endpoint.model,
            "api_key_set": bool(runtime.llm.endpoint.api_key),
        },
        "pending_invocations": runtime.invoker.pending,
        "terminals": [
            {
                "terminal_id": t.terminal_id,
                "online": t.online,
                "stale": t.stale,
                "last_heartbeat": t.last_heartbeat.isoformat()
                if t.last_heartbeat
                else None,
                "skill_version": t.skills.skill_version if t.skills else None,
                "skills": [s.name for s in t.skills.skills] if t.skills else [],
                "rejected_skills": dict(t.skills.rejected) if t.skills else {},
                "catalog_version": t.catalog.catalog_version if t.catalog else None,
                "catalog_intents": len(t.catalog.intents) if t.catalog else 0,
                "last_intent_decision": None
                if t.last_decision is None
                else t.last_decision.as_dict(),
            }
            for t in runtime.registry
        ],
        # Persona texts are the owner's prose: only whether one is set.
        "souls": [
            {
                "soul_id": soul.soul_id,
                "mbti_type": soul.mbti,
                "persona_set": bool(soul.persona_text),
                "baseline": list(soul.persona.baseline),
                "terminal_ids": runtime.souls.terminals_of(soul.soul_id),
                "emotion": None
                if (snapshot := runtime.souls.snapshot(soul.soul_id)) is None
                else snapshot.as_dict(),
            }
            for soul in runtime.souls.souls.values()
        ],
        "bindings": dict(runtime.souls.bindings()),
        "memory": {
            "backend": memory_backend_name(entry_settings(entry)),
            "ready": memory is not None and memory.ready,
            "last_error": memory.last_error if memory else None,
            "queued_archives": len(memory.queue) if memory else 0,
            "archived": memory.archived if memory else 0,
            "memories_per_user": counts,
        },
        "star": {
            "clients": runtime.star.counts(),
            "routed": runtime.star.stats.routed,
            "errors": runtime.star.stats.errors,
            "dropped_slow_consumers": runtime.star.stats.dropped_slow,
            "connections": [
                {
                    "type": c.identity.client_type,
                    "id": c.identity.client_id,
                    "env_id": c.identity.env_id,
                    "received": c.received,
                    "sent": c.sent,
                }
                for c in runtime.star.connections()
            ],
        },
        "chat": {
            "token_usage": dict(runtime.chat.usage),
            "last_route": runtime.chat.last_route,
            "max_rounds": runtime.chat.max_rounds,
            "sessions": len(runtime.chat.sessions),
            "sessions_awaiting_summary": sum(
                1
                for s in runtime.chat.sessions.values()
                if s.summarized_for < s.last_user_at
            ),
            "follow_up": runtime.chat.follow_up,
            "structured_output": runtime.chat.reasoner.structured,
            "takes_images": runtime.chat.reasoner.sees_images,
        },
        # Counts and states, never events or profile contents.
        "journal": (
            runtime.journal.stats()
            if runtime.journal is not None
            else {"available": False}
        ),
        # Each server's state, tools and configuration, secrets hidden.
        "mcp": {
            "servers": runtime.mcp.diagnostics(),
            "calls": runtime.mcp.calls,
            "failures": runtime.mcp.failures,
        },
        "profiles": {
            "users": len(runtime.profiles.users),
            "boot_counts": {
                soul_id: state.boot_count
                for soul_id, state in runtime.profiles.systems.items()
            },
        },
    }
