"""Emotion dynamics with explicit times (``core.emotion.dynamics``)."""

from __future__ import annotations

import math

import pytest

from custom_components.soul.core.emotion.dynamics import (
    AUTO_EXECUTE_AT,
    BOREDOM_MAX,
    BOREDOM_RAMP,
    CONFIRM_AT,
    SHOCK_PROBABILITY_CAP,
    ExecMode,
    Mood,
    SoulState,
    apply_user_emotion,
    evolve,
    exec_mode,
    exec_probability,
    gate,
    impact,
    initial_state,
    is_shock,
    mood,
    mood_of,
    target,
)
from custom_components.soul.core.emotion.labels import PAD, PROTOTYPE, Emotion
from custom_components.soul.core.emotion.persona import (
    MBTI_TYPES,
    Persona,
    persona_from_mbti,
)

ENFP = persona_from_mbti("ENFP")
T0 = 1_700_000_000.0


def _state(p: float, a: float, d: float, **kwargs: float) -> SoulState:
    return SoulState(
        p=p,
        a=a,
        d=d,
        at=kwargs.get("at", T0),
        last_input_at=kwargs.get("last", T0),
        shock_until=kwargs.get("shock", 0.0),
    )


def test_initial_state_is_baseline() -> None:
    state = initial_state(ENFP, T0)
    assert state.pad == ENFP.baseline
    assert list(evolve(state, ENFP, T0 + 60).pad) == pytest.approx(list(ENFP.baseline))


def test_exponential_recovery_half_life() -> None:
    base = ENFP.baseline
    start = _state(base.p - 0.4, base.a + 0.4, base.d, at=T0, last=T0)
    half = evolve(start, ENFP, T0 + ENFP.recovery_half_life)
    assert half.p == pytest.approx(base.p - 0.2, abs=1e-9)
    assert half.a == pytest.approx(base.a + 0.2, abs=1e-9)
    assert half.at == T0 + ENFP.recovery_half_life
    # Evolution composes: two halves equal the whole.
    quarter = evolve(half, ENFP, T0 + 2 * ENFP.recovery_half_life)
    direct = evolve(start, ENFP, T0 + 2 * ENFP.recovery_half_life)
    assert list(quarter.pad) == pytest.approx(list(direct.pad))
    assert quarter.p == pytest.approx(base.p - 0.1, abs=1e-9)


def test_clock_going_backwards_changes_nothing() -> None:
    state = _state(0.5, 0.5, 0.5)
    assert evolve(state, ENFP, T0 - 10) is state


def test_boredom_drift_when_idle_long() -> None:
    state = initial_state(ENFP, T0)
    before = evolve(state, ENFP, T0 + ENFP.boredom_after - 1)
    assert list(before.pad) == pytest.approx(list(ENFP.baseline))
    # Long after the ramp the state rests on the bored target.
    bored = PROTOTYPE[Emotion.BOREDOM]
    late = evolve(state, ENFP, T0 + ENFP.boredom_after + BOREDOM_RAMP + 3600)
    expected = [
        b + BOREDOM_MAX * (x - b) for b, x in zip(ENFP.baseline, bored, strict=True)
    ]
    assert list(late.pad) == pytest.approx(expected, abs=1e-6)
    assert late.p < ENFP.baseline.p and late.a < ENFP.baseline.a
    # Step-by-step ticks agree with one long evolution (downtime after a restart).
    ticked = state
    for step in range(1, 700):
        ticked = evolve(ticked, ENFP, T0 + ENFP.boredom_after + step * 3)
    once = evolve(state, ENFP, T0 + ENFP.boredom_after + 699 * 3)
    assert list(ticked.pad) == pytest.approx(list(once.pad), abs=0.01)
    # A user turn resets the boredom clock.
    spoken = apply_user_emotion(late, ENFP, Emotion.NEUTRAL, 0.0, late.at)
    assert spoken.last_input_at == late.at
    recovered = evolve(spoken, ENFP, late.at + 4 * ENFP.recovery_half_life)
    assert list(recovered.pad) == pytest.approx(list(ENFP.baseline), abs=0.03)


def test_days_of_downtime_are_cheap_and_converge() -> None:
    state = _state(-0.9, 0.9, -0.9)
    late = evolve(state, ENFP, T0 + 30 * 86400)
    assert late.at == T0 + 30 * 86400
    assert all(math.isfinite(v) for v in late.pad)


def test_impact_negativity_bias_and_personality() -> None:
    joy = impact(ENFP, Emotion.JOY, 0.8)
    sadness = impact(ENFP, Emotion.SADNESS, 0.8)
    assert sadness == pytest.approx(1.5 * joy)
    assert impact(ENFP, Emotion.NEUTRAL, 1.0) == 0
    assert impact(ENFP, Emotion.JOY, 0.0) == 0
    sensitive = persona_from_mbti("INFP-T")
    steady = persona_from_mbti("ESTJ-A")
    assert impact(sensitive, Emotion.ANGER, 0.6) > impact(steady, Emotion.ANGER, 0.6)


def test_user_emotion_pulls_towards_prototype() -> None:
    state = initial_state(ENFP, T0)
    after = apply_user_emotion(state, ENFP, Emotion.SADNESS, 0.6, T0 + 1)
    assert after.p < state.p and after.d < state.d
    assert after.last_input_at == T0 + 1
    happy = apply_user_emotion(state, ENFP, Emotion.JOY, 0.6, T0 + 1)
    assert happy.p > state.p
    # Equal intensity: the negative pull is larger than the positive one.
    assert impact(ENFP, Emotion.SADNESS, 0.6) > impact(ENFP, Emotion.JOY, 0.6)


def test_shock_blocks_for_cooldown_and_positive_input_shortens_it() -> None:
    assert is_shock(Emotion.ANGER, 1.0)
    assert not is_shock(Emotion.ANGER, 0.9)  # plain "我生气了": strong, not extreme
    assert not is_shock(Emotion.ANGER, 0.3)
    assert not is_shock(Emotion.JOY, 1.0)
    assert not is_shock(Emotion.SADNESS, 1.0)  # grief is not an attack
    state = initial_state(ENFP, T0)
    shocked = apply_user_emotion(state, ENFP, Emotion.FEAR, 1.0, T0)
    assert shocked.shock_until == pytest.approx(T0 + ENFP.shock_cooldown)
    assert exec_mode(shocked, T0 + 1) is ExecMode.BLOCKED
    assert exec_probability(shocked, T0 + 1) <= SHOCK_PROBABILITY_CAP
    # Gratitude shortens the cooldown.
    soothed = apply_user_emotion(shocked, ENFP, Emotion.GRATITUDE, 1.0, T0 + 5)
    assert soothed.shock_until < shocked.shock_until
    assert soothed.shock_until > T0 + 5
    # After the cooldown the block lifts once pleasure has recovered.
    later = evolve(
        shocked, ENFP, T0 + ENFP.shock_cooldown + 10 * ENFP.recovery_half_life
    )
    assert exec_mode(later, later.at) is ExecMode.AUTO_EXECUTE


def test_gating_thresholds() -> None:
    def mode(p: float, a: float = 0.0, d: float = 0.0) -> tuple[float, ExecMode]:
        state = _state(p, a, d)
        return exec_probability(state, T0), exec_mode(state, T0)

    probability, m = mode(0.0)
    assert probability >= AUTO_EXECUTE_AT and m is ExecMode.AUTO_EXECUTE
    probability, m = mode(-0.5)
    assert CONFIRM_AT <= probability < AUTO_EXECUTE_AT and m is ExecMode.CONFIRM
    probability, m = mode(-0.9, 0.8, -0.5)
    assert probability < CONFIRM_AT and m is ExecMode.BLOCKED
    # Monotonic in pleasure and dominance, decreasing in excess arousal.
    assert mode(0.2)[0] > mode(0.1)[0]
    assert mode(0.0, d=0.3)[0] > mode(0.0, d=0.0)[0]
    assert mode(0.0, a=0.9)[0] < mode(0.0, a=0.4)[0] == mode(0.0, a=0.0)[0]
    for p in (-1.0, -0.3, 0.0, 0.4, 1.0):
        assert 0.0 <= mode(p, 1.0, -1.0)[0] <= 1.0


def test_every_baseline_starts_willing() -> None:
    for mbti in MBTI_TYPES:
        persona = persona_from_mbti(mbti)
        state = initial_state(persona, T0)
        assert exec_mode(state, T0) is ExecMode.AUTO_EXECUTE, mbti


def test_repeated_anger_escalates_to_blocked() -> None:
    state = initial_state(ENFP, T0)
    modes = []
    for i in range(6):
        state = apply_user_emotion(state, ENFP, Emotion.ANGER, 0.7, T0 + i * 5)
        modes.append(exec_mode(state, state.at))
    assert modes[0] is not ExecMode.BLOCKED
    assert ExecMode.CONFIRM in modes or ExecMode.BLOCKED in modes


@pytest.mark.parametrize(
    ("pad", "expected"),
    [
        (PAD(0.5, 0.5, 0.5), Mood.EXUBERANT),
        (PAD(0.5, 0.5, -0.5), Mood.DEPENDENT),
        (PAD(0.5, -0.5, 0.5), Mood.RELAXED),
        (PAD(0.5, -0.5, -0.5), Mood.DOCILE),
        (PAD(-0.5, 0.5, 0.5), Mood.HOSTILE),
        (PAD(-0.5, 0.5, -0.5), Mood.ANXIOUS),
        (PAD(-0.5, -0.5, 0.5), Mood.DISDAINFUL),
        (PAD(-0.5, -0.5, -0.5), Mood.BORED),
        (PAD(0.05, -0.05, 0.0), Mood.NEUTRAL),
    ],
)
def test_mood_octants(pad: PAD, expected: Mood) -> None:
    assert mood(pad) is expected


def test_state_storage_round_trip_and_garbage() -> None:
    state = _state(0.1, -0.2, 0.3, shock=T0 + 5)

    def read(data: object) -> SoulState | None:
        return SoulState.from_dict(data, T0 + 10, 60.0)

    assert read(state.as_dict()) == state
    assert read(None) is None
    assert read({"p": 1}) is None
    assert read({**state.as_dict(), "p": "x"}) is None
    assert read({**state.as_dict(), "a": float("nan")}) is None
    assert read({**state.as_dict(), "at": 10**400}) is None
    clamped = read({**state.as_dict(), "p": 7})
    assert clamped is not None and clamped.p == 1.0


@pytest.mark.parametrize("at", [-1e18, -1.5e17, -1e19, -1.0])
def test_a_stored_time_before_1970_is_no_state(at: float) -> None:
    """At -1e18 a step of ``evolve`` no longer moved its time: Home Assistant hung."""
    stored = {"p": 0, "a": 0, "d": 0, "at": at, "last_input_at": at}
    assert SoulState.from_dict(stored, T0, 60.0) is None
    stored = {"p": 0, "a": 0, "d": 0, "at": T0, "last_input_at": at}
    assert SoulState.from_dict(stored, T0, 60.0) is None


@pytest.mark.parametrize("later", [1e18, 1e308, 253402300800.0, 2.0**63])
def test_a_stored_time_after_the_latest_is_the_latest(later: float) -> None:
    """A far-future time failed every tick (``utc_ts``) and froze the soul."""
    stored = {"p": 0.5, "a": 0, "d": 0, "at": later, "last_input_at": later}
    state = SoulState.from_dict({**stored, "shock_until": later}, T0, 60.0)
    assert state is not None
    assert (state.at, state.last_input_at, state.shock_until) == (T0, T0, T0 + 60.0)
    assert evolve(state, ENFP, T0 + 3).at == T0 + 3


def _evolve_by_steps(state: SoulState, persona: Persona, now: float) -> SoulState:
    """``evolve`` as written before it worked on plain floats (PAD and replace)."""
    t = state.at
    if now <= t:
        return state
    ramp_start = state.last_input_at + persona.boredom_after
    ramp_end = ramp_start + BOREDOM_RAMP
    pad = state.pad
    while t < now:
        if ramp_start <= t < ramp_end:
            step = min(10.0, now - t, ramp_end - t)
        elif t < ramp_start:
            step = min(now, ramp_start) - t
        else:
            step = now - t
        goal = target(persona, t + step / 2 - state.last_input_at)
        keep = math.exp(-math.log(2) * step / persona.recovery_half_life)
        pad = PAD(*(g + (x - g) * keep for x, g in zip(pad, goal, strict=True)))
        t += step
    return state._replace(p=pad.p, a=pad.a, d=pad.d, at=now)


def test_evolve_equals_the_step_by_step_form_bit_for_bit() -> None:
    """Recovery, the boredom ramp, after it and a clock going back, in many steps."""
    for mbti in ("ENFP", "ISTJ", "INTJ-T"):
        persona = persona_from_mbti(mbti)
        for emotion in (Emotion.ANGER, Emotion.JOY, Emotion.NEUTRAL):
            state = apply_user_emotion(
                initial_state(persona, T0), persona, emotion, 1.0, T0
            )
            for step in (3.0, 0.5, 2.5, 600.0, 7.0, -4.0, 1300.0, 3.0, 5000.0):
                now = state.at + step
                assert evolve(state, persona, now) == _evolve_by_steps(
                    state, persona, now
                )
                state = evolve(state, persona, now)


def test_gate_is_exec_probability_and_exec_mode() -> None:
    persona = persona_from_mbti("ENFP")
    for emotion in Emotion:
        for intensity in (0.3, 0.96, 1.0):
            state = apply_user_emotion(
                initial_state(persona, T0), persona, emotion, intensity, T0
            )
            for now in (T0, T0 + 30, T0 + 600):
                assert gate(state, now) == (
                    exec_probability(state, now),
                    exec_mode(state, now),
                )
                assert mood_of(state.p, state.a, state.d) is mood(state.pad)
