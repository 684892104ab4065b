"""``emotion.habituation``: a soul gets used to one source's repeated outbursts."""

from __future__ import annotations

import math

import pytest

from custom_components.soul.core.emotion.dynamics import (
    SHOCK_INTENSITY,
    ExecMode,
    apply_user_emotion,
    evolve,
    gate,
    initial_state,
    is_shock,
)
from custom_components.soul.core.emotion.habituation import (
    ALARMING,
    EVERYONE,
    HALF_LIFE,
    MAX_SOURCES,
    MOOD_GRACE,
    SOUL_MOOD_GRACE,
    Felt,
    Habituation,
    source_of,
)
from custom_components.soul.core.emotion.labels import Emotion
from custom_components.soul.core.emotion.persona import MBTI_TYPES, persona_from_mbti

T0 = 1_700_000_000.0


def test_first_outburst_is_felt_in_full_then_its_shock_less() -> None:
    h = Habituation()
    assert h.felt("s1", "user:a", Emotion.ANGER, 1.0, T0) == Felt(1.0, 1.0)
    second = h.felt("s1", "user:a", Emotion.ANGER, 1.0, T0 + 10)
    # strain 1.0 decayed over 10 s: the shock is decided on 1 / (1 + 0.977…)
    assert second.shock == pytest.approx(1 / (1 + 2 ** (-10 / HALF_LIFE)))
    assert second.shock < SHOCK_INTENSITY  # a second outburst soon after does not shock
    assert second.mood == 1.0  # while the mood still moves in full
    third = h.felt("s1", "user:a", Emotion.ANGER, 1.0, T0 + 20)
    assert third.shock < second.shock


def test_sources_and_souls_are_apart() -> None:
    h = Habituation()
    h.felt("s1", "user:a", Emotion.ANGER, 1.0, T0)
    assert h.felt("s1", "user:b", Emotion.ANGER, 1.0, T0 + 1).shock == 1.0
    assert h.felt("s2", "user:a", Emotion.ANGER, 1.0, T0 + 1).shock == 1.0
    assert h.felt("s1", "user:a", Emotion.ANGER, 1.0, T0 + 1).shock < 1.0


def test_only_alarming_input_is_dampened_and_counted() -> None:
    h = Habituation()
    h.felt("s1", "user:a", Emotion.FEAR, 1.0, T0)
    strain = h.strain("s1", "user:a", T0)
    # Sadness, disappointment and boredom are negative, but cannot shock: a
    # sad user is not an outburst the soul should get used to.
    for emotion in (
        Emotion.JOY,
        Emotion.GRATITUDE,
        Emotion.NEUTRAL,
        Emotion.CALM,
        Emotion.SADNESS,
        Emotion.DISAPPOINTMENT,
        Emotion.BOREDOM,
    ):
        assert h.felt("s1", "user:a", emotion, 0.8, T0) == Felt(0.8, 0.8)
    assert h.strain("s1", "user:a", T0) == strain
    for emotion in (Emotion.DISGUST, Emotion.FRUSTRATION, Emotion.ANXIETY):
        assert h.felt("s1", "user:a", emotion, 0.8, T0).shock < 0.8


def test_alarming_is_what_can_shock() -> None:
    assert {e for e in Emotion if is_shock(e, 1.0)} == ALARMING
    assert Emotion.SADNESS not in ALARMING


def test_strain_fades_with_its_half_life() -> None:
    h = Habituation()
    h.felt("s1", "user:a", Emotion.ANGER, 1.0, T0)
    assert h.strain("s1", "user:a", T0 + HALF_LIFE) == pytest.approx(0.5)
    # About 21 minutes after one outburst, the next one shocks again.
    back = T0 + HALF_LIFE * math.log2(1 / (1 / SHOCK_INTENSITY - 1)) + 1
    assert h.felt("s1", "user:a", Emotion.ANGER, 1.0, back).shock >= SHOCK_INTENSITY
    # A clock that went back does not grow the strain.
    assert h.strain("s1", "user:a", T0 - 100) <= h.strain("s1", "user:a", back)


def test_a_source_that_keeps_shouting() -> None:
    """Its shocks stop at once, its moves after a few; the strain keeps growing."""
    h = Habituation()
    felt = [h.felt("s1", "user:a", Emotion.ANGER, 1.0, T0 + 3 * n) for n in range(100)]
    shocks = [f.shock for f in felt]
    moods = [f.mood for f in felt]
    assert shocks == sorted(shocks, reverse=True)
    assert sum(s >= SHOCK_INTENSITY for s in shocks) == 1
    # The first outbursts move the mood in full: a few angry turns still
    # bring the soul to ask first.
    assert moods[: int(MOOD_GRACE)] == [1.0] * int(MOOD_GRACE)
    assert moods == sorted(moods, reverse=True)
    # The faster a source goes on, the less each input moves the mood: what
    # it moves in a while stays about the same.
    assert moods[-1] < 0.02
    assert sum(moods[50:]) < 2  # the last 150 s: not two outbursts' worth
    strain = h.strain("s1", "user:a", T0 + 297)
    assert 60 < strain < 80
    # The soul is used to it until the strain falls under about 0.05.
    back = T0 + 297 + HALF_LIFE * math.log2(strain / (1 / SHOCK_INTENSITY - 1)) + 1
    assert h.felt("s1", "user:a", Emotion.ANGER, 1.0, back).shock >= SHOCK_INTENSITY


def test_everyone_together() -> None:
    """A second source may shock the soul at once; a third not, nor its mood in full."""
    h = Habituation()
    assert h.felt("s1", "user:a", Emotion.ANGER, 1.0, T0).shock == 1.0
    assert h.felt("s1", "user:b", Emotion.ANGER, 1.0, T0 + 1).shock >= SHOCK_INTENSITY
    assert h.felt("s1", "user:c", Emotion.ANGER, 1.0, T0 + 2).shock < SHOCK_INTENSITY
    # Many sources, one outburst each: the mood is felt in full up to
    # everyone's grace, then less.
    moods = [
        h.felt("s1", f"user:{n}", Emotion.FEAR, 1.0, T0 + 3 + n).mood
        for n in range(int(SOUL_MOOD_GRACE) + 10)
    ]
    assert moods[0] == 1.0
    assert moods[-1] < 0.2
    assert h.strain("s1", EVERYONE, T0 + 30) > SOUL_MOOD_GRACE


def test_odd_intensities() -> None:
    h = Habituation()
    assert h.felt("s1", "u", Emotion.ANGER, 0.0, T0) == Felt(0.0, 0.0)
    nan = h.felt("s1", "u", Emotion.ANGER, math.nan, T0)
    assert math.isnan(nan.mood) and math.isnan(nan.shock)
    assert h.strain("s1", "u", T0) == 0.0
    # An intensity over 1 (a recognizer of another make) counts as 1, and
    # cannot shock through the strain.
    assert h.felt("s1", "u", Emotion.ANGER, 5.0, T0) == Felt(1.0, 1.0)
    assert h.strain("s1", "u", T0) == 1.0
    assert h.felt("s1", "u", Emotion.ANGER, 5.0, T0).shock == 0.5


def test_bounded_and_forgets_a_soul() -> None:
    h = Habituation()
    for n in range(MAX_SOURCES + 50):
        h.felt("s1", f"user:{n}", Emotion.ANGER, 1.0, T0 + n)
    assert len(h._strains) == MAX_SOURCES
    # the oldest went first; the newest is kept
    assert h.strain("s1", "user:0", T0 + MAX_SOURCES) == 0.0
    assert h.strain("s1", f"user:{MAX_SOURCES + 49}", T0 + MAX_SOURCES + 49) == 1.0
    # Faded strains go before fresh ones.
    h2 = Habituation()
    h2.felt("s1", "old", Emotion.ANGER, 1.0, T0)  # and s1's strain of everyone
    later = T0 + 20 * HALF_LIFE
    for n in range(MAX_SOURCES - 1):  # with s2's of everyone: MAX_SOURCES
        h2.felt("s2", f"user:{n}", Emotion.ANGER, 1.0, later)
    assert len(h2._strains) == MAX_SOURCES
    assert h2.strain("s2", "user:0", later) == 1.0
    assert h2.strain("s1", "old", later) == 0.0
    h2.forget_soul("s2")
    assert h2._strains == {}


def test_source_of() -> None:
    assert source_of("u1", "t1") == "user:u1"
    assert source_of(None, "t1") == "terminal:t1"
    assert source_of(None, None) == ""
    # a user id cannot pose as a body
    assert source_of("terminal:t1", None) != source_of(None, "t1")


def _shouted_at(
    mbti: str, emotion: Emotion, intensity: float, gap: int, duration: int
) -> tuple[int | None, float]:
    """One user's turns every ``gap`` s: (turns until not auto_execute, share blocked)."""
    persona = persona_from_mbti(mbti)
    habituation = Habituation()
    state = initial_state(persona, T0)
    first, blocked, samples = None, 0, 0
    for turns, at in enumerate(range(0, duration, gap), 1):
        now = T0 + at
        felt = habituation.felt("s1", "user:a", emotion, intensity, now)
        state = apply_user_emotion(
            state, persona, emotion, felt.mood, now, shock_intensity=felt.shock
        )
        if first is None and gate(state, now)[1] is not ExecMode.AUTO_EXECUTE:
            first = turns
        for second in range(0, gap, 1 if gap < 10 else 5):
            later = now + second
            samples += 1
            blocked += gate(evolve(state, persona, later), later)[1] is ExecMode.BLOCKED
    return first, blocked / samples


@pytest.mark.parametrize("mbti", MBTI_TYPES)
def test_one_user_shouting_at_a_soul_of_every_type(mbti: str) -> None:
    """What docs/emotion.md says of one source's outbursts, for each type."""
    # Anger at full intensity once a minute for an hour: blocked 97 % of the
    # time before habituation.
    _, blocked = _shouted_at(mbti, Emotion.ANGER, 1.0, 60, 3600)
    assert blocked < 0.03
    # Fear at 0.9 every 3 s for 10 minutes: 98 % before.
    _, blocked = _shouted_at(mbti, Emotion.FEAR, 0.9, 3, 600)
    assert blocked < 0.1
    # However fast (a black-box run, 2026-11-30: once a second held a soul
    # blocked 98.7 % of ten minutes).
    _, blocked = _shouted_at(mbti, Emotion.FEAR, 1.0, 1, 600)
    assert blocked < 0.15
    # A few angry turns still bring every type to ask first.
    first, _ = _shouted_at(mbti, Emotion.ANGER, 0.9, 3, 600)
    assert first is not None and first <= 6


@pytest.mark.parametrize("mbti", MBTI_TYPES)
def test_several_users_shouting_at_a_soul_of_every_type(mbti: str) -> None:
    """Three users, each fear once a second, the second and third a minute later."""
    persona = persona_from_mbti(mbti)
    habituation = Habituation()
    state = initial_state(persona, T0)
    blocked = 0
    for second in range(600):
        now = T0 + second
        for user in range(3):
            if second >= 56 * user:
                felt = habituation.felt("s1", f"user:{user}", Emotion.FEAR, 1.0, now)
                state = apply_user_emotion(
                    state,
                    persona,
                    Emotion.FEAR,
                    felt.mood,
                    now,
                    shock_intensity=felt.shock,
                )
        blocked += gate(state, now)[1] is ExecMode.BLOCKED
    assert blocked / 600 < 0.15
