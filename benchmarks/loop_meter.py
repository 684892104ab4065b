"""Event-loop instrumentation for the benchmarks: every callback timed, optional cProfile.

``LoopMeter`` wraps ``asyncio.events.Handle._run`` — every callback the loop
runs, task steps included — and adds up how long each held the loop; it keeps
the longest ones with what they were (a task's coroutine, or the callback).
A garbage collection runs inside whichever callback allocates the object that
triggers it: its time is counted in that callback, and named in its
description ("[garbage collection: generation 2, 255 ms]"); ``gc_time`` and
``gc_full`` add up the collections (and the full ones) while entered.
"""

from __future__ import annotations

import asyncio
from asyncio import events
import cProfile
import gc
import heapq
import io
import pstats
import time
from types import TracebackType
from typing import Any, Self


def describe(callback: Any, handle: events.Handle) -> str:
    """Return what a handle ran: a task's coroutine, else the callback's name."""
    owner = getattr(callback, "__self__", None)
    if isinstance(owner, asyncio.Task):
        coro = owner.get_coro()
        name = getattr(coro, "__qualname__", repr(coro))
        return f"task {name} ({owner.get_name()})"
    while hasattr(callback, "func"):  # functools.partial
        callback = callback.func
    name = getattr(callback, "__qualname__", None)
    if name is None:
        return repr(handle)
    module = getattr(callback, "__module__", None) or ""
    return f"{module}.{name}" if module else name


class LoopMeter:
    """Times every callback of the running loop while entered (one thread).

    ``total`` is the loop's busy time in seconds (wall time inside callbacks),
    ``cpu`` the loop thread's CPU time in them (less: another thread holding
    the GIL meanwhile, or the machine's other work), ``count`` the callbacks,
    ``longest`` the ``keep`` longest as (seconds, description), longest first.
    """

    def __init__(self, keep: int = 5, *, profile: bool = False) -> None:
        """Keep the ``keep`` longest callbacks; ``profile``: run cProfile too."""
        self.keep = keep
        self.total = 0.0
        self.cpu = 0.0  # the loop thread's CPU time in those callbacks
        self.count = 0
        self._heap: list[tuple[float, int, str]] = []
        self._original: Any = None
        self.closed = False
        self.profiler = cProfile.Profile() if profile else None
        self.gc_time = 0.0  # seconds of garbage collection while entered
        self.gc_full = 0  # generation-2 collections while entered
        self._gc_started = 0.0
        self._gc_in_callback: list[tuple[int, float]] = []

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        """Time each collection (``gc.callbacks``)."""
        if phase == "start":
            self._gc_started = time.perf_counter()
            return
        spent = time.perf_counter() - self._gc_started
        self.gc_time += spent
        self.gc_full += info["generation"] == 2
        self._gc_in_callback.append((info["generation"], spent))

    def __enter__(self) -> Self:
        """Start timing callbacks."""
        original = self._original = events.Handle._run  # noqa: SLF001
        clock = time.perf_counter
        cpu_clock = time.thread_time
        heap = self._heap
        keep = self.keep
        meter = self

        collected = self._gc_in_callback

        def what(callback: Any, handle: events.Handle) -> str:
            text = describe(callback, handle)
            if collected:
                generation, spent = max(collected, key=lambda c: c[1])
                text += (
                    f" [garbage collection: generation {generation},"
                    f" {spent * 1000:.0f} ms]"
                )
            return text

        def _run(handle: events.Handle) -> None:
            callback = handle._callback  # noqa: SLF001  # cleared if it cancels itself
            collected.clear()
            cpu_start = cpu_clock()
            start = clock()
            original(handle)
            spent = clock() - start
            cpu = cpu_clock() - cpu_start
            if meter.closed:  # the step that left the meter: what follows is not ours
                return
            meter.total += spent
            meter.cpu += cpu
            meter.count += 1
            if len(heap) < keep:
                heapq.heappush(heap, (spent, meter.count, what(callback, handle)))
            elif spent > heap[0][0]:
                heapq.heapreplace(heap, (spent, meter.count, what(callback, handle)))

        events.Handle._run = _run  # type: ignore[method-assign]  # noqa: SLF001
        gc.callbacks.append(self._on_gc)
        if self.profiler is not None:
            self.profiler.enable()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Stop timing."""
        self.closed = True
        if self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)
        if self.profiler is not None:
            self.profiler.disable()
        events.Handle._run = self._original  # type: ignore[method-assign]  # noqa: SLF001

    @property
    def longest(self) -> list[tuple[float, str]]:
        """Return the longest callbacks, longest first: (seconds, what)."""
        return [(s, what) for s, _n, what in sorted(self._heap, reverse=True)]

    def profile_text(self, lines: int = 25, sort: str = "cumulative") -> str:
        """Return cProfile's top ``lines`` functions (empty without profiling)."""
        if self.profiler is None:
            return ""
        out = io.StringIO()
        stats = pstats.Stats(self.profiler, stream=out)
        stats.sort_stats(sort).print_stats(lines)
        return out.getvalue()
