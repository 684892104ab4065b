"""One regular expression for many literal words, built as a character trie.

``re`` tries the branches of an alternation one by one, so ``a|b|…`` over
thousands of words costs thousands of tests at every position of a text. The
same words as a trie cost one test per character of the longest word there;
the first characters are further split into buckets behind character-class
lookaheads. Branches are ordered so the longest word at a position wins. Used
by the emotion lexicon and by the intent filter's catalog keywords.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
import re

BUCKETS = 8

type Boundary = Callable[[str], str]
# A character trie: each character leads to the next node; "" marks a word's end.
type Trie = dict[str, Trie]


def _no_boundary(_char: str) -> str:
    return ""


def trie(words: Iterable[str]) -> Trie:
    """Return the character trie of ``words``; the key "" marks a word's end."""
    root: Trie = {}
    for word in words:
        node = root
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}
    return root


def _emit(node: Trie, last: str, end: Boundary) -> str:
    """Return the regex of a trie node reached by ``last``, longest match first."""
    branches = [
        re.escape(char) + _emit(child, char, end)
        for char, child in node.items()
        if char
    ]
    if "" in node:
        branches.append(end(last))
    if len(branches) == 1:
        return branches[0]
    return "(?:" + "|".join(branches) + ")"


def alternation(
    words: Iterable[str],
    *,
    start: Boundary = _no_boundary,
    end: Boundary = _no_boundary,
    buckets: int = BUCKETS,
) -> str:
    """Return the source of a regex matching any of ``words`` (longest first).

    ``start(first)`` is inserted after a word's first character and
    ``end(last)`` after its last one (word boundaries for Latin words, say).
    An empty list gives a pattern that never matches.
    """
    root = trie(words)
    firsts = sorted(char for char in root if char)
    groups = []
    for bucket in range(buckets):
        chars = firsts[bucket::buckets]
        if not chars:
            continue
        branches = "|".join(
            re.escape(char) + start(char) + _emit(root[char], char, end)
            for char in chars
        )
        group_class = "".join(re.escape(char) for char in chars)
        groups.append(f"(?=[{group_class}])(?:{branches})")
    return "|".join(groups) if groups else "(?!)"
