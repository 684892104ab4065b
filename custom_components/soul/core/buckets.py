"""Token buckets by key: a burst at once, then one every so many seconds.

What a body may do as often as it likes is spent from its bucket: the
snapshots it publishes (``ingest``: parsed one per token, the rest wait and
are coalesced), the changes of its ``online`` (``registry``: told one per
token, the latest told later) and the skill entities it replaces
(``entity_churn``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable


class TokenBuckets[K: Hashable]:
    """A bucket per key: ``burst`` tokens, one more every ``refill`` seconds."""

    def __init__(self, burst: int, refill: float, clock: Callable[[], float]) -> None:
        """Start every key full; ``clock`` counts the seconds."""
        self.burst = burst
        self.refill = refill
        self._clock = clock
        # key → (tokens, when counted); a key not here is full
        self._buckets: dict[K, tuple[float, float]] = {}

    def take(self, key: K) -> float:
        """Spend a token of ``key``: return 0, or the seconds until one is there."""
        now = self._clock()
        tokens, since = self._buckets.get(key, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - since) / self.refill)
        if tokens < 1:
            self._buckets[key] = (tokens, now)
            return (1 - tokens) * self.refill
        self._buckets[key] = (tokens - 1, now)
        return 0.0

    def empty(self, key: K) -> bool:
        """Whether ``key`` has no token now (nothing is spent)."""
        if (bucket := self._buckets.get(key)) is None:
            return self.burst < 1
        tokens, since = bucket
        return tokens + (self._clock() - since) / self.refill < 1

    def forget(self, key: K) -> None:
        """Drop ``key``'s bucket (it starts full again)."""
        self._buckets.pop(key, None)

    def forget_full(self) -> None:
        """Drop the buckets that have refilled since (bounded memory)."""
        full = self._clock() - self.burst * self.refill
        for key in [k for k, (_n, since) in self._buckets.items() if since < full]:
            del self._buckets[key]
