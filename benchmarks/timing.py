"""Timing helpers shared by the benchmarks."""

from __future__ import annotations

from collections.abc import Callable
import gc
import statistics
import time


def time_calls(
    calls: list[Callable[[], object]],
    rounds: int,
    before: Callable[[], object] | None = None,
) -> list[int]:
    """Run every call ``rounds`` times; return each call's duration in ns.

    ``before`` runs ahead of each call, outside the timed span.
    """
    clock = time.perf_counter_ns
    samples: list[int] = []
    gc.collect()
    for _ in range(rounds):
        for call in calls:
            if before is not None:
                before()
            start = clock()
            call()
            samples.append(clock() - start)
    return samples


class CacheEvictor:
    """Pushes a call's code and data out of the CPU's caches, as a busy process does.

    Between two commands Home Assistant runs everything else, so Soul's code
    and data are no longer in the CPU's caches when the next command comes:
    the same command costs several times what it costs when called in a loop.
    Calling an instance writes one byte of every 64-byte line of 8 MiB and
    reads 20,000 dicts (some 10 MiB in all), more than the 2 MiB L2 cache of
    a core and a large part of the shared L3.
    """

    def __init__(self) -> None:
        """Allocate the memory to walk (once)."""
        self._lines = bytearray(8 * 1024 * 1024)
        self._zeros = bytes(len(self._lines) // 64)
        self._objects = [{"k": i, "v": str(i)} for i in range(100_000)]

    def __call__(self) -> None:
        """Walk the memory."""
        self._lines[::64] = self._zeros
        total = 0
        for item in self._objects[::5]:
            total += item["k"]


def percentiles(samples: list[int]) -> tuple[float, float]:
    """Return p50 and p99 of ``samples`` (ns) in microseconds."""
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return cuts[49] / 1000, cuts[98] / 1000


def verdict(ok: bool) -> str:
    """Return PASS or FAIL, as every benchmark prints a goal."""
    return "PASS" if ok else "FAIL"
