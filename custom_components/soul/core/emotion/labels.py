"""The 15 emotion labels of §3.8, their expression groups and PAD prototypes.

PAD values are (pleasure, arousal, dominance) in [-1, 1]. Where the emotion
is one of ALMA's OCC emotions (Gebhard 2005, "ALMA – A Layered Model of
Affect", table 1) its values are ALMA's; the others are placed in the
Mehrabian octant the emotion belongs to (Mehrabian 1996) with magnitudes
comparable to their neighbours. See ``docs/emotion.md``.
"""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple


class Emotion(StrEnum):
    """A recognised user emotion (§3.8's 15 labels)."""

    ANGER = "anger"
    DISGUST = "disgust"
    FRUSTRATION = "frustration"
    ANXIETY = "anxiety"
    FEAR = "fear"
    SADNESS = "sadness"
    DISAPPOINTMENT = "disappointment"
    BOREDOM = "boredom"
    JOY = "joy"
    GRATITUDE = "gratitude"
    RELIEF = "relief"
    EXCITEMENT = "excitement"
    SURPRISE = "surprise"
    CALM = "calm"
    NEUTRAL = "neutral"


class Group(StrEnum):
    """The expression groups of §3.8's body mapping."""

    ANGRY = "angry"
    AFRAID = "afraid"
    SAD = "sad"
    HAPPY = "happy"
    EXCITED = "excited"
    CALM = "calm"


class PAD(NamedTuple):
    """A point in pleasure-arousal-dominance space."""

    p: float
    a: float
    d: float


def rounded(value: float, digits: int) -> float:
    """Round a reported coordinate; a tiny negative becomes 0.0, never -0.0."""
    return round(value, digits) + 0.0


LABELS: tuple[str, ...] = tuple(e.value for e in Emotion)

GROUP_OF: dict[Emotion, Group] = {
    Emotion.ANGER: Group.ANGRY,
    Emotion.DISGUST: Group.ANGRY,
    Emotion.FRUSTRATION: Group.ANGRY,
    Emotion.ANXIETY: Group.AFRAID,
    Emotion.FEAR: Group.AFRAID,
    Emotion.SADNESS: Group.SAD,
    Emotion.DISAPPOINTMENT: Group.SAD,
    Emotion.BOREDOM: Group.SAD,
    Emotion.JOY: Group.HAPPY,
    Emotion.GRATITUDE: Group.HAPPY,
    Emotion.RELIEF: Group.HAPPY,
    Emotion.EXCITEMENT: Group.EXCITED,
    Emotion.SURPRISE: Group.EXCITED,
    Emotion.CALM: Group.CALM,
    Emotion.NEUTRAL: Group.CALM,
}

# Full-intensity PAD of each label (the recognizer scales it by intensity).
PROTOTYPE: dict[Emotion, PAD] = {
    Emotion.ANGER: PAD(-0.51, 0.59, 0.25),  # ALMA anger
    Emotion.DISGUST: PAD(-0.60, 0.35, 0.11),  # ALMA hate/disliking range
    Emotion.FRUSTRATION: PAD(-0.55, 0.45, -0.30),  # octant -P +A -D
    Emotion.ANXIETY: PAD(-0.45, 0.50, -0.35),  # octant -P +A -D ("anxious")
    Emotion.FEAR: PAD(-0.64, 0.60, -0.43),  # ALMA fear
    Emotion.SADNESS: PAD(-0.40, -0.20, -0.50),  # ALMA distress
    Emotion.DISAPPOINTMENT: PAD(-0.30, 0.10, -0.40),  # ALMA disappointment
    Emotion.BOREDOM: PAD(-0.30, -0.50, -0.20),  # octant -P -A -D ("bored")
    Emotion.JOY: PAD(0.40, 0.20, 0.10),  # ALMA joy
    Emotion.GRATITUDE: PAD(0.40, 0.20, -0.30),  # ALMA gratitude
    Emotion.RELIEF: PAD(0.20, -0.30, 0.40),  # ALMA relief
    Emotion.EXCITEMENT: PAD(0.60, 0.60, 0.35),  # octant +P +A +D ("exuberant")
    Emotion.SURPRISE: PAD(0.20, 0.65, -0.10),  # high arousal, mildly positive
    Emotion.CALM: PAD(0.30, -0.45, 0.20),  # octant +P -A +D ("relaxed")
    Emotion.NEUTRAL: PAD(0.0, 0.0, 0.0),
}

NEGATIVE: frozenset[Emotion] = frozenset(e for e, pad in PROTOTYPE.items() if pad.p < 0)


def group_of(label: str) -> str:
    """Return the expression group of a label (``"calm"`` for unknown labels)."""
    try:
        return GROUP_OF[Emotion(label)].value
    except ValueError:
        return Group.CALM.value
