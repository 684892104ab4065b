"""Score the user-emotion recognizer on an evaluation set (``tests/data/eval/README.md``).

``python -m devtools.emotion_eval`` scores the bundled dev set;
``--eval-dir DIR`` scores every ``emotions_*.jsonl`` in another directory,
e.g. ``../shared/eval``; ``-v`` prints every miss. A case is ``text`` and its
``emotion``; it is scored by exact label and by expression group.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
import json
from pathlib import Path

from custom_components.soul.core.emotion import analyze_emotion, group_of

BUNDLED = Path(__file__).resolve().parents[1] / "tests" / "data" / "eval"
GROUP_REQUIRED = 0.90
EXACT_REQUIRED = 0.75


@dataclass(frozen=True, slots=True)
class Score:
    """How a predictor did on a set of cases."""

    exact: float
    group: float
    failures: tuple[str, ...]

    @property
    def passed(self) -> bool:
        """Return whether both required accuracies are met."""
        return self.group >= GROUP_REQUIRED and self.exact >= EXACT_REQUIRED


def load_cases(path: Path) -> list[dict[str, str]]:
    """Return the cases of a JSON-lines file."""
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def recognizer_label(text: str) -> str:
    """Return the label ``analyze_emotion`` gives a text."""
    return str(analyze_emotion(text)["emotion"])


def score(
    cases: list[dict[str, str]], predict: Callable[[str], str] = recognizer_label
) -> Score:
    """Score ``predict`` (text → label) on ``cases`` by exact label and by group."""
    exact = group = 0
    failures = []
    for case in cases:
        got, want = predict(case["text"]), case["emotion"]
        exact += got == want
        group += group_of(got) == group_of(want)
        if got != want:
            failures.append(f"{case['text']}: {got} (expected {want})")
    total = len(cases) or 1
    return Score(exact / total, group / total, tuple(failures))


def main() -> None:
    """Print the scores of every emotion set in a directory."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eval-dir", type=Path, default=BUNDLED)
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    for path in sorted(args.eval_dir.glob("emotions_*.jsonl")):
        cases = load_cases(path)
        result = score(cases)
        print(
            f"{path.name}: exact {result.exact:.1%}, group {result.group:.1%} "
            f"({len(cases)} cases) — {'pass' if result.passed else 'FAIL'}"
        )
        if args.verbose:
            for failure in result.failures:
                print(f"  {failure}")


if __name__ == "__main__":
    main()
