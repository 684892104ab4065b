"""The public emotion dev set (``tests/data/eval/emotions_dev.jsonl``), scored by its README.

A case passes on its exact label; the expression group (anger/disgust/frustration
→ angry, anxiety/fear → afraid, sadness/disappointment/boredom → sad,
joy/gratitude/relief → happy, excitement/surprise → excited, calm/neutral →
calm) is scored too. Required: group ≥ 90 %, exact ≥ 75 %.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
import json
from pathlib import Path

import pytest

from custom_components.soul.core.emotion import LABELS, analyze_emotion, group_of

BUNDLED = Path(__file__).resolve().parents[2] / "data" / "eval"
SHARED = Path(__file__).resolve().parents[4] / "shared" / "eval"
DEV = BUNDLED / "emotions_dev.jsonl"
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


def score(cases: list[dict[str, str]], predict: Callable[[str], str]) -> Score:
    """Score ``predict`` (text → label) on ``cases`` by the README's two rules."""
    exact = group = 0
    failures = []
    for case in cases:
        got, want = predict(case["text"]), case["emotion"]
        exact += got == want
        group += group_of(got) == group_of(want)
        if got != want:
            failures.append(f"{case['text']}: {got} (expected {want})")
    total = len(cases)
    return Score(exact / total, group / total, tuple(failures))


def recognizer_label(text: str) -> str:
    """The label ``analyze_emotion`` gives a text."""
    return str(analyze_emotion(text)["emotion"])


def test_dev_set_meets_the_required_accuracy() -> None:
    cases = load_cases(DEV)
    assert len(cases) >= 25
    result = score(cases, recognizer_label)
    assert result.group >= GROUP_REQUIRED, result.failures
    assert result.exact >= EXACT_REQUIRED, result.failures


def test_dev_set_labels_are_known() -> None:
    assert {case["emotion"] for case in load_cases(DEV)} <= set(LABELS)


def test_scorer_rejects_wrong_predictors() -> None:
    """The scorer itself can fail: a constant or shifted predictor does."""
    cases = load_cases(DEV)
    labels = {case["text"]: case["emotion"] for case in cases}
    assert score(cases, labels.__getitem__).passed
    assert score(cases, labels.__getitem__).exact == 1.0
    assert not score(cases, lambda _text: "neutral").passed
    # Right group, wrong label: the exact rule fails on its own.
    same_group = {
        "anger": "disgust", "disgust": "frustration", "frustration": "anger",
        "anxiety": "fear", "fear": "anxiety", "sadness": "boredom",
        "disappointment": "sadness", "boredom": "disappointment", "joy": "relief",
        "gratitude": "joy", "relief": "gratitude", "excitement": "surprise",
        "surprise": "excitement", "calm": "neutral", "neutral": "calm",
    }  # fmt: skip
    shifted = score(cases, lambda text: same_group[labels[text]])
    assert shifted.group == 1.0
    assert shifted.exact == 0.0
    assert not shifted.passed
    # Right label for a few, another group for the rest: the group rule fails.
    other_group = {"angry": "joy", "afraid": "calm", "sad": "excitement"}
    wrong = score(
        cases,
        lambda text: other_group.get(group_of(labels[text]), "anger"),
    )
    assert wrong.group < GROUP_REQUIRED
    assert not wrong.passed


def test_bundled_copy_matches_the_shared_set() -> None:
    shared = SHARED / "emotions_dev.jsonl"
    if not shared.is_file():
        pytest.skip("no ../shared/eval/emotions_dev.jsonl next to this checkout")
    assert DEV.read_bytes() == shared.read_bytes()
