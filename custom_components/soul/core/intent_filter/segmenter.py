"""Split a command into clauses for multi-intent commands; spans index the original.

Clauses end at punctuation and at conjunctions that join actions ("并且",
"然后", "and then", …). A joining word that opens a later clause ("，再定个闹钟",
", then nod") is left out of that clause and its span.
"""

from __future__ import annotations

import itertools
import re
from typing import NamedTuple

# Conjunctions that separate actions anywhere in a clause.
_SPLIT_ZH = (
    "并且",
    "而且",
    "然后",
    "接着",
    "以及",
    "同时",
    "之后再",
    "然後",
    "並且",
    "接著",
    # Japanese and Korean
    "それから",
    "そして",
    "その後",
    "그리고",
    "그다음에",
    "다음에",
)
_SPLIT_EN = (r"and then", r"then", r"and", r"also", r"after that")
# Words that only join when they open a clause.
_LEADING = (
    "再",
    "还有",
    "還有",
    "并",
    "並",
    "也",
    "还",
    "還",
    "和",
    "跟",
    "然后",
    "然後",
)
_LEADING_EN = ("and", "then", "also", "please")

_BOUNDARY = re.compile(
    # "." and "," inside a number ("2.5", "1,000") do not end a clause.
    # Every alternative starts with a definite character, so ``re`` can skip
    # ahead to candidates; the clauses are stripped of spaces afterwards.
    r"(?:[，。!！?？；;、\n]|[.,](?![0-9])|(?<![0-9])[.,])+"
    r"|"
    + "|".join(map(re.escape, _SPLIT_ZH))
    + r"|から(?<=てから)|고(?<=[\uac00-\ud7a3]고)\s+"  # つけてから; 켜고 (and)
    + r"|\s+(?:"
    + "|".join(_SPLIT_EN)
    + r")\s+",
    re.IGNORECASE,
)
# What a boundary begins with: punctuation, a conjunction's first character,
# "か" (てから), "고" ("켜고 "), or white space before an English conjunction.
# A command holding none of them is one clause without a search of
# ``_BOUNDARY`` (whose case-blind alternatives cost 4 µs on an English command).
_MAY_SPLIT = re.compile(
    "["
    + re.escape(
        "".join(sorted({*"，。!！?？；;、\n.,か고", *(w[0] for w in _SPLIT_ZH)}))
    )
    + "]"
    + r"|\s(?:"
    + "|".join(sorted({word.split()[0] for word in _SPLIT_EN}))
    + ")",
    re.IGNORECASE,  # as ``_BOUNDARY`` reads the English words
)
_LEADING_RE = re.compile(
    r"^(?:(?:"
    + "|".join(map(re.escape, sorted(_LEADING, key=len, reverse=True)))
    + r")"
    r"|(?:" + "|".join(_LEADING_EN) + r")\b)\s*",
    re.IGNORECASE,
)


class Segment(NamedTuple):
    """One clause: its text and where it stands in the original command.

    A named tuple: as immutable as a frozen dataclass, and cheaper to make.
    """

    index: int  # type: ignore[assignment]  # a field, not tuple.index (unused)
    text: str
    start: int
    end: int


def segment(command: str) -> list[Segment]:
    """Return the clauses of ``command`` in order (one when nothing separates them)."""
    # One scan: its first boundary says whether there is any.
    boundaries = (
        iter(()) if _MAY_SPLIT.search(command) is None else _BOUNDARY.finditer(command)
    )
    if (first := next(boundaries, None)) is None:
        # one clause: the command, stripped
        text = command.strip()
        if not text:
            return []
        start = command.index(text)
        return [Segment(0, text, start, start + len(text))]
    pieces: list[tuple[int, int]] = []
    position = 0
    for boundary in itertools.chain((first,), boundaries):
        if boundary.start() > position:
            pieces.append((position, boundary.start()))
        position = boundary.end()
    if position < len(command):
        pieces.append((position, len(command)))
    segments: list[Segment] = []
    for piece_start, piece_end in pieces:
        start, end = piece_start, piece_end
        text = command[start:end]
        # Drop a joining word that opens a later clause ("，再定个闹钟"), unless
        # it is the whole clause; the first clause keeps it ("再见").
        if (
            piece_start != pieces[0][0]
            and (lead := _LEADING_RE.match(text))
            and lead.end() < len(text)
        ):
            start += lead.end()
        while start < end and command[start].isspace():
            start += 1
        while end > start and command[end - 1].isspace():
            end -= 1
        if start < end:
            segments.append(Segment(len(segments), command[start:end], start, end))
    return segments
