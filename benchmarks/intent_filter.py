"""Intent filter latency per command on the dev set, against two baselines.

Every command of the dev set (``tests/data/eval/intents_dev.jsonl``) goes through ``filter_intents``
with the desk-robot catalog, many rounds, and each call is timed on its own; the
figures are the p50 and p99 of those calls. Two baselines are measured in the
same run:

- A, cold compile: the same filter with its compile cache cleared before every
  call, so each call also compiles the catalog (what the first command after a
  catalog change pays). The ratio warm/cold says what the cache saves.
- B, hassil: Home Assistant's sentence matcher with equivalent templates
  (``benchmarks.hassil_desk_robot``) on the same commands. Hassil only matches
  one intent per whole sentence, so the script prints how many commands it
  recognized next to the ratio filter/hassil.

The goal is a warm p99 under 300 µs; ``--check`` makes missing it exit 1. Run
with ``scripts/bench`` or ``.venv/bin/python -m benchmarks.intent_filter``.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import logging
from pathlib import Path
import sys
from typing import Any

from benchmarks.hassil_desk_robot import (
    CATALOG_IDS,
    build_intents,
    recognize_desk_robot,
)
from benchmarks.timing import percentiles, time_calls
from custom_components.soul.core.intent_filter import (
    clear_compile_cache,
    filter_intents,
)
from devtools import intent_eval


def load_cases(eval_dir: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Return the dev cases and one filter request per case (as the scorer sends)."""
    (path, catalog), *_ = intent_eval.sets(eval_dir)
    cases = intent_eval.load_cases(path)
    return cases, [intent_eval.request_for(case, catalog) for case in cases]


def expected_intent(case: dict[str, Any]) -> str | None:
    """Return the catalog intent a case expects first, or None if it expects none."""
    intents = case["expect"].get("intents") or [{}]
    intent_id = intents[0].get("intent_id")
    return None if intent_id is None or intent_id.startswith("sys.") else intent_id


def filter_first_intent(response: dict[str, Any]) -> str | None:
    """Return the first catalog intent the filter would execute, if any.

    A response that decides anything but ``execute_intents`` executes none, even
    when it lists a catalog intent (a rejected "不要开灯", say).
    """
    if (response.get("decision") or {}).get("action") != "execute_intents":
        return None
    for intent in response.get("intents") or []:
        intent_id = intent.get("intent_id")
        if intent_id and not intent_id.startswith("sys."):
            return intent_id
    return None


def score(
    cases: list[dict[str, Any]], firsts: list[str | None]
) -> tuple[int, int, int, int, int]:
    """Compare first intents with the cases.

    Returns (commands expecting an intent, how many got one, how many got the
    expected one, commands expecting none, how many of those got one anyway).
    """
    expected = [expected_intent(case) for case in cases]
    wanted = [(e, f) for e, f in zip(expected, firsts, strict=True) if e is not None]
    unwanted = [f for e, f in zip(expected, firsts, strict=True) if e is None]
    return (
        len(wanted),
        sum(f is not None for _, f in wanted),
        sum(e == f for e, f in wanted),
        len(unwanted),
        sum(f is not None for f in unwanted),
    )


def describe(label: str, scored: tuple[int, int, int, int, int]) -> str:
    """Return one line saying how many commands ``label`` recognized."""
    wanted, got, right, unwanted, spurious = scored
    return (
        f"  {label} recognized {got}/{wanted} commands that expect an intent"
        f" ({right} with the expected first intent); matched {spurious}/{unwanted}"
        " that expect none"
    )


def main() -> None:
    """Measure and print p50/p99 per command, the baselines and the ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eval-dir", type=Path, default=intent_eval.BUNDLED)
    parser.add_argument(
        "--repeats", type=int, default=200, help="rounds over the dev commands"
    )
    parser.add_argument(
        "--cold-repeats",
        type=int,
        default=50,
        help="rounds for baseline A (cold compile)",
    )
    parser.add_argument("--warmup", type=int, default=5, help="untimed rounds")
    parser.add_argument("--budget-us", type=float, default=300.0)
    parser.add_argument(
        "--check", action="store_true", help="exit 1 when the warm p99 misses it"
    )
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    cases, requests = load_cases(args.eval_dir)
    hassil_intents = build_intents()

    filter_calls = [lambda r=r: filter_intents(r) for r in requests]
    hassil_calls = [
        lambda c=r["command"]: recognize_desk_robot(c, hassil_intents) for r in requests
    ]

    # Warm up both (hassil compiles each sentence's regex on first use), then score.
    time_calls(filter_calls, args.warmup)
    time_calls(hassil_calls, args.warmup)
    filter_firsts = [filter_first_intent(filter_intents(r)) for r in requests]
    hassil_firsts: list[str | None] = []
    for r in requests:
        result = recognize_desk_robot(r["command"], hassil_intents)
        hassil_firsts.append(result and CATALOG_IDS[result.intent.name])

    warm = percentiles(time_calls(filter_calls, args.repeats))
    cold = percentiles(time_calls(filter_calls, args.cold_repeats, clear_compile_cache))
    hassil = percentiles(time_calls(hassil_calls, args.repeats))

    def row(label: str, p: tuple[float, float], rounds: int) -> str:
        return (
            f"  {label:<28}: p50 {p[0]:9.1f} µs   p99 {p[1]:9.1f} µs"
            f"   ({rounds * len(requests)} calls)"
        )

    version = importlib.metadata.version("hassil")
    print(f"intent filter: {len(requests)} dev commands, desk-robot catalog")
    print(row("filter, warm compile cache", warm, args.repeats))
    print(row("baseline A, cold compile", cold, args.cold_repeats))
    print(row(f"baseline B, hassil {version}", hassil, args.repeats))
    print(
        f"  ratio warm/cold    : p50 {warm[0] / cold[0]:.2f}x  p99 {warm[1] / cold[1]:.2f}x"
    )
    print(
        f"  ratio filter/hassil: p50 {warm[0] / hassil[0]:.2f}x"
        f"  p99 {warm[1] / hassil[1]:.2f}x"
    )
    print(describe("filter", score(cases, filter_firsts)))
    print(describe("hassil", score(cases, hassil_firsts)))
    ok = warm[1] < args.budget_us
    verdict = "under" if ok else "NOT under"
    print(f"  p99 (warm) {warm[1]:.1f} µs is {verdict} {args.budget_us:g} µs")
    if args.check and not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
