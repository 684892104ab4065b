"""Where a chat turn's time goes inside Home Assistant: marks on Soul's steps.

``benchmarks.chat_path --timeline`` wraps a few of Soul's methods with
``perf_counter`` marks while it runs (the entry and the return of each, and
every publish with its topic's last level) and prints, for every mark, its
median time after ``ChatPipeline.chat`` was entered, over every turn of the
run (HTTP, Assist, warm-up). Each mark costs about a microsecond, so the
run's other figures are not the goal's. A helper module, not a benchmark.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
import functools
import statistics
import time
from typing import Any

from custom_components.soul.core.chat import ChatPipeline
from custom_components.soul.core.cognition.trace import TurnTrace
from custom_components.soul.core.intent_route import IntentRoute
from custom_components.soul.core.registry import TerminalRegistry
from custom_components.soul.core.souls import SoulHub
from custom_components.soul.mqtt_bridge import MqttBridge

# (class, method, label, whether it is a coroutine); the first one starts a turn
STEPS: tuple[tuple[type, str, str, bool], ...] = (
    (ChatPipeline, "chat", "chat", True),
    (TurnTrace, "user_input", "trace user_input", False),
    (SoulHub, "user_turn", "user_turn", True),
    (TurnTrace, "psyche_update", "trace psyche_update", False),
    (TerminalRegistry, "filter_command", "intent filter", False),
    (IntentRoute, "_valid_intents", "arguments' schema check", False),
)


class Timeline:
    """Marks of every turn, in the order they happened."""

    def __init__(self) -> None:
        self.turns: list[list[tuple[str, float]]] = []
        self._turn: list[tuple[str, float]] | None = None

    def mark(self, label: str) -> None:
        """Mark ``label`` now in the current turn (none before the first)."""
        if self._turn is not None:
            self._turn.append((label, time.perf_counter()))

    def _wrap(self, method: Any, label: str, coroutine: bool, starts: bool) -> Any:
        mark = self.mark
        if coroutine:

            @functools.wraps(method)
            async def wrapped_async(*args: Any, **kwargs: Any) -> Any:
                if starts:
                    self._turn = []
                    self.turns.append(self._turn)
                mark(f"{label} >")
                try:
                    return await method(*args, **kwargs)
                finally:
                    mark(f"{label} <")

            return wrapped_async

        @functools.wraps(method)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            mark(f"{label} >")
            try:
                return method(*args, **kwargs)
            finally:
                mark(f"{label} <")

        return wrapped

    @contextmanager
    def installed(self) -> Iterator[Timeline]:
        """Wrap the steps (and every publish) while the block runs."""
        originals: list[tuple[type, str, Callable[..., Any]]] = []
        for number, (owner, name, label, coroutine) in enumerate(STEPS):
            original = getattr(owner, name)
            originals.append((owner, name, original))
            setattr(owner, name, self._wrap(original, label, coroutine, not number))
        publish = MqttBridge.async_publish
        originals.append((MqttBridge, "async_publish", publish))
        mark = self.mark

        @functools.wraps(publish)
        async def publishing(
            bridge: MqttBridge, topic: str, payload: str, qos: int, retain: bool
        ) -> None:
            mark(f"publish {topic.rsplit('/', 1)[-1]}")
            await publish(bridge, topic, payload, qos, retain)

        setattr(MqttBridge, "async_publish", publishing)  # noqa: B010 - mypy
        try:
            yield self
        finally:
            for owner, name, original in originals:
                setattr(owner, name, original)

    def medians(self) -> list[tuple[str, float, int]]:
        """Return (label, median µs after the turn began, turns) by median.

        A label that comes more than once in a turn counts its first time.
        """
        after: dict[str, list[float]] = {}
        for turn in self.turns:
            if not turn:
                continue
            began = turn[0][1]
            seen: set[str] = set()
            for label, at in turn:
                if label not in seen:
                    seen.add(label)
                    after.setdefault(label, []).append((at - began) * 1e6)
        rows = [
            (label, statistics.median(values), len(values))
            for label, values in after.items()
        ]
        return sorted(rows, key=lambda row: row[1])

    def report(self) -> str:
        """Return the medians as lines of text."""
        lines = [
            f"  timeline of a turn inside Home Assistant ({len(self.turns)} turns, "
            "every kind; median µs after chat was entered; marks included):"
        ]
        lines += [
            f"    {label:<34}: {median:8.1f} µs   ({count} turns)"
            for label, median, count in self.medians()
        ]
        return "\n".join(lines)
