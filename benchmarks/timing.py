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


def percentiles(samples: list[int]) -> tuple[float, float]:
    """Return p50 and p99 of ``samples`` (ns) in microseconds."""
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return cuts[49] / 1000, cuts[98] / 1000


def verdict(ok: bool) -> str:
    """Return PASS or FAIL, as every benchmark prints a goal."""
    return "PASS" if ok else "FAIL"
