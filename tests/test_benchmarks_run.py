"""Every core benchmark still runs (tiny sizes, no timing asserted).

Benchmarks are not run by ``scripts/test``; one broke unnoticed when a cache
it clears was renamed. These runs only check that each exits 0 and prints
its verdict lines; the figures are ``scripts/bench``'s (docs/performance.md).
"""

from __future__ import annotations

from pathlib import Path
import subprocess
import sys

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "command",
    [
        ["benchmarks.emotion_tick", "--souls", "40", "--ticks", "3", "--no-loop"],
        ["benchmarks.journal", "--events", "2000", "--baseline-events", "50",
         "--normal-events", "50", "--appends", "2000"],
        ["benchmarks.intent_filter", "--repeats", "2", "--cold-repeats", "1",
         "--compile-repeats", "1", "--warmup", "0", "--evicted-repeats", "1"],
        ["benchmarks.emotion", "--repeats", "2", "--warmup", "0"],
        ["benchmarks.bench_registry", "--terminals", "20", "--repeats", "1"],
        ["benchmarks.hostile", "--quick", "--rounds", "1", "--classes", "1,2,8,9,10"],
        ["benchmarks.startup", "--bodies", "4", "--souls", "2"],
        ["benchmarks.chat_path", "--rounds", "5", "--warmup", "1", "--bodies", "2",
         "--timeline"],
    ],
    ids=lambda command: command[0].removeprefix("benchmarks."),
)  # fmt: skip
def test_a_benchmark_runs(command: list[str]) -> None:
    done = subprocess.run(  # noqa: S603 - our own modules, fixed arguments
        [sys.executable, "-m", *command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert "PASS" in done.stdout or "FAIL" in done.stdout or "ratio" in done.stdout
    if "--timeline" in command:  # every step marked in the turns
        for label in ("intent filter >", "publish intent_action", "chat <"):
            assert label in done.stdout, done.stdout[-2000:]
