"""The text variants rules are matched against (locales: ``core.language``).

Every variant keeps a map back to the original command, so spans reported to
callers always index the command as sent:

* ``folded`` — lower case, Traditional Chinese converted to Simplified with
  ``zhconv-rs`` (OpenCC/MediaWiki tables), one character per character;
* ``compact`` — ``folded`` with Chinese verb reduplication and separable-verb
  infixes removed ("摇摇头" → "摇头", "点个头" / "点一下头" → "点头",
  "看一看" → "看"), so catalogs written with the plain verb still match.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ..language import to_simplified

# Numerals and demonstratives: "一个", "这个", "几下" are not infixes.
_NOT_INFIX_HOST = set("一二三四五六七八九十两几这那哪每半多某整零百千万个")
# "摇摇头", "看一看", "摇了摇头"; "点个头", "点一下头", "点了一下头".
_REDUPLICATION = re.compile(r"([\u4e00-\u9fff])(?:[一了])?\1")
# "点个头", "点三下头", "关上灯", "叫醒我": the verb and its object, without what
# sits between them.
_INFIX_MARKS = frozenset("个了下上掉醒")  # what ``_INFIX`` takes out
_INFIX = re.compile(
    r"([\u4e00-\u9fff])(?:了一下|[一两二三四五六七八九十几]下|一个|了个|个|了|上|掉|醒)"
    r"(?=[\u4e00-\u9fff])"
)


def _lower(text: str) -> str:
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return "".join(c if len(c.lower()) != 1 else c.lower() for c in text)


class Variant:
    """A rewritten copy of a clause; ``origin[i]`` is where its ``i``-th character came from.

    ``origin`` is a ``range`` while the copy keeps one character per character
    of the clause (the clause itself, its folded form), a tuple once a rewrite
    took characters out. A plain class: a clause makes up to three per command.
    """

    __slots__ = ("origin", "text")

    def __init__(self, text: str, origin: range | tuple[int, ...]) -> None:
        """Keep the text and where each of its characters came from."""
        self.text = text
        self.origin = origin

    def __eq__(self, other: object) -> bool:
        """Equal when the texts and the origins are (a range equals its tuple)."""
        if not isinstance(other, Variant):
            return NotImplemented
        return self.text == other.text and tuple(self.origin) == tuple(other.origin)

    def __hash__(self) -> int:
        """Hash by text and origins."""
        return hash((self.text, tuple(self.origin)))

    def __repr__(self) -> str:
        """Show the text and its origins."""
        return f"Variant(text={self.text!r}, origin={tuple(self.origin)!r})"

    def span(self, start: int, end: int) -> tuple[int, int]:
        """Map ``[start, end)`` of this variant back onto the original command."""
        origin = self.origin
        if start >= len(origin):
            last = origin[-1] + 1 if origin else 0
            return last, last
        # Lower-casing may lengthen the text ("İ" is "i̇"): an end past the
        # origins is the original's end.
        return origin[start], origin[min(max(start, end - 1), len(origin) - 1)] + 1


def _rewrite(
    variant: Variant, pattern: re.Pattern[str], keep_group: int = 1
) -> Variant:
    """Replace every match of ``pattern`` by its group ``keep_group``, tracking origins."""
    text, origin = variant.text, variant.origin
    pieces: list[str] = []
    origins: list[int] = []
    position = 0
    for match in pattern.finditer(text):
        pieces.append(text[position : match.start()])
        origins.extend(origin[position : match.start()])
        kept_start, kept_end = match.span(keep_group)
        pieces.append(text[kept_start:kept_end])
        origins.extend(origin[kept_start:kept_end])
        position = match.end()
    if not pieces:
        return variant
    pieces.append(text[position:])
    origins.extend(origin[position:])
    return Variant("".join(pieces), tuple(origins))


def _compact_infix(variant: Variant) -> Variant:
    text = variant.text
    if _INFIX_MARKS.isdisjoint(text):
        return variant
    pieces: list[str] = []
    origins: list[int] = []
    position = 0
    for match in _INFIX.finditer(text):
        if match.group(1) in _NOT_INFIX_HOST:
            continue
        keep_end = match.end(1)
        pieces.append(text[position:keep_end])
        origins.extend(variant.origin[position:keep_end])
        position = match.end()
    if not pieces:
        return variant
    pieces.append(text[position:])
    origins.extend(variant.origin[position:])
    return Variant("".join(pieces), tuple(origins))


class Clause(NamedTuple):
    """The forms of one clause that rules are tried against, most literal first."""

    original: Variant
    folded: Variant
    compact: Variant
    variants: tuple[Variant, ...]  # distinct, in the order rules try them
    # The characters of ``folded`` and of the lower case of ``original`` (what
    # the keyword scan reads), read once: every scan of the clause skips by
    # testing sets of characters against them, not the texts again.
    chars: set[str]


def make_clause(command: str, start: int, end: int, locale: str = "zh-CN") -> Clause:
    """Build the variants of ``command[start:end]`` with origins in ``command``.

    Japanese keeps its kanji: "開けて" is "open", not Simplified "开けて".
    """
    text = command[start:end]
    original = Variant(text, range(start, end))
    lowered = plain = text.lower()  # ``_lower``, inline for the common case
    if len(lowered) != len(text):
        lowered = _lower(text)
    folded_text = lowered if locale == "ja-JP" else to_simplified(lowered)
    if folded_text == text:
        folded = original
        variants: tuple[Variant, ...] = (original,)
    else:
        folded = Variant(folded_text, original.origin)
        variants = (original, folded)
    chars = set(folded_text)
    # Most clauses hold neither a reduplication nor an infix: no rewrite. A
    # reduplication repeats a character: a text of distinct ones holds none.
    compact = folded
    if len(chars) < len(folded_text) and _REDUPLICATION.search(folded_text):
        compact = _rewrite(folded, _REDUPLICATION)
    # as ``_compact_infix`` checks (a rewrite only took characters out)
    if not _INFIX_MARKS.isdisjoint(chars if compact is folded else compact.text):
        compact = _compact_infix(compact)
    if compact is not folded and all(compact.text != v.text for v in variants):
        variants = (*variants, compact)
    if folded is not original or lowered is not plain:  # rare: another text
        chars.update(plain)
    return Clause(original, folded, compact, variants, chars)
