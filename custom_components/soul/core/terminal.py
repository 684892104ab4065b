"""A body as the terminal registry knows it, and what the registry tells of it.

``Terminal`` is what a body last said about itself (online, heartbeat,
skills, catalog, the intent filter's last decision on its commands);
``Change`` is what a registry listener hears; ``Prepared`` is a skills or
catalog message parsed off the event loop; ``accept_version`` is §3.3's rule
for a snapshot's version.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from .protocol import IntentCatalogSnapshot, SkillsSnapshot
from .skill_profiles import Profile
from .topics import Kind


class Change(StrEnum):
    """What happened to a terminal."""

    ADDED = "added"  # first skills snapshot: the terminal now exists as a device
    UPDATED = "updated"  # skills or catalog changed
    AVAILABILITY = "availability"  # online, offline, stale or back
    HEARTBEAT = "heartbeat"
    DECISION = "decision"  # the intent filter decided on one of its commands
    REMOVED = "removed"  # its retained skills snapshot was cleared


@dataclass(slots=True)
class Terminal:
    """One body as Soul knows it."""

    terminal_id: str
    online: bool | None = None
    last_seen: float | None = None  # registry clock (monotonic)
    last_heartbeat: datetime | None = None
    heartbeat_told: float = float("-inf")  # registry clock, the last one told
    skills: SkillsSnapshot | None = None
    # The entity kind of each of ``skills`` (``skill_profiles.profile``),
    # worked out once per snapshot off the event loop.
    skill_kinds: Mapping[str, Profile | None] = field(default_factory=dict)
    catalog: IntentCatalogSnapshot | None = None
    stale: bool = False
    last_decision: Decision | None = None
    # Logged as unavailable (once; "available again" is logged once too).
    logged_unavailable: bool = False
    # Payload bytes of its current skills and catalog (the registry's budget).
    held_bytes: dict[Kind, int] = field(default_factory=dict)

    @property
    def registered(self) -> bool:
        """Return whether the body has announced its skills (it is a device)."""
        return self.skills is not None

    @property
    def available(self) -> bool:
        """Return whether the body is online and has been heard within the TTL."""
        return self.online is True and not self.stale


@dataclass(frozen=True, slots=True)
class Prepared:
    """A skills or catalog message parsed off the event loop, ready to apply.

    ``snapshot`` is None for a cleared (empty) retained message; ``error``
    says why the message is dropped.
    """

    kind: Kind
    terminal_id: str
    snapshot: SkillsSnapshot | IntentCatalogSnapshot | None = None
    error: str | None = None
    size: int = 0  # the payload's bytes
    # A skills snapshot's entity kinds by skill name (see ``Terminal``).
    skill_kinds: Mapping[str, Profile | None] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Decision:
    """The intent filter's last decision on a terminal's command (no command text)."""

    action: str
    reason: str
    trigger_intent_id: str | None
    intent_ids: tuple[str, ...]
    confidence: float | None
    at: datetime

    def as_dict(self) -> dict[str, Any]:
        """Return the decision for APIs, attributes and diagnostics (``at`` in ISO 8601)."""
        return {
            "action": self.action,
            "reason": self.reason,
            "trigger_intent_id": self.trigger_intent_id,
            "intent_ids": list(self.intent_ids),
            "confidence": self.confidence,
            "at": self.at.isoformat(),
        }


def accept_version(current: int | None, new: int) -> bool:
    """Apply §3.3's version rules: no rollback, no 0 over a version, equal overwrites."""
    if not current:
        return True
    return new >= current


type Listener = Callable[[Terminal, Change], None]
