"""Intents a time implies: "10分钟后提醒我" against a catalog without "提醒".

A clause that no catalog intent claims may still ask for the one thing the
catalog can do at a time. It is given to an intent when all of these hold:

- the clause names a moment: a relative duration ("10分钟后", "in an hour") or
  a clock time ("明天早上7点"), its own or lent by a time-only neighbour;
- it asks Soul to act on the user (``lexicon.asks_for_user``: "提醒我",
  "叫醒我们", "wake me up", "知らせて", "알려줘"), with no other subject
  ("我10分钟后到家" and "他说一小时后来找我" are statements);
- it is neither negated, nor a question, nor chat (an opinion, a request for
  conversation, a feeling);
- exactly one intent of the catalog has a slot that takes a moment
  (``Slot.moment``) and gets it from this clause; that intent has no rule that
  must hold (``keywords_all``, ``regex_all``, ``entity_types_all``) and no
  negative keyword in the clause. With two such intents the clause is
  ambiguous and nothing is claimed.

The claim's confidence is the noisy-or of ``IMPLIED_SCORE`` and the usual
slot evidence, so an intent's ``min_confidence`` still decides.
"""

from __future__ import annotations

from .entries import Intent
from .lexicon import asks_for_user
from .reading import Context, Reading
from .scoring import Candidate, add_slot_evidence, noisy_or
from .slots import fill_slots, time_signals

IMPLIED_SCORE = 0.45  # a moment, a request on the user, and one intent that fits


def residue(reading: Reading) -> list[str]:
    """Return the clause's folded text between its own time expressions."""
    text = reading.clause.folded.text
    offset = reading.seg.start
    spans = sorted(
        [(d.start - offset, d.end - offset) for d in reading.durations]
        + [(t.start - offset, t.end - offset) for t in reading.time_points]
    )
    pieces: list[str] = []
    position = 0
    for start, end in spans:
        if start < position:
            continue  # overlapping signals
        pieces.append(text[position:start])
        position = end
    pieces.append(text[position:])
    return pieces


def has_moment(reading: Reading) -> bool:
    """Whether the clause (or the neighbour lending it a time) names a moment."""
    durations, points = time_signals(reading)
    return bool(points) or any(d.relative for d in durations)


def timed_request(reading: Reading) -> bool:
    """Whether the clause asks Soul to act on the user at a moment it names."""
    markers = reading.markers
    return (
        has_moment(reading)
        and not markers.negated
        and not markers.question
        and not markers.chatty
        and asks_for_user(residue(reading))
    )


def _fits(ctx: Context, intent: Intent, reading: Reading) -> Candidate | None:
    if not intent.moment_slots or intent.has_hard_rules:
        return None
    if any(
        rule == "negative_keywords"
        for _, rule in reading.by_owner.get(intent.index, ())
    ):
        return None
    parameters, normalized, missing, _ = fill_slots(ctx, intent, reading)
    slot = next((name for name in intent.moment_slots if name in parameters), None)
    if slot is None:
        return None
    evidence: list[dict[str, object]] = [
        {"type": "implied_by_time", "value": slot, "score": IMPLIED_SCORE}
    ]
    scores = [IMPLIED_SCORE]
    add_slot_evidence(intent, parameters, evidence, scores)
    return Candidate(
        intent=intent,
        reading=reading,
        confidence=round(min(0.99, noisy_or(scores)), 3),
        evidence=evidence,
        parameters=parameters,
        normalized=normalized,
        missing=missing,
        strong=True,
        status="need_clarification" if missing else "ready",
    )


def claim_by_time(ctx: Context, reading: Reading) -> tuple[Candidate | None, list[str]]:
    """Return the intent the clause's time implies, or None and the rival intents."""
    if (
        not ctx.catalog.moment_intents
        # no time of its own nor lent: no moment (``has_moment``), no request
        or not (
            reading.durations or reading.time_points or reading.borrowed is not None
        )
        or not timed_request(reading)
    ):
        return None, []
    fitting = [
        candidate
        for index in ctx.catalog.moment_intents
        if (candidate := _fits(ctx, ctx.catalog.intents[index], reading)) is not None
    ]
    if len(fitting) == 1:
        return fitting[0], []
    return None, [c.intent.id for c in fitting]
