"""The public emotion dev set (``tests/data/eval/emotions_dev.jsonl``), scored by its README.

A case passes on its exact label; the expression group (anger/disgust/frustration
→ angry, anxiety/fear → afraid, sadness/disappointment/boredom → sad,
joy/gratitude/relief → happy, excitement/surprise → excited, calm/neutral →
calm) is scored too. Required: group ≥ 90 %, exact ≥ 75 %.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from custom_components.soul.core.emotion import LABELS, group_of
from devtools.emotion_eval import (
    BUNDLED,
    EXACT_REQUIRED,
    GROUP_REQUIRED,
    load_cases,
    recognizer_label,
    score,
)

SHARED = Path(__file__).resolve().parents[4] / "shared" / "eval"
DEV = BUNDLED / "emotions_dev.jsonl"


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
