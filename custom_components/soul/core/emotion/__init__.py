"""User emotion (spec §3.8): the 15 labels and a rule-and-lexicon recognizer.

``analyze_emotion(text)`` returns ``{"emotion", "p", "a", "d", "intensity"}``;
``labels`` holds the labels, their expression groups and PAD prototypes.
"""

from .labels import GROUP_OF, LABELS, PAD, PROTOTYPE, Emotion, Group, group_of
from .recognizer import analyze_emotion

__all__ = [
    "GROUP_OF",
    "LABELS",
    "PAD",
    "PROTOTYPE",
    "Emotion",
    "Group",
    "analyze_emotion",
    "group_of",
]
