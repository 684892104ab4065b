"""Reading a clause: everything the filter learns from it once, for every intent.

``read_clause`` finds a clause's built-in entities, durations, clock times,
numbers, catalog keyword hits and (lazily) decision markers. ``Context`` is
the state of one command: the catalog patterns it searches within its time,
its warnings and its durations.
"""

from __future__ import annotations

from collections.abc import Iterator, Set as AbstractSet
from dataclasses import dataclass, field
from datetime import datetime, timedelta
import re
from typing import Any

from ..emotion.recognizer import analyze_emotion
from ..safe_regex import (
    RegexBudgetError,
    RegexTimeoutError,
    UnsafeRegexError,
    UntrustedPattern,
    search,
)
from .catalog import Catalog
from .durations import Duration, find_durations
from .entries import Intent
from .lexicon import (
    CONVERSATION,
    DEGREE,
    EXCLAMATION,
    NEGATION,
    OPINION,
    POLITE_REQUEST,
    QUESTION_FIRSTS,
    Entity,
    find_entities,
    has_marker,
    is_negated,
    is_question,
    marker_firsts,
)
from .numbers import parse_number
from .request import Request
from .segmenter import Segment
from .text import Clause, make_clause
from .timepoints import TimePoint, find_time_points

REGEX_TIMEOUT = 0.01  # seconds one catalog pattern may run on one clause
MAX_WARNINGS = 16
# Keyword hits read of one clause: a normal clause has a few; a clause of one
# keyword repeated (or of every prefix of a long one) has thousands, which
# would cost more than the command's time. Hits past these are not read.
MAX_CLAUSE_HITS = 512
# A request's ``now`` lies at least five days before the calendar's end (its
# wall time at most seven, and a time zone moves it by less than two): a
# duration of up to four days from it surely ends in time (``ends_in_time``).
SURELY_IN_TIME = 4 * 86400
_NUMBER_TOKEN = re.compile(r"[0-9]+(?:\.[0-9]+)?|[零〇一二两兩三四五六七八九十百千万]+")
# What a number token begins with: a clause holding none of them has no number.
_NUMBER_CHARS = frozenset("0123456789零〇一二两兩三四五六七八九十百千万")
_NOT_CONTENT = re.compile(r"\W")  # a clause's few other characters, counted
# What a negation begins with (``Markers.negated`` skips the other texts).
_NEGATION_FIRSTS = marker_firsts(NEGATION)
_LATIN_SUFFIXES = ("", "s", "es", "ed", "ing", "er", "ers", "d")
_LATIN_TAIL = re.compile(r"[a-z]*")


@dataclass(slots=True)
class Hit:
    """A catalog keyword found in a clause, with its span in the command."""

    keyword: str
    start: int  # in the original command
    end: int


# A keyword's hits in a clause, each with its place in ``Reading.hits``: one
# list per keyword, shared by every intent that owns the keyword.
type KeywordHits = list[tuple[int, Hit]]


class Markers:
    """The decision markers of a clause, read only when a decision needs them.

    ``chars`` (the set of the text's characters) skips each marker whose
    first characters the text does not hold.
    """

    __slots__ = (
        "_chars",
        "_chatty",
        "_negated",
        "_polite",
        "_question",
        "_remark",
        "_text",
    )

    def __init__(self, text: str, chars: AbstractSet[str] | None = None) -> None:
        self._text = text
        self._chars = text if chars is None else chars
        # None until read; each is read at most once per clause
        self._negated: bool | None = None
        self._question: bool | None = None
        self._chatty: bool | None = None
        self._remark: bool | None = None
        self._polite: bool | None = None

    @property
    def negated(self) -> bool:
        """Negation markers ("不要", "don't")."""
        if (value := self._negated) is None:
            value = self._negated = not _NEGATION_FIRSTS.isdisjoint(
                self._chars
            ) and is_negated(self._text)
        return value

    @property
    def question(self) -> bool:
        """Question markers."""
        if (value := self._question) is None:
            value = self._question = not QUESTION_FIRSTS.isdisjoint(
                self._chars
            ) and is_question(self._text)
        return value

    @property
    def chatty(self) -> bool:
        """Opinion, conversation or exclamation markers."""
        if (value := self._chatty) is None:
            text, chars = self._text, self._chars
            value = self._chatty = (
                has_marker(OPINION, text, chars)
                or has_marker(CONVERSATION, text, chars)
                or has_marker(EXCLAMATION, text, chars)
                or expresses_emotion(text)
            )
        return value

    @property
    def remark(self) -> bool:
        """Degree words that make a remark of a clause without an action ("灯太亮了")."""
        if (value := self._remark) is None:
            value = self._remark = has_marker(DEGREE, self._text, self._chars)
        return value

    @property
    def polite(self) -> bool:
        """Request markers: "帮我", "请", "please"."""
        if (value := self._polite) is None:
            value = self._polite = has_marker(POLITE_REQUEST, self._text, self._chars)
        return value


@dataclass(slots=True)
class Reading:
    """Everything read from one clause, shared by every intent scored against it."""

    seg: Segment
    clause: Clause
    content_length: int
    entities: list[Entity]
    durations: list[Duration]
    time_points: list[TimePoint]
    numbers: list[tuple[float, int, int]]
    hits: list[Hit]
    markers: Markers
    types: set[str] = field(default_factory=set)
    borrowed: Reading | None = None  # a neighbouring time-only clause
    grams: frozenset[str] | None = None  # the folded clause's bigrams, when read
    # intent index → its (keyword's hits, rule) pairs: each intent sees only
    # its own keywords, and a keyword found many times is still one pair
    by_owner: dict[int, list[tuple[KeywordHits, str]]] = field(default_factory=dict)

    def own(self, keyword_owners: dict[str, tuple[tuple[int, str], ...]]) -> None:
        """Give each intent its keywords' hits (``by_owner``).

        The work is one step per hit and one per (keyword, owner) pair the
        catalog holds, never hits × owners: 256 intents that share a keyword
        found 2,000 times get one shared list each, not 512,000 pairs.
        """
        by_keyword: dict[str, KeywordHits] = {}
        for place, hit in enumerate(self.hits):
            if (same := by_keyword.get(hit.keyword)) is None:
                by_keyword[hit.keyword] = [(place, hit)]
            else:
                same.append((place, hit))
        by_owner = self.by_owner
        for keyword, hits in by_keyword.items():
            for owner, rule in keyword_owners[keyword]:
                if (pairs := by_owner.get(owner)) is None:
                    by_owner[owner] = [(hits, rule)]
                else:
                    pairs.append((hits, rule))

    @property
    def has_action(self) -> bool:
        """Whether the clause holds a built-in action word."""
        return "action" in self.types


class Context:
    """Per-request state: clock, locale, the catalog and regex warnings."""

    def __init__(self, request: Request, catalog: Catalog, locale: str) -> None:
        self.request = request
        self.catalog = catalog
        self.locale = locale
        self.warnings: list[dict[str, str]] = []
        self._warned: set[tuple[str, str, str]] = set()
        self._durations: dict[str, list[Duration]] = {}
        # Patterns that timed out on this command are not run again on it.
        # Nothing is kept across commands: one user's command must not
        # disable an intent of a body (or of every body with that catalog).
        self._slow: set[str] = set()
        self._budget_spent = False
        # Searches that did not run to the end (time out, budget spent): what
        # they found is not the pattern's answer, so it must not be kept.
        self.incomplete = 0

    def regex(self, intent: Intent, pattern: str, text: str) -> Any:
        """Search a catalog pattern within the command's time; never raises."""
        if self._budget_spent or pattern in self._slow:
            self.incomplete += 1
            return None  # reported once, when it happened
        compiled = self.catalog.patterns.get(pattern, pattern)
        # ``search``'s own first test, without the call and its clock: a
        # text that cannot match is not searched, whatever time is left.
        if type(compiled) is UntrustedPattern and compiled.cannot_match(text):
            return None
        try:
            return search(compiled, text, timeout=REGEX_TIMEOUT)
        except RegexBudgetError as err:
            # The command's time is spent (not this pattern's fault): no
            # pattern runs any more on this command.
            self._budget_spent = True
            self._warn(intent, pattern, str(err))
        except RegexTimeoutError as err:
            self._slow.add(pattern)
            self._warn(intent, pattern, str(err))
        except UnsafeRegexError as err:  # compiled at validation; kept for safety
            self._warn(intent, pattern, str(err))
        self.incomplete += 1
        return None

    def note(self, error: str) -> None:
        """Add a warning about the command as a whole."""
        self._warn(None, "", error)

    def _warn(self, intent: Intent | None, pattern: str, error: str) -> None:
        key = (intent.id if intent is not None else "", pattern, error)
        if key in self._warned or len(self.warnings) >= MAX_WARNINGS:
            return
        self._warned.add(key)
        warning = {"pattern": pattern, "error": error}
        if intent is not None:
            warning = {"intent_id": intent.id, **warning}
        self.warnings.append(warning)

    def durations(
        self, text: str, chars: AbstractSet[str] | None = None
    ) -> list[Duration]:
        """Return the durations in ``text``, adjacent ones joined (cached per text).

        A duration that ends past the calendar ("一亿天" from now) is no
        duration, as a clock time that cannot be resolved is no clock time.
        ``chars`` is the set of ``text``'s characters, when read already.
        """
        if text not in self._durations:
            found = find_durations(text, chars)
            if len(found) > 1:  # one duration or none: nothing to join
                found = _merge(found)
            if found:
                now = self.request.now
                found = [
                    d
                    for d in found
                    if 0 <= d.seconds <= SURELY_IN_TIME or ends_in_time(now, d.seconds)
                ]
            self._durations[text] = found
        return self._durations[text]


def ends_in_time(now: datetime, seconds: float) -> bool:
    """Whether ``seconds`` from ``now`` is a moment ``datetime`` can hold."""
    try:
        now + timedelta(seconds=seconds)
    except (OverflowError, ValueError):  # past year 9999, or not a number
        return False
    return True


def _merge(durations: list[Duration]) -> list[Duration]:
    """Join adjacent durations ("1小时30分钟后", "2 hours 10 minutes")."""
    merged: list[Duration] = []
    for duration in durations:
        if (
            merged
            and 0 <= duration.start - merged[-1].end <= 1
            and not merged[-1].relative
        ):
            last = merged[-1]
            merged[-1] = Duration(
                last.seconds + duration.seconds,
                last.start,
                duration.end,
                duration.relative,
            )
        else:
            merged.append(duration)
    return merged


def _keyword_hits(catalog: Catalog, clause: Clause) -> list[Hit]:
    """Return the clause's keyword hits in clause order (``MAX_CLAUSE_HITS`` at most)."""
    pattern = catalog.keyword_pattern
    # A keyword hit begins with a keyword's first character.
    if pattern is None or catalog.keyword_firsts.isdisjoint(clause.chars):
        return []
    prefixes = catalog.keyword_prefixes
    original = clause.original
    if len(clause.variants) == 1:  # most clauses
        text = original.text.lower()
        if len(text) == len(original.origin):
            return _hits_in_one_text(pattern, prefixes, text, original.origin)
    hits: dict[tuple[str, int], Hit] = {}
    # Whether the hits came in ``_hit_order`` already (one variant: by place,
    # then longest first), so that sorting them would change nothing.
    ordered = True
    last = (-1, 0)
    full = False
    for variant in clause.variants:
        text = variant.text if variant is not original else variant.text.lower()
        origin = variant.origin
        for position, keyword, end in _counted(pattern, prefixes, text):
            # Variant.span, inline (a keyword is never empty)
            if end <= len(origin):
                start_o, end_o = origin[position], origin[end - 1] + 1
            else:  # a lower case longer than the text ("İ")
                start_o, end_o = variant.span(position, end)
            if (key := (keyword, start_o)) not in hits:
                hits[key] = Hit(keyword, start_o, end_o)
                if ordered:
                    order = (start_o, -len(keyword))
                    ordered = last <= order
                    last = order
                if len(hits) >= MAX_CLAUSE_HITS:
                    full = True
                    break
        if full:
            break
    if ordered:
        return list(hits.values())
    return sorted(hits.values(), key=_hit_order)


def _hits_in_one_text(
    pattern: re.Pattern[str],
    prefixes: dict[str, tuple[str, ...]],
    text: str,
    origin: range | tuple[int, ...],
) -> list[Hit]:
    """``_keyword_hits`` of a clause read in one text, one character per origin.

    The same reading without its dict and order checks: each place is read
    once, and its keywords longest first, so no hit comes twice and they come
    in ``_hit_order``.
    """
    found: list[Hit] = []
    for position, keyword, end in _counted(pattern, prefixes, text):
        # ``end`` is within the text: a keyword matched there.
        found.append(Hit(keyword, origin[position], origin[end - 1] + 1))
        if len(found) >= MAX_CLAUSE_HITS:
            break
    return found


def _counted(
    pattern: re.Pattern[str], prefixes: dict[str, tuple[str, ...]], text: str
) -> Iterator[tuple[int, str, int]]:
    """Yield (start, keyword, end) of each keyword found in ``text`` that counts.

    At each place the keyword pattern matches, its longest keyword and every
    keyword it begins with, longest first; an ASCII keyword counts only as a
    word of its own (not glued to a letter or digit before it) with at most an
    English suffix after it.
    """
    for match in pattern.finditer(text):
        position = match.start()
        longest = match.group(1)
        glued = position and text[position - 1].isalnum()
        if glued and longest.isascii():
            # Every keyword of the chain is a prefix of the longest, so
            # ASCII too, and glued to the word before: none is a hit
            # ("a"… "a"×64 against "a"×2000 read 128,000 of them).
            continue
        for keyword in prefixes[longest]:
            end = position + len(keyword)
            if keyword.isascii():
                if glued:
                    continue
                # [a-z]* matches at any position (maybe nothing).
                tail_match = _LATIN_TAIL.match(text, end)
                tail = tail_match.group() if tail_match else ""
                if tail not in _LATIN_SUFFIXES:
                    continue
            yield position, keyword, end


def _hit_order(hit: Hit) -> tuple[int, int]:
    return hit.start, -len(hit.keyword)


def read_clause(ctx: Context, seg: Segment) -> Reading:
    """Read one clause of the command (spans in command coordinates)."""
    clause = make_clause(ctx.request.command, seg.start, seg.end, ctx.locale)
    folded = clause.folded.text
    chars = clause.chars
    offset = seg.start
    found = find_entities(folded, ctx.locale)
    # A clause at the start of the command keeps the (frozen) entities as found.
    entities = (
        list(found)
        if not offset
        else [
            Entity(e.type, e.value, e.text, e.start + offset, e.end + offset)
            for e in found
        ]
    )
    durations: list[Duration] = []
    time_points: list[TimePoint] = []
    if ctx.request.options["enable_time_parser"]:
        read = ctx.durations(folded, chars)
        durations = (
            list(read)
            if not offset
            else [
                Duration(d.seconds, d.start + offset, d.end + offset, d.relative)
                for d in read
            ]
        )
        points = find_time_points(folded, ctx.request.now, chars)
        time_points = (
            points
            if not offset
            else [TimePoint(t.at, t.start + offset, t.end + offset) for t in points]
        )
    numbers = []
    timed = durations or time_points
    for match in (
        () if _NUMBER_CHARS.isdisjoint(chars) else _NUMBER_TOKEN.finditer(folded)
    ):
        start, end = match.start() + offset, match.end() + offset
        if timed and (
            any(d.start <= start < d.end for d in durations)
            or any(t.start <= start < t.end for t in time_points)
        ):
            continue
        if (value := parse_number(match.group())) is not None:
            numbers.append((value, start, end))
    hits = _keyword_hits(ctx.catalog, clause)
    if len(hits) >= MAX_CLAUSE_HITS:
        ctx.note(
            f"clause {seg.index + 1} holds {MAX_CLAUSE_HITS} catalog keywords or "
            "more; those after were not read"
        )
    types = {e.type for e in entities}
    if numbers:
        types.add("number")
    if durations:
        types.update(("duration", "time"))
    if time_points:
        types.update(("time_point", "time"))
    # \w is what str.isalnum() accepts, and "_": most clauses are all content
    content_length = max(
        1,
        len(folded)
        if folded.isalnum()
        else len(folded) - len(_NOT_CONTENT.findall(folded)),
    )
    # Positional (in field order): a third cheaper than by keyword.
    return Reading(
        seg,
        clause,
        content_length,
        entities,
        durations,
        time_points,
        numbers,
        hits,
        Markers(folded, chars),
        types,
    )


def expresses_emotion(text: str) -> bool:
    """Whether ``text`` expresses an emotion (``core.emotion``'s recognizer)."""
    return analyze_emotion(text)["emotion"] != "neutral"
