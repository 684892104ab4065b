"""Bodies' snapshots (``skills``, ``intent_catalog``): parsed off the event loop, within limits.

Checking a snapshot costs milliseconds — every JSON Schema against its
meta-schema, a catalog's patterns and keyword index compiled — and any
client on the broker can publish one. So the MQTT bridge hands them here:

- each is parsed by ``TerminalRegistry.prepare`` through ``run_blocking``
  (Home Assistant's executor) and applied in the event loop by ``apply``;
- one at a time, in arrival order: snapshots never take more than one core,
  and a terminal's messages apply in the order it sent them;
- latest wins: while a terminal's snapshot of one kind waits, a newer one
  replaces it, so a flood costs one parse, not one per message;
- per terminal, ``burst`` snapshots at once, then one every ``refill``
  seconds; later ones wait (and are coalesced), they are not lost;
- at most ``max_pending_bytes`` wait in all; beyond that a new snapshot is
  dropped with a log line;
- after a parse longer than ``HEAVY_PARSE`` the worker rests as long as it
  took: a flood from many terminals uses at most half a core.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Coroutine
import time
from typing import Any

from .buckets import TokenBuckets
from .logs import trace_logger
from .registry import TerminalRegistry
from .terminal import Prepared
from .topics import Kind

_LOGGER = trace_logger(__name__)

DEFAULT_BURST = 10
DEFAULT_REFILL = 6.0  # seconds per snapshot after the burst: 10 a minute
MAX_PENDING_BYTES = 16 * 1024 * 1024
HEAVY_PARSE = 0.02  # seconds; after a longer parse the worker rests as long
KINDS = (Kind.SKILLS, Kind.INTENT_CATALOG)

type RunBlocking = Callable[..., Awaitable[Any]]
type Spawn = Callable[[Coroutine[Any, Any, None]], object]


def _spawn(coro: Coroutine[Any, Any, None]) -> object:
    return asyncio.get_running_loop().create_task(coro)


class SnapshotIngest:
    """Feeds a registry its bodies' snapshots; see the module docstring."""

    def __init__(
        self,
        registry: TerminalRegistry,
        *,
        run_blocking: RunBlocking = asyncio.to_thread,
        spawn: Spawn = _spawn,
        clock: Callable[[], float] = time.monotonic,
        burst: int = DEFAULT_BURST,
        refill: float = DEFAULT_REFILL,
        max_pending_bytes: int = MAX_PENDING_BYTES,
    ) -> None:
        """Apply to ``registry``; parse with ``run_blocking``, start work with ``spawn``."""
        self._registry = registry
        self._run_blocking = run_blocking
        self._spawn = spawn
        self._buckets = TokenBuckets[str](burst, refill, clock)
        self.max_pending_bytes = max_pending_bytes
        self._pending: OrderedDict[tuple[str, Kind], bytes | str] = OrderedDict()
        self._pending_bytes = 0
        self._running = False
        self._stopped = False
        self._wake: asyncio.TimerHandle | None = None
        self.dropped = 0
        self.coalesced = 0

    @property
    def pending(self) -> int:
        """Return how many snapshots wait."""
        return len(self._pending)

    def submit(self, kind: Kind, terminal_id: str, payload: bytes | str) -> None:
        """Queue a snapshot message (in the event loop); it applies soon."""
        if self._stopped:
            return
        key = (terminal_id, kind)
        size = len(payload)
        previous = self._pending.get(key)
        freed = 0 if previous is None else len(previous)
        if self._pending_bytes - freed + size > self.max_pending_bytes:
            self.dropped += 1
            _LOGGER.warning(
                "Dropped %s of terminal %s: %d bytes of snapshots already wait",
                kind,
                terminal_id,
                self._pending_bytes,
            )
            return
        if previous is not None:
            self.coalesced += 1
        self._pending[key] = payload
        self._pending_bytes += size - freed
        self._kick()

    def stop(self) -> None:
        """Stop: nothing more is parsed or applied."""
        self._stopped = True
        self._pending.clear()
        self._pending_bytes = 0
        if self._wake is not None:
            self._wake.cancel()
            self._wake = None

    def _kick(self) -> None:
        if not self._running and not self._stopped and self._pending:
            self._running = True
            self._spawn(self._drain())

    def _next(self) -> tuple[tuple[str, Kind], bytes | str] | float:
        """Return the first waiting snapshot whose terminal may go, or the wait."""
        wait = float("inf")
        for key in self._pending:
            delay = self._buckets.take(key[0])
            if delay == 0:
                payload = self._pending.pop(key)
                self._pending_bytes -= len(payload)
                return key, payload
            wait = min(wait, delay)
        return wait

    async def _drain(self) -> None:
        try:
            while not self._stopped and self._pending:
                chosen = self._next()
                if isinstance(chosen, float):
                    if self._wake is not None:
                        self._wake.cancel()
                    loop = asyncio.get_running_loop()
                    self._wake = loop.call_later(chosen, self._woken)
                    return
                (terminal_id, kind), payload = chosen
                started = time.monotonic()
                try:
                    prepared: Prepared = await self._run_blocking(
                        self._registry.prepare, kind, terminal_id, payload
                    )
                except Exception:
                    _LOGGER.exception("Could not parse %s of %s", kind, terminal_id)
                    continue
                if not self._stopped:
                    self._registry.apply(prepared)
                if (spent := time.monotonic() - started) > HEAVY_PARSE:
                    # A flood of new schemas from many terminals: rest as long
                    # as the parse took, so snapshots use at most half a core.
                    await asyncio.sleep(spent)
            self._buckets.forget_full()
        finally:
            self._running = False

    def _woken(self) -> None:
        self._wake = None
        self._kick()

    def wake(self) -> None:
        """Look at the waiting snapshots now (tests; the timer does it otherwise)."""
        if self._wake is not None:
            self._wake.cancel()
        self._woken()
