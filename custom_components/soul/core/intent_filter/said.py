"""What a clause says whatever the request's clock and catalog, read once per text.

A body hears the same few commands again and again ("开灯", "turn off the
lights"). Everything the filter reads of a clause that depends on its text
alone (its variants, built-in entities, durations before they are checked
against ``now``, clock times before they are resolved at ``now``, number
tokens, content length, decision markers, and the keywords each catalog
keyword index found in it) is kept by text
(``ClauseText``), as are a command's clauses and locale (``CommandText``),
the durations of a text and the pattern searches that ran to their end
(``SEARCHES``). What depends on ``now`` (clock times, a duration past the
calendar) is read for every request. What a catalog's intents scored on a
clause text heard again, and the keyword hits each owns there, are kept by
catalog and text, every catalog's in one table (``SCORES``, ``OWNERS``).

Every table is bounded (emptied when full) and keeps only texts of at most
``MAX_KEPT_TEXT`` characters: a long text is read afresh each time.
``forget`` empties them all (tests, and the benchmark's texts heard first).
"""

from __future__ import annotations

from dataclasses import dataclass, field
import re
from typing import TYPE_CHECKING, Any
import weakref

from ..emotion.recognizer import analyze_emotion
from ..language import detect_locale
from .durations import Duration, find_durations
from .entries import bigrams
from .lexicon import (
    CONVERSATION,
    DEGREE,
    EXCLAMATION,
    OPINION,
    POLITE_REQUEST,
    Entity,
    find_entities,
    is_negated,
    is_question,
)
from .numbers import parse_number
from .segmenter import Segment, segment
from .text import Clause, clause_at
from .timepoints import Phrase, clock_phrases

if TYPE_CHECKING:
    from .reading import Hit

MAX_KEPT_TEXT = 200  # characters of a text kept; longer ones are read each time
KEPT_TEXTS = 1024  # texts each table keeps before it is emptied
KEPT_SCORES = 4096  # intents' scores on clause texts kept, every catalog's together
KEPT_INDEXES = 8  # catalog keyword indexes whose hits a clause text keeps
KEPT_HITS = 32  # keyword hits kept of one clause; more are found each time
_NUMBER_TOKEN = re.compile(r"[0-9]+(?:\.[0-9]+)?|[零〇一二两兩三四五六七八九十百千万]+")
# What a number token begins with: a clause holding none of them has no number.
_NUMBER_CHARS = frozenset("0123456789零〇一二两兩三四五六七八九十百千万")
_NOT_CONTENT = re.compile(r"\W")  # a clause's few other characters, counted
_NO_TYPES: frozenset[str] = frozenset()


def keep[K, V](table: dict[K, V], key: K, value: V, size: int = KEPT_TEXTS) -> V:
    """Keep ``value`` in ``table`` (emptied first when it holds ``size``); return it."""
    if len(table) >= size:
        table.clear()
    table[key] = value
    return value


class Markers:
    """The decision markers of a clause, read only when a decision needs them.

    Kept with the clause's text: each marker is read at most once per text.
    """

    __slots__ = ("_chatty", "_negated", "_polite", "_question", "_remark", "_text")

    def __init__(self, text: str) -> None:
        self._text = text
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
            value = self._negated = is_negated(self._text)
        return value

    @property
    def question(self) -> bool:
        """Question markers."""
        if (value := self._question) is None:
            value = self._question = is_question(self._text)
        return value

    @property
    def chatty(self) -> bool:
        """Opinion, conversation or exclamation markers."""
        if (value := self._chatty) is None:
            text = self._text
            value = self._chatty = bool(
                OPINION.search(text)
                or CONVERSATION.search(text)
                or EXCLAMATION.search(text)
                or expresses_emotion(text)
            )
        return value

    @property
    def remark(self) -> bool:
        """Degree words that make a remark of a clause without an action ("灯太亮了")."""
        if (value := self._remark) is None:
            value = self._remark = DEGREE.search(self._text) is not None
        return value

    @property
    def polite(self) -> bool:
        """Request markers: "帮我", "请", "please"."""
        if (value := self._polite) is None:
            value = self._polite = POLITE_REQUEST.search(self._text) is not None
        return value


def expresses_emotion(text: str) -> bool:
    """Whether ``text`` expresses an emotion (``core.emotion``'s recognizer)."""
    return analyze_emotion(text)["emotion"] != "neutral"


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


_durations: dict[str, tuple[Duration, ...]] = {}


def merged_durations(text: str, keeping: bool = True) -> tuple[Duration, ...]:
    """Return the durations in ``text``, adjacent ones joined (kept if ``keeping``)."""
    if (found := _durations.get(text)) is not None:
        return found
    durations = find_durations(text)
    if len(durations) > 1:  # one duration or none: nothing to join
        durations = _merge(durations)
    if not keeping or len(text) > MAX_KEPT_TEXT:
        return tuple(durations)
    return keep(_durations, text, tuple(durations))


@dataclass(slots=True)
class ClauseText:
    """What one clause's text says, in command coordinates (kept by text)."""

    clause: Clause
    entities: tuple[Entity, ...]
    entity_types: frozenset[str]
    # merged, not yet checked against the request's ``now``
    durations: tuple[Duration, ...]
    # whether every duration surely ends within the calendar, whatever ``now``
    surely_in_time: bool
    # (value, start, end) of each number token, inside a time signal or not
    numbers: tuple[tuple[float, int, int], ...]
    content_length: int
    markers: Markers
    phrases: tuple[Phrase, ...]  # clock times said, to resolve at each ``now``
    # (a catalog keyword pattern, the keywords it found here), at most
    # ``KEPT_INDEXES``: a home's bodies share few keyword indexes. The pattern
    # stands for its keywords (its prefixes are theirs); a weak reference, so
    # a text kept does not keep a catalog's index alive.
    hits: list[tuple[weakref.ref[re.Pattern[str]], list[Hit]]] = field(
        default_factory=list
    )
    grams: frozenset[str] | None = None  # the folded clause's bigrams, when read
    # Whether it was heard again since it was kept (a long text never is):
    # only then is what is read of it against a catalog (scores, owners) kept
    # too; a text heard once is not worth the copies.
    again: bool = False
    key: tuple[str, int, str] = ("", 0, "")  # (text, start, locale): its key

    def bigrams(self) -> frozenset[str]:
        """Return the folded clause's bigrams (read once)."""
        if (grams := self.grams) is None:
            grams = self.grams = bigrams(self.clause.folded.text)
        return grams


def _number_tokens(folded: str, offset: int) -> tuple[tuple[float, int, int], ...]:
    if _NUMBER_CHARS.isdisjoint(folded):
        return ()
    return tuple(
        (value, match.start() + offset, match.end() + offset)
        for match in _NUMBER_TOKEN.finditer(folded)
        if (value := parse_number(match.group())) is not None
    )


_texts: dict[tuple[str, int, str], ClauseText] = {}


def clause_text(
    text: str,
    start: int,
    locale: str,
    surely: float,
    keeping: bool = True,
) -> ClauseText:
    """Return what the clause ``text`` at ``start`` of its command says in ``locale``.

    ``surely`` is how many seconds from any ``now`` surely lie within the
    calendar (``reading.SURELY_IN_TIME``); what is read is kept if ``keeping``.
    """
    key = (text, start, locale)
    if (known := _texts.get(key)) is not None:
        known.again = True
        return known
    clause = clause_at(text, start, locale)
    folded = clause.folded.text
    found = find_entities(folded, locale)
    # A clause at the start of the command keeps the (frozen) entities as found.
    entities = (
        found
        if not start
        else tuple(
            Entity(e.type, e.value, e.text, e.start + start, e.end + start)
            for e in found
        )
    )
    durations = merged_durations(folded, keeping)
    if start:
        durations = tuple(
            Duration(d.seconds, d.start + start, d.end + start, d.relative)
            for d in durations
        )
    read = ClauseText(
        clause,
        entities,
        frozenset([e.type for e in entities]) if entities else _NO_TYPES,
        durations,
        not durations or all(0 <= d.seconds <= surely for d in durations),
        _number_tokens(folded, start),
        # \w is what str.isalnum() accepts, and "_": most clauses are all content
        max(
            1,
            len(folded)
            if folded.isalnum()
            else len(folded) - len(_NOT_CONTENT.findall(folded)),
        ),
        Markers(folded),
        clock_phrases(folded),
    )
    read.key = key
    if not keeping or len(text) > MAX_KEPT_TEXT:
        return read
    return keep(_texts, key, read)


class CommandText:
    """What a whole command says: its clauses and the locale of its script.

    And the system intent for it when no catalog intent claims it (what
    ``engine`` decides from its text alone), once decided.
    """

    __slots__ = ("_clauses", "_locale", "again", "classified", "command")

    def __init__(self, command: str) -> None:
        self.command = command
        # Whether it was heard again since it was kept: only then is what is
        # read of its clauses kept (a command heard once leaves this behind).
        self.again = False
        self._clauses: tuple[Segment, ...] | None = None
        self._locale: str | None = None
        self.classified: tuple[str, str, float] | None = None

    def clauses(self) -> tuple[Segment, ...]:
        """Return the command's clauses (``segmenter.segment``)."""
        if (clauses := self._clauses) is None:
            clauses = self._clauses = tuple(segment(self.command))
        return clauses

    def locale(self) -> str:
        """Return the locale the command's script says (``language.detect_locale``)."""
        if (locale := self._locale) is None:
            locale = self._locale = detect_locale(self.command)
        return locale


_commands: dict[str, CommandText] = {}


def command_text(command: str) -> CommandText:
    """Return what ``command`` says (kept by command)."""
    if (known := _commands.get(command)) is not None:
        known.again = True
        return known
    read = CommandText(command)
    if len(command) > MAX_KEPT_TEXT:
        return read
    return keep(_commands, command, read)


# (pattern, text) → what the search found, for searches that ran to the end
# (pattern, text) → what the search found, for searches that ran to their end
# (``reading.Context.regex`` reads and fills it, texts of at most
# ``MAX_KEPT_TEXT`` characters); emptied in place, never rebound
SEARCHES: dict[tuple[str, str], Any] = {}
NOT_SEARCHED: Any = object()  # what ``SEARCHES`` holds for a search never kept


# What an intent scored on a clause text, by (``Catalog.serial``, clause
# text's key, intent index) (``scoring``), and the keyword hits each intent of
# a catalog owns there, by (``Catalog.serial``, clause text's key)
# (``reading.read_owners``): every catalog's in one table each, so that how
# many catalogs a home has does not multiply what is kept.
SCORES: dict[tuple[int, tuple[str, int, str], int], Any] = {}
OWNERS: dict[tuple[int, tuple[str, int, str]], Any] = {}


def forget() -> None:
    """Forget every text read and what was kept of it (tests and benchmarks)."""
    for table in (_commands, _durations, _texts, SEARCHES, SCORES, OWNERS):
        table.clear()
