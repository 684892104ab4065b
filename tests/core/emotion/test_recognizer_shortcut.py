"""The recognizer's shortcut: a text that cannot hold evidence is neutral unscanned."""

from __future__ import annotations

from typing import Any

import pytest

from custom_components.soul.core.emotion import recognizer
from custom_components.soul.core.emotion.lexicon import COMPILED_STRUCTURES, TABLE
from custom_components.soul.core.emotion.recognizer import analyze_emotion

from ..text_corpus import corpus


def test_the_shortcut_answers_as_the_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = corpus()
    fast = [analyze_emotion(text) for text in texts]
    monkeypatch.setattr(recognizer, "_SKIPS", False)
    slow = [analyze_emotion(text) for text in texts]
    for text, with_shortcut, without in zip(texts, fast, slow, strict=True):
        assert with_shortcut == without, text
    # The shortcut is taken (not only right because never used).
    monkeypatch.setattr(recognizer, "_SKIPS", True)
    skipped = sum(recognizer._no_evidence(recognizer._fold(t)[0]) for t in texts)
    assert skipped > 200


def test_the_shortcut_skips_the_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    def scanned(text: str) -> Any:
        raise AssertionError(f"scanned {text!r}")

    monkeypatch.setattr(recognizer, "_walk", scanned)
    for text in ("帮我把灯变成绿色", "10分钟后提醒我", "摇摇头", "明天早上8点叫我"):
        assert analyze_emotion(text)["emotion"] == "neutral"
    # Anything that holds a surface, a literal or an ASCII letter is scanned.
    for text in ("我好开心", "还是", "气死我了", "hello", "灯！"):
        with pytest.raises(AssertionError, match="scanned"):
            analyze_emotion(text)


def test_every_surface_and_literal_is_seen() -> None:
    """A text made of one surface (or literal) alone is never skipped."""
    for word in [*TABLE, *(literal for literal, *_rest in COMPILED_STRUCTURES)]:
        folded = recognizer._fold(word)[0]
        if word not in folded:
            continue  # folded into something else: the recognizer cannot see it
        assert not recognizer._no_evidence(folded), word
