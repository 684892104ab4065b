"""Emotion recognizer latency per text on the dev set, against two baselines.

Every text of the dev set (``tests/data/eval/emotions_dev.jsonl``) goes through
``analyze_emotion`` many rounds, each call timed on its own; the figures are
the p50 and p99 of those calls. Two baselines run on the same texts in the
same run:

- A, naive scan: ``any(word in text for word in cue_words)`` over the same
  lexicon's cue words (no negation, degree or clauses; it only says whether
  some cue occurs), after lower-casing the text;
- B, ``str.lower``: the cheapest thing one can do to a text, as a floor.

The ratios say what the full recognizer costs relative to each. The goal is a
p99 under 100 µs; ``--check`` makes missing it exit 1. Run with
``scripts/bench`` or ``.venv/bin/python -m benchmarks.emotion``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
import sys

from benchmarks.timing import percentiles, time_calls
from custom_components.soul.core.emotion import analyze_emotion
from custom_components.soul.core.emotion.lexicon import CUE_WORDS
from devtools.emotion_eval import BUNDLED, load_cases, score


def naive_scan(text: str, words: tuple[str, ...] = CUE_WORDS) -> bool:
    """Baseline A: whether any cue word occurs in the lower-cased text."""
    lowered = text.lower()
    return any(word in lowered for word in words)


def main() -> None:
    """Measure and print p50/p99 per text, the baselines and the ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eval-dir", type=Path, default=BUNDLED)
    parser.add_argument(
        "--repeats", type=int, default=400, help="rounds over the dev texts"
    )
    parser.add_argument("--warmup", type=int, default=5, help="untimed rounds")
    parser.add_argument("--budget-us", type=float, default=100.0)
    parser.add_argument(
        "--check", action="store_true", help="exit 1 when the p99 misses it"
    )
    args = parser.parse_args()
    cases = load_cases(args.eval_dir / "emotions_dev.jsonl")
    texts = [case["text"] for case in cases]

    recognizer = [lambda t=t: analyze_emotion(t) for t in texts]
    naive = [lambda t=t: naive_scan(t) for t in texts]
    lower = [lambda t=t: t.lower() for t in texts]
    for calls in (recognizer, naive, lower):
        time_calls(calls, args.warmup)

    full = percentiles(time_calls(recognizer, args.repeats))
    scan = percentiles(time_calls(naive, args.repeats))
    floor = percentiles(time_calls(lower, args.repeats))

    def row(label: str, p: tuple[float, float]) -> str:
        return (
            f"  {label:<30}: p50 {p[0]:8.2f} µs   p99 {p[1]:8.2f} µs"
            f"   ({args.repeats * len(texts)} calls)"
        )

    def ratio(label: str, a: tuple[float, float], b: tuple[float, float]) -> str:
        return f"  {label:<30}: p50 {a[0] / b[0]:7.2f}x   p99 {a[1] / b[1]:7.2f}x"

    result = score(cases)
    exact, group = result.exact, result.group
    print(f"emotion: {len(texts)} dev texts, {len(CUE_WORDS)} cue words")
    print(row("analyze_emotion", full))
    print(row("baseline A, naive cue scan", scan))
    print(row("baseline B, str.lower", floor))
    print(ratio("ratio recognizer/naive scan", full, scan))
    print(ratio("ratio recognizer/str.lower", full, floor))
    print(f"  accuracy: exact {exact:.1%}, group {group:.1%}")
    ok = full[1] < args.budget_us
    verdict = "under" if ok else "NOT under"
    print(f"  p99 {full[1]:.1f} µs is {verdict} {args.budget_us:g} µs")
    if args.check and not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
