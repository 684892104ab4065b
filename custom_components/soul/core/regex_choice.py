"""Untrusted patterns that are only a choice among literal strings.

Most slot patterns of a catalog read ``(开灯|打开灯|关灯|关掉)``: groups and
alternatives of plain characters, nothing repeated. Such a pattern describes
a finite set of strings; matching it at one place of a text visits each node
of its tree at most once per way through what comes before it, so the most
steps a search can take follow from the pattern alone (times the places of
the text: linear in the text): ``choice_steps`` counts them from Python's
parse tree. ``safe_regex.search`` runs such a
pattern on ``re`` (no timeout to arm) when that count, times the places of
the text, is small; any other pattern, or a long text, runs on ``regex``
with its timeout.
"""

from __future__ import annotations

from re import _constants as sre_constants  # type: ignore[attr-defined]
from typing import Any

# The steps one search on ``re`` may take: some 50 µs at worst (2-3 ns each).
MAX_CHOICE_STEPS = 20_000
_LITERAL = sre_constants.LITERAL
_IN = sre_constants.IN
_SUBPATTERN = sre_constants.SUBPATTERN
_BRANCH = sre_constants.BRANCH


def _walk(items: Any, limit: int) -> tuple[int, int] | None:
    """Return (steps, paths) of a sequence of literal choices, or None.

    ``steps`` is how many nodes of the tree a backtracking match visits, at
    most, at one place of the text (a character or a set tested, a group or
    an alternative entered: an empty alternative costs a step too);
    ``paths`` how many ways through the sequence it may try. None: the
    sequence holds anything else, or costs over ``limit``.
    """
    steps, paths = 0, 1
    for op, arg in getattr(items, "data", items):
        if op is _LITERAL:
            item_steps, item_paths = 1, 1
        elif op is _IN:  # "(a|b)" parses as a set of literals
            if any(kind is not _LITERAL for kind, _value in arg):
                return None
            item_steps, item_paths = 1, 1
        elif op is _SUBPATTERN:
            if arg[1] or arg[2]:  # inline flags
                return None
            if (inner := _walk(arg[-1], limit)) is None:
                return None
            item_steps, item_paths = 1 + inner[0], inner[1]
        elif op is _BRANCH:
            item_steps = item_paths = 0
            for branch in arg[1]:
                if (inner := _walk(branch, limit)) is None:
                    return None
                item_steps += 1 + inner[0]
                item_paths += inner[1]
        else:  # repeats, classes, anchors, lookarounds, references
            return None
        # Each way through what came before tries this item again.
        steps += paths * item_steps
        paths *= item_paths
        if steps > limit:
            return None
    return steps, paths


def choice_steps(tree: Any) -> int | None:
    """Return the steps of one match attempt of a literal-choice pattern, or None.

    ``tree`` is ``re``'s parse of a pattern whose only flag is the default
    (``re.UNICODE``); anything but literals, sets of literals, groups without
    flags and alternatives gives None, as does a count over
    ``MAX_CHOICE_STEPS``.
    """
    if tree.state.flags != sre_constants.SRE_FLAG_UNICODE:
        return None
    try:
        walked = _walk(tree, MAX_CHOICE_STEPS)
    except RecursionError:
        return None
    return None if walked is None else max(1, walked[0])
