"""Scoring: one intent against one clause, as a candidate with its confidence.

The evidence (patterns, keywords, entity types, examples, slots, the body's
hint) is combined by noisy-or; ``docs/intent-filter.md`` has the formula.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
import heapq
import itertools
from operator import itemgetter
from typing import Any

from .entries import Intent, bigrams
from .reading import Context, Hit, KeywordHits, Reading
from .slots import fill_slots

SYNONYM_WEIGHT = 0.9  # a keyword's other names count slightly less than the keyword
MAX_HITS_SCORED = 8  # keyword hits one intent scores in one clause
# Keyword hits one intent reads in one clause to find those: hits that overlap
# one already scored are passed over, and a keyword repeated many times
# ("一一一…") would otherwise be read in full by every intent that has it.
MAX_HITS_READ = 4 * MAX_HITS_SCORED
FEW_LISTS = 8  # keywords of one intent whose single hits are sorted at once


@dataclass(slots=True)
class Candidate:
    """An intent scored against a clause: confidence, evidence and slots."""

    intent: Intent
    reading: Reading
    confidence: float
    evidence: list[dict[str, Any]]
    parameters: dict[str, Any]
    normalized: dict[str, Any]
    missing: list[str]
    strong: bool
    status: str = "ready"


def add_slot_evidence(
    intent: Intent,
    parameters: dict[str, Any],
    evidence: list[dict[str, Any]],
    scores: list[float],
) -> None:
    """Add what the filled slots (two at most) and the intent's hint score weigh."""
    for name in list(parameters)[:2]:
        evidence.append({"type": "slot", "value": name, "score": 0.15})
        scores.append(0.15)
    if intent.hint_score:
        evidence.append(
            {
                "type": "hint_score",
                "value": f"{intent.hint_score:g}",
                "score": intent.hint_score,
            }
        )
        scores.append(intent.hint_score)


def noisy_or(scores: list[float]) -> float:
    """Combine independent pieces of evidence: 1 − Π(1 − s)."""
    remaining = 1.0
    for score in scores:
        remaining *= 1.0 - max(0.0, min(1.0, score))
    return 1.0 - remaining


def score_intent(ctx: Context, intent: Intent, reading: Reading) -> Candidate | None:
    """Score ``intent`` against one clause; None when a rule excludes it."""
    hits_any: list[KeywordHits] = []
    synonyms: list[KeywordHits] = []  # other names of a keyword's built-in entity
    found_all: set[str] = set()
    types = reading.types
    for hits, rule in reading.by_owner.get(intent.index, ()):
        if rule == "negative_keywords":
            return None
        if rule == "keywords_all":
            found_all.add(hits[0][1].keyword)
        elif rule == "keywords_any":
            hits_any.append(hits)
        else:
            synonyms.append(hits)
    if intent.keywords_all and len(found_all) < len(intent.keywords_all):
        return None
    if intent.entity_types_all and not types.issuperset(intent.entity_types_all):
        return None
    evidence: list[dict[str, Any]] = []
    scores: list[float] = []
    strong = False
    variants = reading.clause.variants
    for pattern in intent.regex_all:
        match = next(
            (m for v in variants if (m := ctx.regex(intent, pattern, v.text))), None
        )
        if match is None:
            return None
        evidence.append({"type": "regex_all", "value": pattern, "score": 0.75})
        scores.append(0.75)
        strong = True
    if intent.keywords_all:
        # Evidence values are strings (§4.4.2): one entry per keyword.
        evidence.extend(
            {"type": "keywords_all", "value": keyword, "score": 0.7}
            for keyword in sorted(found_all)
        )
        scores.append(0.7)
        strong = True
    # Only the hits count, never the length of the list: a long keywords_any
    # list cannot dilute a specific hit. The best hit scores by how much of
    # the clause it covers; other, non-overlapping hits add a little.
    best_coverage = 0.0
    covered: list[tuple[int, int]] = []
    content_length = reading.content_length
    # Hits are read lazily, longest keyword first: the loop stops at
    # MAX_HITS_SCORED covered or MAX_HITS_READ read, however often the
    # keywords were found.
    unread = MAX_HITS_READ
    for synonym, lists in ((False, hits_any), (True, synonyms)):
        if not lists or len(covered) >= MAX_HITS_SCORED or not unread:
            continue
        for hit in _longest_first(lists):
            if len(covered) >= MAX_HITS_SCORED or not unread:
                break  # more hits only add x0.5 each: a repeated word is not more sure
            unread -= 1
            start, end = hit.start, hit.end
            overlaps = False
            for s, e in covered:
                if s < end and start < e:
                    overlaps = True
                    break
            if overlaps:
                continue
            keyword = hit.keyword
            coverage = min(1.0, (len(keyword) - keyword.count(" ")) / content_length)
            score = 0.6 + 0.35 * coverage
            if synonym:
                score *= SYNONYM_WEIGHT
                kind = "keyword_synonym"
            else:
                kind = "keyword_any"
            if covered:
                score *= 0.5
            best_coverage = max(best_coverage, coverage)
            covered.append((start, end))
            evidence.append({"type": kind, "value": keyword, "score": round(score, 3)})
            scores.append(score)
    for pattern in intent.regex_any:
        for variant in variants:
            if (match := ctx.regex(intent, pattern, variant.text)) is not None:
                coverage = min(
                    1.0, (match.end() - match.start()) / max(1, len(variant.text))
                )
                score = 0.7 + 0.25 * coverage
                evidence.append(
                    {"type": "regex_any", "value": pattern, "score": round(score, 3)}
                )
                scores.append(score)
                strong = True
                break
    if intent.entity_types_any:
        present = [t for t in intent.entity_types_any if t in types]
        for position, kind in enumerate(present):
            score = 0.3 if position == 0 else 0.15
            evidence.append({"type": "entity_type", "value": kind, "score": score})
            scores.append(score)
    if intent.examples:
        if (clause_grams := reading.grams) is None:  # once per clause
            clause_grams = reading.grams = bigrams(reading.clause.folded.text)
        best, closest = max(
            (
                (
                    2
                    * len(clause_grams & example)
                    / (len(clause_grams) + len(example)),
                    position,
                )
                for position, example in enumerate(intent.examples)
                if clause_grams or example
            ),
            default=(0.0, 0),
        )
        if best >= 0.3:
            evidence.append(
                {
                    "type": "example",
                    "value": intent.example_texts[closest],
                    "score": round(best, 3),
                }
            )
            scores.append(best)
            strong = strong or best >= 0.5
    if intent.entity_types_all:
        evidence.extend(
            {"type": "entity_types_all", "value": kind, "score": 0.5}
            for kind in intent.entity_types_all
        )
        scores.append(0.5)
    if not scores:
        return None
    parameters, normalized, missing, from_text = fill_slots(ctx, intent, reading)
    add_slot_evidence(intent, parameters, evidence, scores)
    confidence = round(min(0.99, noisy_or(scores)), 3)
    strong = not _mere_mention(reading, strong, best_coverage, from_text)
    return Candidate(  # positional (in field order): cheaper than by keyword
        intent,
        reading,
        confidence,
        evidence,
        parameters,
        normalized,
        missing,
        strong,
        "need_clarification" if missing else "ready",
    )


_place = itemgetter(0)
_hit = itemgetter(1)


def _by_length(hits: KeywordHits) -> int:
    return -len(hits[0][1].keyword)


def _length_then_place(item: tuple[int, Hit]) -> tuple[int, int]:
    return -len(item[1].keyword), item[0]


def _longest_first(lists: list[KeywordHits]) -> Iterator[Hit]:
    """Yield the hits of ``lists`` (one per keyword) longest keyword first.

    Hits of equal length come in their order in the clause: the order a
    stable sort by length of all the hits in clause order gives, produced
    lazily (one merge per length), so a caller that stops early reads only
    what it needs of a keyword found thousands of times.
    """
    if len(lists) == 1:
        return map(_hit, lists[0])
    if len(lists) <= FEW_LISTS and sum(map(len, lists)) == len(lists):
        # Most keywords are found once (no list is empty): sort the few hits
        # themselves (stable, and places are unique but for a keyword listed
        # twice).
        return map(_hit, sorted([hits[0] for hits in lists], key=_length_then_place))
    ordered = sorted(lists, key=_by_length)
    parts: list[Iterable[Hit]] = []
    for _, group in itertools.groupby(ordered, key=_by_length):
        same = list(group)
        if len(same) == 1:
            parts.append(map(_hit, same[0]))
        else:
            parts.append(map(_hit, heapq.merge(*same, key=_place)))
    return itertools.chain.from_iterable(parts)


def _mere_mention(
    reading: Reading, explicit: bool, coverage: float, from_text: int
) -> bool:
    """Whether a clause only talks about what an intent controls.

    "我喜欢红色", "哇，灯好漂亮" (opinions, exclamations) and "灯太亮了" (a remark)
    name the light without asking for anything; the language model answers them.
    Explicit evidence (a catalog pattern, ``keywords_all``, a close example) or
    a built-in action word always counts as a request.
    """
    if explicit or reading.has_action:
        return False
    # The cheap tests first: the markers (chatty reads the clause's emotion)
    # are read only when they can change the answer.
    if coverage < 1.0 and reading.markers.chatty:
        return True
    return (
        from_text == 0
        and coverage < 0.5
        and reading.markers.remark
        and not reading.markers.polite
    )


def rank(candidate: Candidate) -> tuple[float, float, float]:
    """Confidence first; within 0.05 the higher priority wins."""
    return (
        -int(candidate.confidence * 20),
        -candidate.intent.priority,
        -candidate.confidence,
    )
