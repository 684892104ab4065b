"""Which characters a pattern's matches begin with, or must hold, from ``re``'s parse tree.

``safe_regex`` runs no untrusted pattern on a text that holds none of the
characters a match can begin with (``first_chars``) or none of a set of which
every match holds one (``needed_chars``). Both are read from Python's own
parse tree; when the pattern holds anything but literals, sets of literals and
ranges, groups, alternation, repeats and anchors, or ``regex`` and ``re``
read it apart (``read_apart``: POSIX classes, braces), nothing is known.
"""

from __future__ import annotations

import functools
import re

# typeshed has no stubs for re's private parser modules: the tree is walked untyped.
from re import _constants as sre_constants, _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

REPEATS = {
    sre_constants.MAX_REPEAT,
    sre_constants.MIN_REPEAT,
    getattr(sre_constants, "POSSESSIVE_REPEAT", sre_constants.MAX_REPEAT),
}
ATOMIC_GROUP = getattr(sre_constants, "ATOMIC_GROUP", None)
MAX_TREE_DEPTH = 16  # groups nested in groups read of a pattern's tree


class _UnknownError(Exception):
    """``first_chars`` cannot tell which characters a match begins with."""


MAX_FIRST_CHARS = 4096
# ``{m,n}`` repeats; any other brace may be ``regex`` syntax that ``re`` reads as
# literal text (fuzzy matching: "(?:foo){e<=1}").
_REPEAT_BRACES = re.compile(r"\{[0-9]*(?:,[0-9]*)?\}")


def _firsts(items: Any, out: set[str]) -> bool:
    """Add what a match of ``items`` may begin with to ``out``; return if it may be empty.

    Raises ``_UnknownError`` for anything but literals, sets of literals and
    ranges, groups, alternation, repeats and anchors.
    """
    for op, arg in getattr(items, "data", items):
        if op is sre_constants.LITERAL:
            out.add(chr(arg))
            return False
        if op is sre_constants.IN:
            if (chars := _set_chars(arg)) is None:
                raise _UnknownError
            out.update(chars)
            return False
        if op is sre_constants.SUBPATTERN or op is ATOMIC_GROUP:
            body = arg[-1] if op is sre_constants.SUBPATTERN else arg
            if (
                op is sre_constants.SUBPATTERN
                and arg[1] & sre_constants.SRE_FLAG_IGNORECASE
            ):
                raise _UnknownError
            if not _firsts(body, out):
                return False
        elif op is sre_constants.BRANCH:
            empty = False  # every branch adds what it may begin with
            for branch in arg[1]:
                empty = _firsts(branch, out) or empty
            if not empty:
                return False
        elif op in REPEATS:
            low, _high, body = arg
            if not _firsts(body, out) and low >= 1:
                return False
        elif op is not sre_constants.AT:  # anchors take no character
            raise _UnknownError  # ., [^…], lookarounds, backreferences, conditionals
        if len(out) > MAX_FIRST_CHARS:
            raise _UnknownError
    return True


def read_apart(pattern: str) -> bool:
    """Whether ``pattern`` holds what regex and re read apart: POSIX classes, braces."""
    return "[:" in pattern or (
        "{" in pattern and "{" in _REPEAT_BRACES.sub("", pattern)
    )


def firsts_of(
    pattern: str, tree: Any, apart: bool | None = None
) -> frozenset[str] | None:
    """Return ``first_chars(pattern)`` from the pattern's parse tree ``tree``.

    ``apart`` is ``read_apart(pattern)``, when the caller has it.
    """
    if read_apart(pattern) if apart is None else apart:
        return None  # POSIX classes and braces: regex and re read them apart
    if tree.state.flags & sre_constants.SRE_FLAG_IGNORECASE:
        return None
    found: set[str] = set()
    try:
        if _firsts(tree, found):
            return None  # it may match the empty string, anywhere
    except (_UnknownError, RecursionError):
        return None
    return frozenset(found)


@functools.lru_cache(maxsize=4096)
def first_chars(pattern: str) -> frozenset[str] | None:
    """Return every character a match of ``pattern`` can begin with, or None.

    None when the pattern may match the empty string, or when it holds more
    than literals, sets of literals and ranges, groups, alternation, repeats
    and anchors (then nothing is known). A text holding none of these
    characters cannot match, so ``search`` need not run the pattern on it.
    """
    if read_apart(pattern):
        return None  # before parsing: the same answer, sooner
    try:
        tree = sre_parse.parse(pattern)
    except (sre_constants.error, RecursionError, OverflowError, TypeError):
        return None
    return firsts_of(pattern, tree, apart=False)


def _set_chars(items: Any) -> frozenset[str] | None:
    """Return the characters a set (``[…]``) of literals and ranges matches, or None."""
    chars: set[str] = set()
    for kind, value in items:
        if kind is sre_constants.LITERAL:
            chars.add(chr(value))
        elif kind is sre_constants.RANGE and value[1] - value[0] < 256:
            chars.update(map(chr, range(value[0], value[1] + 1)))
        else:  # a negated set, a category (\d, \w: not the same in regex)
            return None
    return frozenset(chars)


def _needed(items: Any, depth: int = 0) -> list[frozenset[str]]:
    """Return character sets of which every match of ``items`` holds one character.

    Each set is enough on its own: a text holding none of its characters
    cannot match. Read from what a match must contain (literals, sets, groups,
    alternation, repeats of at least one); anything else adds nothing.
    """
    if depth > MAX_TREE_DEPTH:
        return []
    found: list[frozenset[str]] = []
    for op, arg in getattr(items, "data", items):
        if op is sre_constants.LITERAL:
            found.append(frozenset((chr(arg),)))
        elif op is sre_constants.IN:
            if (chars := _set_chars(arg)) is not None:
                found.append(chars)
        elif op is sre_constants.SUBPATTERN:
            if not arg[1] & sre_constants.SRE_FLAG_IGNORECASE:
                found.extend(_needed(arg[-1], depth + 1))
        elif op is ATOMIC_GROUP:
            found.extend(_needed(arg, depth + 1))
        elif op in REPEATS:
            if arg[0] >= 1:
                found.extend(_needed(arg[2], depth + 1))
        elif op is sre_constants.BRANCH:
            # Every branch holds one of its own sets: their union is needed.
            # Each branch takes the set that adds the fewest new characters.
            union: set[str] = set()
            for branch in arg[1]:
                options = _needed(branch, depth + 1)
                if not options:
                    break
                if not any(option <= union for option in options):
                    chosen: frozenset[str] = min(
                        options, key=lambda o: (len(o - union), len(o))
                    )
                    union.update(chosen)
            else:
                found.append(frozenset(union))
        # Anything else (., [^…], anchors, lookarounds, backreferences) needs no
        # character that is known.
    return found


def needed_chars(pattern: str, tree: Any | None = None) -> frozenset[str] | None:
    """Return characters of which every match of ``pattern`` holds one, or None.

    None when nothing is known: the pattern may match without any particular
    character, or ``regex`` and ``re`` read it apart, or it ignores case. A
    text holding none of them cannot match, so ``search`` need not run it.
    """
    if read_apart(pattern):
        return None
    try:
        if tree is None:
            tree = sre_parse.parse(pattern)
        if tree.state.flags & sre_constants.SRE_FLAG_IGNORECASE:
            return None
        options = _needed(tree)
    except (sre_constants.error, RecursionError, OverflowError, TypeError):
        return None
    if not options:
        return None
    needed = min(options, key=len)
    return needed if len(needed) <= MAX_FIRST_CHARS else None
