"""The spec's own example payloads (soul-body-protocol-v2 §3.3 and §3.10).

The skills are ``devtools.body_sim.spec_skills`` (body-sim's own differ in
``create_alarm``'s schema) and the catalog is the reference body's default.
"""

from __future__ import annotations

import copy
from typing import Any

from devtools.body_sim import default_catalog, spec_skills

SKILLS: dict[str, Any] = spec_skills("terminal-001")
CATALOG: dict[str, Any] = default_catalog("terminal-001")


def skills(**changes: Any) -> dict[str, Any]:
    """Return a deep copy of the spec's skills payload with top-level changes."""
    return {**copy.deepcopy(SKILLS), **changes}


def catalog(**changes: Any) -> dict[str, Any]:
    """Return a deep copy of the spec's catalog payload with top-level changes."""
    return {**copy.deepcopy(CATALOG), **changes}
