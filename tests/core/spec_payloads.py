"""The spec's own example payloads (soul-body-protocol-v2 §3.3 and §3.10).

They are the reference body's defaults; tests use them without its device info.
"""

from __future__ import annotations

import copy
from typing import Any

from devtools.body_sim import default_catalog, default_skills

SKILLS: dict[str, Any] = {
    k: v
    for k, v in default_skills("terminal-001").items()
    if k not in {"model", "manufacturer", "firmware"}
}
CATALOG: dict[str, Any] = default_catalog("terminal-001")


def skills(**changes: Any) -> dict[str, Any]:
    """Return a deep copy of the spec's skills payload with top-level changes."""
    return {**copy.deepcopy(SKILLS), **changes}


def catalog(**changes: Any) -> dict[str, Any]:
    """Return a deep copy of the spec's catalog payload with top-level changes."""
    return {**copy.deepcopy(CATALOG), **changes}
