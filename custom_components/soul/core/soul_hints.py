"""What a body's ``soul_hint`` asks for: a soul it names, or a new soul (HA-free).

A terminal's first connection may carry a ``soul_hint`` (§3.2): a soul's
id, name or MBTI type, or a word for a temperament ("friendly"). ``read_hint``
says which soul the hint picks, or which new soul it asks for; ``taken`` and
``forged`` say when a new soul must not be made. ``SoulHub.first_connection``
keeps what is stateful: which terminals were seen and how often souls are
made from hints.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .emotion.persona import is_mbti
from .soul import Soul
from .soul_names import mixes_alphabets, name_key, plain_words, shows

# A ``soul_hint`` word → the MBTI type of the soul it creates (docs/emotion.md).
HINT_TYPES: dict[str, str] = {
    "friendly": "ESFJ",
    "warm": "ESFJ",
    "caring": "ISFJ",
    "gentle": "ISFP",
    "calm": "ISTJ",
    "serious": "ISTJ",
    "professional": "ESTJ",
    "cheerful": "ENFP",
    "playful": "ENFP",
    "lively": "ESFP",
    "energetic": "ESFP",
    "curious": "ENTP",
    "witty": "ENTP",
    "wise": "INFJ",
    "thoughtful": "INFJ",
    "dreamy": "INFP",
    "logical": "INTP",
    "analytical": "INTJ",
    "confident": "ENTJ",
    "practical": "ISTP",
}
DEFAULT_HINT_TYPE = "ENFP"


@dataclass(frozen=True, slots=True)
class HintDecision:
    """What a terminal's first ``soul_hint`` asks for: an existing soul or a new one."""

    soul_id: str | None = None
    name: str | None = None
    mbti: str | None = None


def read_hint(hint: str, souls: Iterable[Soul]) -> HintDecision:
    """Return the soul of ``souls`` that ``hint`` names, or the new soul it asks for.

    A soul whose id (any case) or name (as it looks, ``name_key``) is the
    hint; else, for an MBTI type, the first soul of that type or a new soul
    named after the type; else a new soul named after the hint, its type
    from ``HINT_TYPES`` (``DEFAULT_HINT_TYPE`` for another word).
    """
    folded = hint.casefold()
    looks = name_key(hint)
    souls = list(souls)
    for soul in souls:
        if folded == soul.soul_id.casefold() or looks == name_key(soul.name):
            return HintDecision(soul_id=soul.soul_id)
    if is_mbti(hint):
        kind = hint.upper().split("-")[0]
        return next(
            (
                HintDecision(soul_id=soul.soul_id)
                for soul in souls
                if soul.mbti.split("-")[0] == kind
            ),
            HintDecision(name=hint.upper(), mbti=hint.upper()),
        )
    return HintDecision(name=hint, mbti=HINT_TYPES.get(folded, DEFAULT_HINT_TYPE))


def taken(name: str, souls: Iterable[Soul]) -> bool:
    """Return whether a new soul named ``name`` would pass for one of ``souls``.

    Its name is another soul's id or looks like another soul's name: a
    same-named shared soul beside a user's private one would pass for it.
    """
    looks = name_key(name)
    return any(
        looks in (soul.soul_id.casefold(), name_key(soul.name)) for soul in souls
    )


def forged(name: str) -> bool:
    """Return whether ``name`` is no name a body may give: not words, blank, or forging one.

    Markup or punctuation beyond what joins words in names is not a name
    (``plain_words``). A lookalike of a name (a Cyrillic "А" in "Aria") has
    a key of its own (``name_key`` keeps scripts apart), so ``taken`` does
    not find it.
    """
    return not plain_words(name) or mixes_alphabets(name) or not shows(name)
