"""``emotion.habituation``: a soul gets used to one source's repeated alarming input."""

from __future__ import annotations

import math

import pytest

from custom_components.soul.core.emotion.dynamics import SHOCK_INTENSITY, is_shock
from custom_components.soul.core.emotion.habituation import (
    ALARMING,
    HALF_LIFE,
    MAX_SOURCES,
    Habituation,
    source_of,
)
from custom_components.soul.core.emotion.labels import Emotion

T0 = 1_700_000_000.0


def test_first_negative_input_is_felt_in_full_then_less() -> None:
    h = Habituation()
    assert h.felt("s1", "user:a", Emotion.ANGER, 1.0, T0) == 1.0
    second = h.felt("s1", "user:a", Emotion.ANGER, 1.0, T0 + 10)
    # strain 1.0 decayed over 10 s: felt at 1 / (1 + 0.977…)
    assert second == pytest.approx(1 / (1 + 2 ** (-10 / HALF_LIFE)))
    assert second < SHOCK_INTENSITY  # a second outburst soon after does not shock
    third = h.felt("s1", "user:a", Emotion.ANGER, 1.0, T0 + 20)
    assert third < second


def test_sources_and_souls_are_apart() -> None:
    h = Habituation()
    h.felt("s1", "user:a", Emotion.ANGER, 1.0, T0)
    assert h.felt("s1", "user:b", Emotion.ANGER, 1.0, T0 + 1) == 1.0
    assert h.felt("s2", "user:a", Emotion.ANGER, 1.0, T0 + 1) == 1.0
    assert h.felt("s1", "user:a", Emotion.ANGER, 1.0, T0 + 1) < 1.0


def test_positive_and_neutral_input_is_felt_in_full_and_not_counted() -> None:
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
        assert h.felt("s1", "user:a", emotion, 0.8, T0) == 0.8
    assert h.strain("s1", "user:a", T0) == strain
    for emotion in (Emotion.DISGUST, Emotion.FRUSTRATION, Emotion.ANXIETY):
        assert h.felt("s1", "user:a", emotion, 0.8, T0) < 0.8


def test_alarming_is_what_can_shock() -> None:
    assert {e for e in Emotion if is_shock(e, 1.0)} == ALARMING
    assert Emotion.SADNESS not in ALARMING


def test_strain_fades_with_its_half_life() -> None:
    h = Habituation()
    h.felt("s1", "user:a", Emotion.ANGER, 1.0, T0)
    assert h.strain("s1", "user:a", T0 + HALF_LIFE) == pytest.approx(0.5)
    # About 21 minutes after one outburst, the next one shocks again.
    back = T0 + HALF_LIFE * math.log2(1 / (1 / SHOCK_INTENSITY - 1)) + 1
    assert h.felt("s1", "user:a", Emotion.ANGER, 1.0, back) >= SHOCK_INTENSITY
    # A clock that went back does not grow the strain.
    assert h.strain("s1", "user:a", T0 - 100) <= h.strain("s1", "user:a", back)


def test_a_source_that_keeps_shouting_moves_the_soul_less_and_less() -> None:
    h = Habituation()
    felt = [h.felt("s1", "user:a", Emotion.ANGER, 1.0, T0 + 3 * n) for n in range(100)]
    assert felt == sorted(felt, reverse=True)
    assert felt[-1] < 0.02
    assert sum(felt) < 6  # about the harmonic series: the pull grows slower and slower


def test_odd_intensities_pass_through() -> None:
    h = Habituation()
    assert h.felt("s1", "u", Emotion.ANGER, 0.0, T0) == 0.0
    assert math.isnan(h.felt("s1", "u", Emotion.ANGER, math.nan, T0))
    assert h.strain("s1", "u", T0) == 0.0
    # An intensity over 1 (a recognizer of another make) adds 1 at most.
    h.felt("s1", "u", Emotion.ANGER, 5.0, T0)
    assert h.strain("s1", "u", T0) == 1.0


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
    h2.felt("s1", "old", Emotion.ANGER, 1.0, T0)
    later = T0 + 20 * HALF_LIFE
    for n in range(MAX_SOURCES):
        h2.felt("s2", f"user:{n}", Emotion.ANGER, 1.0, later)
    assert len(h2._strains) == MAX_SOURCES
    assert h2.strain("s2", "user:0", later) == 1.0
    h2.forget_soul("s2")
    assert h2._strains == {}


def test_source_of() -> None:
    assert source_of("u1", "t1") == "user:u1"
    assert source_of(None, "t1") == "terminal:t1"
    assert source_of(None, None) == ""
    # a user id cannot pose as a body
    assert source_of("terminal:t1", None) != source_of(None, "t1")
