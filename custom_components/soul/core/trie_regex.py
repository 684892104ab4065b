"""One regular expression for many literal words, built as a character trie.

``re`` tries the branches of an alternation one by one, so ``a|b|…`` over
thousands of words costs thousands of tests at every position of a text. The
same words as a trie cost one test per character of the longest word there;
the first characters are further split into buckets behind character-class
lookaheads. Branches are ordered so the longest word at a position wins. Used
by the emotion lexicon, the intent filter's catalog keywords, decision
markers and built-in entities.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
import re
from typing import Any

try:  # re's own parser and compiler: ``compile_keywords`` hands them a parse tree
    from re import (  # type: ignore[attr-defined]
        _compiler as _sre_compiler,
        _constants as _sre_constants,
        _parser as _sre_parse,
    )

    _LITERAL = _sre_constants.LITERAL
    _IN = _sre_constants.IN
    _BRANCH = _sre_constants.BRANCH
    _ASSERT = _sre_constants.ASSERT
    _SUBPATTERN = _sre_constants.SUBPATTERN
except (ImportError, AttributeError):  # pragma: no cover - another Python
    _sre_parse = None

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
            child = node.get(char)
            if child is None:  # (setdefault would make a dict for every character)
                child = node[char] = {}
            node = child
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
    return _source(trie(words), start=start, end=end, buckets=buckets)


def _source(
    root: Trie,
    *,
    start: Boundary = _no_boundary,
    end: Boundary = _no_boundary,
    buckets: int = BUCKETS,
) -> str:
    """Return ``alternation`` of the words of the trie ``root``."""
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


def _branch_items(node: Trie, state: Any) -> list[tuple[Any, Any]]:
    """Return what ``re`` parses ``_emit(node, …)`` into (no boundaries).

    A chain of single children is a run of literals; a node with several
    branches is an alternation (a character set when every branch is one
    character), unpacked into the sequence as ``re``'s parser unpacks a
    non-capturing group.
    """
    items: list[tuple[Any, Any]] = []
    while True:
        chars = [char for char in node if char]
        ends = "" in node
        if len(chars) + ends != 1:
            break
        if ends:  # a word's end and nothing more: ""
            return items
        items.append((_LITERAL, ord(chars[0])))
        node = node[chars[0]]
    items.extend(_alternation_items(node, chars, state))
    return items


def _alternation_items(
    node: Trie, chars: list[str], state: Any
) -> list[tuple[Any, Any]]:
    """Return the parse of ``(?:c1…|c2…|…)`` for ``chars`` of ``node`` (and its end)."""
    branches = [
        [(_LITERAL, ord(char)), *_branch_items(node[char], state)] for char in chars
    ]
    if len(branches) == 1 and "" not in node:
        return branches[0]  # one branch: no alternation
    if "" in node:
        branches.append([])
    elif all(len(branch) == 1 for branch in branches):
        return [(_IN, [branch[0] for branch in branches])]
    return [(_BRANCH, (None, [_sre_parse.SubPattern(state, b) for b in branches]))]


def compile_keywords(
    words: Iterable[str], *, buckets: int = BUCKETS
) -> re.Pattern[str]:
    """Return ``re.compile("(?=(" + alternation(words, buckets=buckets) + "))")``.

    Built as the parse tree ``re``'s parser would make of that source, so the
    pattern is the same program (a test compares the two), without writing
    the source of thousands of words and parsing it again: a catalog's
    keywords compile in a third of the time. Its ``pattern`` attribute is None.
    """
    return compile_trie(trie(words), buckets=buckets)


def compile_trie(root: Trie, *, buckets: int = BUCKETS) -> re.Pattern[str]:
    """Return ``compile_keywords`` of the words of the trie ``root``."""
    firsts = sorted(char for char in root if char)
    if not firsts or _sre_parse is None:
        return re.compile("(?=(" + _source(root, buckets=buckets) + "))")
    state = _sre_parse.State()
    state.flags = 0
    state.str = None
    group = state.opengroup(None)
    groups = []
    for bucket in range(buckets):
        chars = firsts[bucket::buckets]
        if not chars:
            continue
        ahead = (
            [(_LITERAL, ord(chars[0]))]
            if len(chars) == 1
            else [(_IN, [(_LITERAL, ord(char)) for char in chars])]
        )
        groups.append(
            [
                (_ASSERT, (1, _sre_parse.SubPattern(state, ahead))),
                *_alternation_items(root, chars, state),
            ]
        )
    body = (
        _sre_parse.SubPattern(state, groups[0])
        if len(groups) == 1
        else _sre_parse.SubPattern(
            state,
            [(_BRANCH, (None, [_sre_parse.SubPattern(state, g) for g in groups]))],
        )
    )
    state.closegroup(group, body)
    tree = _sre_parse.SubPattern(
        state,
        [
            (
                _ASSERT,
                (1, _sre_parse.SubPattern(state, [(_SUBPATTERN, (group, 0, 0, body))])),
            )
        ],
    )
    state.flags = _sre_parse.fix_flags("", state.flags)
    return _sre_compiler.compile(tree)  # type: ignore[no-any-return]
