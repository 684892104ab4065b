"""``filter_intents``: the §4.4 request in, the §4.4.2 response out.

The command is split into clauses; each clause is read once (``reading``:
built-in entities, durations, clock times, catalog keyword hits, decision
markers) and every catalog intent is scored against it (``scoring``, with its
slots filled by ``slots``). The best intents per clause become
``intents``; when none can run, the §4.4.3 system intents say whether the
command is an emotional exclamation (``no_action``) or needs the language
model (``fallback_reasoning``). ``docs/intent-filter.md`` has the rules and the
confidence formula.
"""

from __future__ import annotations

import re
import time
from typing import Any

from ..language import detect_locale
from ..safe_regex import budget, deferred_compile_seconds
from .catalog import Catalog, cached_catalog
from .entries import fold
from .implied import claim_by_time, timed_request
from .lexicon import (
    CONVERSATION,
    EXCLAMATION,
    GREETING,
    OPINION,
    QUESTION_FIRSTS,
    has_marker,
    is_question,
    negation,
)
from .reading import Context, Reading, expresses_emotion, read_clause
from .request import DEFAULT_TIMEZONE, parse_request
from .scoring import Candidate, rank, score_intent
from .segmenter import Segment, segment
from .slots import json_number

_CONTENT = re.compile(r"\w")
REGEX_BUDGET = 0.012  # seconds all catalog patterns may run on one command
FILTER_BUDGET = 0.015  # seconds for the whole command; later clauses are skipped
MAX_SEGMENTS = 32  # clauses read of one command
SCORED_BETWEEN_CHECKS = 16  # intents scored against a clause between time checks

SYS_FALLBACK = "sys.fallback_reasoning"
SYS_NO_ACTION = "sys.no_action"
# The names and the shape of system intents are the DesktopRobot filter's.
_SYSTEM_NAMES = {SYS_FALLBACK: "触发高级推理", SYS_NO_ACTION: "无需处理"}


def _intent_body(candidate: Candidate) -> dict[str, Any]:
    seg = candidate.reading.seg
    return {
        "intent_id": candidate.intent.id,
        "intent_name": candidate.intent.name,
        "confidence": candidate.confidence,
        "status": candidate.status,
        "segment_index": seg.index,
        "span": {"text": seg.text, "start": seg.start, "end": seg.end},
        "parameters": candidate.parameters,
        "normalized": candidate.normalized,
        "missing_parameters": candidate.missing,
        "evidence": candidate.evidence,
    }


def _system_body(
    intent_id: str, command: str, reason: str, confidence: float
) -> dict[str, Any]:
    stripped = command.strip()
    start = command.index(stripped) if stripped else 0
    return {
        "intent_id": intent_id,
        "intent_name": _SYSTEM_NAMES[intent_id],
        "confidence": confidence,
        "status": "system",
        "segment_index": 0,
        "span": {"text": stripped, "start": start, "end": start + len(stripped)},
        "parameters": {"reason": reason},
        "normalized": {"system_intent": True},
        "missing_parameters": [],
        "evidence": [{"type": "system", "value": reason, "score": confidence}],
    }


def _classify(command: str) -> tuple[str, str, float]:
    """Decide for a command without a catalog intent: (system intent, reason, confidence)."""
    folded = fold(command)
    # Its characters, read once: a marker none of whose first characters it
    # holds is not searched for.
    chars = set(folded)
    if not QUESTION_FIRSTS.isdisjoint(chars) and is_question(folded):
        return SYS_FALLBACK, "open_question", 0.8
    if has_marker(CONVERSATION, folded, chars) or has_marker(GREETING, folded, chars):
        return SYS_FALLBACK, "conversation", 0.7
    if (
        has_marker(EXCLAMATION, folded, chars) or expresses_emotion(command)
    ) and not has_marker(OPINION, folded, chars):
        return SYS_NO_ACTION, "emotional_expression", 0.75
    return SYS_FALLBACK, "no_catalog_match", 0.5


def _threshold(candidate: Candidate, options: dict[str, Any]) -> float:
    minimum = candidate.intent.min_confidence
    return float(options["min_confidence"] if minimum is None else minimum)


def _debug(candidate: Candidate, passed: bool) -> dict[str, Any]:
    return {
        "intent_id": candidate.intent.id,
        "segment_index": candidate.reading.seg.index,
        "confidence": candidate.confidence,
        "passed_threshold": passed,
        "strong": candidate.strong,
    }


def _clause_reason(reading: Reading) -> str:
    """Say why a clause that no intent claims was left alone."""
    markers = reading.markers
    if markers.negated:
        return "negated"
    if markers.question:
        return "question"
    if markers.chatty:
        return "remark"
    return "no_catalog_match"


def _unmatched_body(reading: Reading, reason: str, rivals: list[str]) -> dict[str, Any]:
    seg = reading.seg
    body: dict[str, Any] = {
        "segment_index": seg.index,
        "span": {"text": seg.text, "start": seg.start, "end": seg.end},
        "reason": reason,
    }
    if rivals:
        body["intent_ids"] = rivals
    return body


def filter_intents(
    request: Any,
    *,
    default_timezone: str = DEFAULT_TIMEZONE,
    compiled: Catalog | None = None,
) -> dict[str, Any]:
    """Filter one command against a catalog (§4.4); raises ``IntentFilterError`` on bad input.

    ``compiled`` is the request's catalog already compiled (a body's, compiled
    when it was published): it is used as is, whatever the compile cache holds.
    """
    started = time.perf_counter()
    req = parse_request(request, default_timezone)
    catalog, cached = (
        (compiled, True) if compiled is not None else cached_catalog(req.entries)
    )
    locale = req.locale or detect_locale(req.command)
    # From here on (the catalog is compiled): the command's own time.
    deadline = time.perf_counter() + FILTER_BUDGET
    # Patterns compiled on their first use: that time is not the command's.
    compiled_before = deferred_compile_seconds()
    with budget(REGEX_BUDGET):  # every catalog pattern of this command, together
        ctx = Context(req, catalog, locale)
        options = req.options
        command = req.command
        if options["allow_multi_intent"]:
            segments = segment(command)
        else:
            stripped = command.strip()
            start = command.index(stripped)
            segments = [Segment(0, stripped, start, start + len(stripped))]
        if not segments:  # only punctuation
            stripped = command.strip()
            start = command.index(stripped)
            segments = [Segment(0, stripped, start, start + len(stripped))]
        if len(segments) > MAX_SEGMENTS:
            ctx.note(
                f"the command has more than {MAX_SEGMENTS} clauses; "
                "the rest were not read"
            )
            segments = segments[:MAX_SEGMENTS]
        readings = [read_clause(ctx, seg) for seg in segments]
        # A clause that is only a time ("明天早上8点，叫我起床") lends it to its
        # neighbours; one that asks for something at its time keeps it.
        for position, reading in enumerate(readings):
            if reading.hits or not (reading.durations or reading.time_points):
                continue
            if timed_request(reading):
                continue
            for neighbour in (position + 1, position - 1):
                if (
                    0 <= neighbour < len(readings)
                    and readings[neighbour].borrowed is None
                ):
                    readings[neighbour].borrowed = reading

        selected: list[Candidate] = []
        rejected: list[Candidate] = []
        mentioned: list[Candidate] = []
        debug: list[dict[str, Any]] = []
        # clause position → why it gave no intent to run (with rival intent ids)
        unmatched: dict[int, tuple[str, list[str]]] = {}
        per_segment = (
            options["max_intents_per_segment"] if options["allow_multi_intent"] else 1
        )
        catalog_intents = catalog.intents
        keyword_owners = catalog.keyword_owners
        min_confidence = options["min_confidence"]
        debug_candidates = options["return_debug_candidates"]
        rule_intents = catalog.rule_intents
        for position, reading in enumerate(readings):
            if position and time.perf_counter() > deadline + (
                deferred_compile_seconds() - compiled_before
            ):
                ctx.note(
                    f"the command took longer than {FILTER_BUDGET * 1000:g} ms to "
                    f"filter; clauses from {position + 1} on were not read"
                )
                for later in range(position, len(readings)):
                    unmatched[later] = ("not_read", [])
                break
            # Only intents with a keyword hit, or rules beyond keywords, can match.
            reading.own(keyword_owners)
            by_owner = reading.by_owner
            # In catalog order (an intent's index is its place in the catalog).
            if not rule_intents:
                scored = sorted(by_owner)
            elif not by_owner:
                scored = sorted(rule_intents)
            else:
                scored = sorted(rule_intents.union(by_owner))
            candidates = []
            for done, index in enumerate(scored):
                if (
                    done
                    and not done % SCORED_BETWEEN_CHECKS
                    and time.perf_counter()
                    > deadline + (deferred_compile_seconds() - compiled_before)
                ):
                    # One long clause must not escape the budget either.
                    ctx.note(
                        f"the command took longer than {FILTER_BUDGET * 1000:g} ms "
                        f"to filter; {len(scored) - done} intents were not scored "
                        f"against clause {position + 1}"
                    )
                    break
                if (
                    c := score_intent(ctx, catalog_intents[index], reading)
                ) is not None:
                    candidates.append(c)
            if len(candidates) > 1:
                candidates.sort(key=rank)
            chosen = 0
            outcome: str | None = None
            for candidate in candidates:
                minimum = candidate.intent.min_confidence  # _threshold, inline
                passed = candidate.confidence >= float(
                    min_confidence if minimum is None else minimum
                )
                if debug_candidates:
                    debug.append(_debug(candidate, passed))
                if not passed:
                    continue
                if reading.markers.negated:
                    candidate.status = "rejected"
                    candidate.evidence.append(
                        {
                            "type": "negation",
                            "value": negation(reading.clause.folded.text) or "",
                            "score": 0,
                        }
                    )
                    rejected.append(candidate)
                    outcome = "negated"
                    break
                if reading.markers.question or not candidate.strong:
                    mentioned.append(candidate)
                    outcome = "question" if reading.markers.question else "remark"
                    break
                if chosen < per_segment:
                    selected.append(candidate)
                    chosen += 1
            if chosen or outcome is not None:
                if not chosen:
                    unmatched[position] = (outcome or "", [])
                continue
            # No catalog intent claims the clause: maybe its time implies one.
            implied, rivals = claim_by_time(ctx, reading)
            if implied is not None:
                passed = implied.confidence >= _threshold(implied, options)
                if options["return_debug_candidates"]:
                    debug.append(_debug(implied, passed))
                if passed:
                    selected.append(implied)
                    continue
            if _CONTENT.search(reading.clause.folded.text):
                # the reason is read only if the response reports it
                unmatched[position] = ("ambiguous" if rivals else "", rivals)
        if options["allow_multi_intent"]:
            kept = selected[: options["max_intents"]]
        else:
            kept = selected[:1]
        if len(kept) < len(selected):  # most commands: none is cut
            cut = {id(c.reading) for c in selected[len(kept) :]} - {
                id(c.reading) for c in kept
            }
            for position, reading in enumerate(readings):
                if id(reading) in cut:
                    unmatched[position] = ("max_intents", [])
        selected = kept
        # A clause whose time a neighbour's intent took gave that intent.
        for candidate in selected:
            if (lender := candidate.reading.borrowed) is not None:
                lent = {command[d.start : d.end] for d in lender.durations} | {
                    command[t.start : t.end] for t in lender.time_points
                }
                if lent & set(candidate.parameters.values()):
                    unmatched.pop(readings.index(lender), None)

        emit = options["emit_system_intent_when_empty"]
        intents: list[dict[str, Any]]
        if selected:
            ready = [c for c in selected if c.status == "ready"]
            decision = {
                "action": "execute_intents",
                "trigger_intent_id": selected[0].intent.id,
                "reason": "matched_catalog_intents"
                if ready
                else "missing_required_slots",
            }
            intents = [_intent_body(c) for c in selected]
        else:
            if rejected:
                system, reason, confidence = SYS_NO_ACTION, "negated_command", 0.8
            elif any(c.reading.markers.question for c in mentioned):
                system, reason, confidence = SYS_FALLBACK, "question_about_device", 0.8
            else:
                system, reason, confidence = _classify(command)
            decision = {
                "action": "no_action"
                if system == SYS_NO_ACTION
                else "fallback_reasoning",
                "trigger_intent_id": system,
                "reason": reason,
            }
            intents = (
                [_system_body(system, command, reason, confidence)]
                + [_intent_body(c) for c in rejected]
                if emit
                else []
            )
        response: dict[str, Any] = {
            "request_id": req.request_id,
            "decision": decision,
            "intents": intents,
            "meta": {
                "latency_ms": round((time.perf_counter() - started) * 1000, 3),
                "segment_count": len(segments),
                "catalog_size": len(catalog.intents),
                "time_signals": sum(
                    [len(r.durations) + len(r.time_points) for r in readings]
                ),
                "timezone": req.timezone,
                "locale": locale,
                "now": req.now.isoformat(),
                "catalog_cached": cached,
            },
        }
        if selected and unmatched:
            response["unmatched"] = [
                _unmatched_body(
                    readings[position],
                    reason or _clause_reason(readings[position]),
                    rivals,
                )
                for position, (reason, rivals) in sorted(unmatched.items())
            ]
        if ctx.warnings:
            response["meta"]["warnings"] = ctx.warnings
        if options["return_debug_candidates"]:
            response["debug_candidates"] = debug
        if options["return_debug_entities"]:
            response["debug_entities"] = [
                {
                    "segment_index": r.seg.index,
                    "entities": [
                        {
                            "type": e.type,
                            "value": e.value,
                            "text": e.text,
                            "start": e.start,
                            "end": e.end,
                        }
                        for e in r.entities
                    ],
                    "durations": [
                        {
                            "seconds": json_number(d.seconds),
                            "relative": d.relative,
                            "start": d.start,
                            "end": d.end,
                        }
                        for d in r.durations
                    ],
                    "time_points": [
                        {"at": t.at.isoformat(), "start": t.start, "end": t.end}
                        for t in r.time_points
                    ],
                    "numbers": [
                        {"value": json_number(v), "start": s, "end": e}
                        for v, s, e in r.numbers
                    ],
                }
                for r in readings
            ]
        return response
