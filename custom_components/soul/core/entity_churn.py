"""How often a body may replace its skill entities.

Home Assistant keeps every entity removed from its registry (a "deleted
entity", in ``core.entity_registry``, until the config entry goes), so that
its id and settings come back if it does. A body that renamed its skills in
every snapshot left two of them at each, and a crafted one 16: at the
snapshots' rate (``ingest``: 10 a minute) 230,000 a day, a file rewritten
whole at every save. ``EntityChurn`` spends a token of the body's bucket for
each skill entity a snapshot removes; while the bucket is empty, the
snapshot's new skill entities are not made (the skills stay callable, and a
later snapshot makes them once the bucket refilled). A body's first
snapshot, and any that only adds, spends nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from .buckets import TokenBuckets
from .logs import trace_logger
from .skill_profiles import Profile

_LOGGER = trace_logger(__name__)

CHURN_BURST = 32  # skill entities a body may remove at once
CHURN_REFILL = 900.0  # seconds per one more after those


class EntityChurn:
    """The skill entities bodies replaced, within a budget each (module docstring)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        """Start every body with a full budget."""
        self._buckets = TokenBuckets[str](CHURN_BURST, CHURN_REFILL, clock)

    def within(
        self,
        terminal_id: str,
        old: Mapping[str, Profile | None],
        new: Mapping[str, Profile | None],
    ) -> Mapping[str, Profile | None]:
        """Return ``new`` without its new entities while the body's budget is spent."""
        for name, kind in old.items():
            if kind is not None and new.get(name) != kind:
                self._buckets.take(terminal_id)  # one removed (when a token is left)
        added = {n for n, k in new.items() if k is not None and old.get(n) != k}
        if not added or not self._buckets.empty(terminal_id):
            return new
        _LOGGER.warning(
            "Terminal %s replaced more than %d skill entities lately: %d new ones "
            "get no entity for now; the skills stay callable",
            terminal_id,
            CHURN_BURST,
            len(added),
        )
        return {name: None if name in added else kind for name, kind in new.items()}

    def forget(self, terminal_id: str) -> None:
        """Forget a body's budget (it was removed)."""
        self._buckets.forget(terminal_id)
