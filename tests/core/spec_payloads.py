"""The spec's own example payloads (soul-body-protocol-v2 §3.3 and §3.10).

The skills are ``devtools.body_sim.spec_skills`` (body-sim's own differ in
``create_alarm``'s schema) and the catalog is the reference body's default.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from custom_components.soul.core.registry import TerminalRegistry
from custom_components.soul.core.topics import Kind
from devtools.body_sim import default_catalog, spec_skills

SKILLS: dict[str, Any] = spec_skills("terminal-001")
CATALOG: dict[str, Any] = default_catalog("terminal-001")


def skills(**changes: Any) -> dict[str, Any]:
    """Return a deep copy of the spec's skills payload with top-level changes."""
    return {**copy.deepcopy(SKILLS), **changes}


def catalog(**changes: Any) -> dict[str, Any]:
    """Return a deep copy of the spec's catalog payload with top-level changes."""
    return {**copy.deepcopy(CATALOG), **changes}


def announced(terminal_id: str = "terminal-001") -> TerminalRegistry:
    """Return a registry where ``terminal_id`` is online with the spec's skills and catalog."""
    registry = TerminalRegistry()
    registry.handle_message(Kind.ONLINE, terminal_id, "online")
    registry.handle_message(Kind.SKILLS, terminal_id, json.dumps(skills()))
    registry.handle_message(Kind.INTENT_CATALOG, terminal_id, json.dumps(catalog()))
    return registry
