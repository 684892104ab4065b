"""What the panel shows of a body's recent work: its invocations and decisions (HA-free).

``InvokeStats`` counts, per terminal, the invocations the ``Invoker`` sent
(``core.invoker``): how many, how many failed or timed out, and how long the
answered ones took (the last and the mean, in milliseconds). ``DecisionLog``
keeps the intent filter's last decisions per terminal (``terminal.Decision``,
which holds no command text). Both are bounded: at most ``MAX_TERMINALS``
terminals (the least recently used forgotten first) and ``MAX_DECISIONS``
decisions each.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Any

from .terminal import Decision

MAX_TERMINALS = 1024
MAX_DECISIONS = 10


@dataclass(slots=True)
class InvokeCounts:
    """One terminal's invocations since Soul started."""

    invocations: int = 0
    failures: int = 0
    timeouts: int = 0
    total_ms: float = 0.0  # of the answered ones
    answered: int = 0
    last_ms: float | None = None
    last_skill: str | None = None
    last_error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """Return the counts for APIs."""
        return {
            "invocations": self.invocations,
            "failures": self.failures,
            "timeouts": self.timeouts,
            "last_ms": None if self.last_ms is None else round(self.last_ms, 1),
            "mean_ms": (
                round(self.total_ms / self.answered, 1) if self.answered else None
            ),
            "last_skill": self.last_skill,
            "last_error": self.last_error,
        }


class InvokeStats:
    """Invocation counts per terminal."""

    def __init__(self, max_terminals: int = MAX_TERMINALS) -> None:
        """Keep at most ``max_terminals`` terminals."""
        self._max = max_terminals
        self._counts: OrderedDict[str, InvokeCounts] = OrderedDict()

    def record(
        self,
        terminal_id: str,
        skill: str,
        *,
        ok: bool,
        elapsed: float | None,
        error: str | None = None,
        timed_out: bool = False,
    ) -> None:
        """Count one invocation; ``elapsed`` (seconds) is None when none came back."""
        counts = self._counts.pop(terminal_id, None) or InvokeCounts()
        self._counts[terminal_id] = counts
        while len(self._counts) > self._max:
            self._counts.popitem(last=False)
        counts.invocations += 1
        counts.last_skill = skill
        if not ok:
            counts.failures += 1
            counts.last_error = error
        if timed_out:
            counts.timeouts += 1
        if elapsed is not None and not timed_out:
            counts.answered += 1
            counts.last_ms = elapsed * 1000
            counts.total_ms += elapsed * 1000

    def of(self, terminal_id: str) -> InvokeCounts:
        """Return a terminal's counts (zeros when it never was invoked)."""
        return self._counts.get(terminal_id) or InvokeCounts()


class DecisionLog:
    """The intent filter's last decisions, per terminal, newest last."""

    def __init__(
        self, max_terminals: int = MAX_TERMINALS, max_decisions: int = MAX_DECISIONS
    ) -> None:
        """Keep ``max_decisions`` decisions of at most ``max_terminals`` terminals."""
        self._max = max_terminals
        self._per = max_decisions
        self._log: OrderedDict[str, deque[Decision]] = OrderedDict()

    def record(self, terminal_id: str, decision: Decision) -> None:
        """Keep one decision (the same object twice is kept once)."""
        log = self._log.pop(terminal_id, None) or deque(maxlen=self._per)
        self._log[terminal_id] = log
        while len(self._log) > self._max:
            self._log.popitem(last=False)
        if not log or log[-1] is not decision:
            log.append(decision)

    def of(self, terminal_id: str) -> list[dict[str, Any]]:
        """Return a terminal's last decisions, newest first, for APIs."""
        return [
            {**d.as_dict(), "at": d.at.timestamp()}  # the panel's clock: epoch seconds
            for d in reversed(self._log.get(terminal_id, ()))
        ]
