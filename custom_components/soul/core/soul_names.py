"""How souls' names are compared and which are names at all: ``name_key``, ``shows``, ``mixes_alphabets``, ``plain_words``.

Names are shown in every soul list, the select of a body's soul and the
panel: two souls that look alike pass for each other. ``name_key`` is what a
name looks like (two names with one key are one name); ``mixes_alphabets``
finds a word written in two alphabets whose letters look alike, the
usual way to forge a name ("Аria" with a Cyrillic "А" beside "Aria").
"""

from __future__ import annotations

import re
import unicodedata

import regex

# What a name may hold but does not show: the zero-width (non-)joiner and
# variation selectors (``untrusted`` refuses the other invisible characters).
_UNSEEN_IN_NAMES = re.compile("[\u200c\u200d\ufe00-\ufe0f\U000e0100-\U000e01ef]")

# Alphabets that share letter shapes with Latin or with one another (Unicode
# TR39's confusables are mostly among these). A word holding letters of two
# of them is what TR39 §5.2's "highly restrictive" level refuses: one script
# a word, or Latin with Han, kana, Bopomofo or Hangul (not listed here, so
# "Aria酱" is fine). Our own patterns, on a name of at most 64 characters.
_ALPHABETS = tuple(
    regex.compile(rf"\p{{Script={script}}}")
    for script in ("Latin", "Greek", "Cyrillic", "Armenian", "Cherokee", "Coptic")
)


# A name a body may give a new soul: words (letters, marks, digits), symbols
# such as emoji with their joiners and selectors, spaces, and the marks that
# join words in names ("Jean-Luc", "O'Neil", "R2.D2", "小·爱", "hal_9000").
# Not Markdown or HTML: a body's hint "<img src=x onerror=…> **b**
# [l](javascript:x)" became a shared soul's name, its Assist agent's and
# the "You are …" of its prompt (black box, 2026-11-29).
_WORD = r"\p{L}\p{M}\p{N}\p{So}\U0001f3fb-\U0001f3ff\u200c\u200d"  # skin tones
_PLAIN_NAME = regex.compile(rf"[{_WORD}][{_WORD}\p{{Zs}}'’\-_.·・]*")


def plain_words(name: str) -> bool:
    """Return whether ``name`` is words a body may name a soul with (``_PLAIN_NAME``)."""
    return _PLAIN_NAME.fullmatch(name) is not None


def name_key(name: str) -> str:
    """Return what a soul's name looks like, to compare names as a reader would.

    Compatibility forms fold (NFKC: full-width "ＡＲＩＡ" is "ARIA"), case folds,
    and characters that do not show are dropped. Lookalikes from other scripts
    (a Cyrillic "а" for a Latin "a") stay apart: ``mixes_alphabets`` keeps
    a body from making one.
    """
    return _UNSEEN_IN_NAMES.sub("", unicodedata.normalize("NFKC", name)).casefold()


def mixes_alphabets(name: str) -> bool:
    """Return whether a word of ``name`` has letters of two lookalike alphabets.

    "Аria" (a Cyrillic "А") and "Ωmega" (Greek and Latin) do; "Anna Анна"
    (each word one alphabet) and "小Aria" (Han beside Latin) do not.
    """
    normal = unicodedata.normalize("NFKC", name)
    return any(
        sum(1 for alphabet in _ALPHABETS if alphabet.search(word)) > 1
        for word in normal.split()
    )


def shows(name: str) -> bool:
    """Return whether ``name`` has a character that shows on its own.

    Joiners, variation selectors and combining accents are kept in names
    (words and emoji need them) but are no name alone: a black-box run
    named souls "\u200d\u200d" and "\u0301\u0301", which lists showed blank.
    """
    return any(unicodedata.category(char)[0] not in "MZC" for char in name_key(name))
