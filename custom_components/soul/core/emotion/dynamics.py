"""How a soul's PAD state moves: pure functions of (state, elapsed time, inputs).

- **Impact.** A recognised user emotion pulls the soul towards the emotion's
  PAD prototype by ``BASE_IMPACT × sensitivity × intensity``; negative emotions
  weigh ``NEGATIVITY_BIAS`` times more ("bad is stronger than good",
  Baumeister et al. 2001).
- **Recovery.** Between inputs every dimension decays exponentially towards
  the persona's target with the persona's half-life.
- **Boredom.** After ``persona.boredom_after`` idle seconds the target slides
  towards the boredom prototype, reaching ``BOREDOM_MAX`` of the way after
  ``BOREDOM_RAMP`` more seconds. A user turn resets the idle clock.
- **Shock.** A very negative, intense input blocks execution for
  ``persona.shock_cooldown`` seconds; positive input shortens what remains.
- **Gating.** ``exec_probability`` is a logistic function of pleasure,
  dominance and excess arousal; ``exec_mode`` follows from thresholds.

Times are seconds since the epoch (floats); nothing here reads a clock.
"""

from __future__ import annotations

from enum import StrEnum
import math
from typing import Any, NamedTuple

from .labels import PAD, PROTOTYPE, Emotion
from .persona import Persona

BASE_IMPACT = 0.35
NEGATIVITY_BIAS = 1.5
MAX_IMPACT = 0.8
BOREDOM_MAX = 0.6
BOREDOM_RAMP = 1200.0
SHOCK_PLEASURE = -0.42  # prototype pleasure × intensity at or below this shocks …
SHOCK_INTENSITY = 0.95  # … when the input is this intense (a strong cue alone is 0.9)
SHOCK_RELIEF = 0.6  # a positive input of intensity 1 removes 60 % of the cooldown
SHOCK_PROBABILITY_CAP = 0.2
# exec_probability = σ(BIAS + W_P·P + W_D·D − W_A·max(0, A − AROUSAL_COMFORT))
GATE_BIAS = 2.2
GATE_W_P = 3.5
GATE_W_D = 1.0
GATE_W_A = 2.0
AROUSAL_COMFORT = 0.5
AUTO_EXECUTE_AT = 0.7
CONFIRM_AT = 0.45
NEUTRAL_RADIUS = 0.1
_STEP = 10.0  # seconds per integration step while the boredom target moves
_NEG_LN2 = -math.log(2)
_BORED = PROTOTYPE[Emotion.BOREDOM]

# Events of the tick clamp (§2 step 6).
TICK_MIN = 2.0
TICK_MAX = 5.0


class ExecMode(StrEnum):
    """Whether the soul is willing to act (§3.8 ``exec_mode``)."""

    AUTO_EXECUTE = "auto_execute"
    CONFIRM = "confirm"
    BLOCKED = "blocked"


class Mood(StrEnum):
    """Mehrabian's (1996) eight PAD octants, plus neutral near the origin."""

    EXUBERANT = "exuberant"  # +P +A +D
    DEPENDENT = "dependent"  # +P +A −D
    RELAXED = "relaxed"  # +P −A +D
    DOCILE = "docile"  # +P −A −D
    HOSTILE = "hostile"  # −P +A +D
    ANXIOUS = "anxious"  # −P +A −D
    DISDAINFUL = "disdainful"  # −P −A +D
    BORED = "bored"  # −P −A −D
    NEUTRAL = "neutral"


_OCTANTS = {
    (True, True, True): Mood.EXUBERANT,
    (True, True, False): Mood.DEPENDENT,
    (True, False, True): Mood.RELAXED,
    (True, False, False): Mood.DOCILE,
    (False, True, True): Mood.HOSTILE,
    (False, True, False): Mood.ANXIOUS,
    (False, False, True): Mood.DISDAINFUL,
    (False, False, False): Mood.BORED,
}


def _clamp(value: float) -> float:
    return max(-1.0, min(1.0, value))


class SoulState(NamedTuple):
    """A soul's emotion at one instant.

    A named tuple rather than a frozen dataclass: as immutable, and three
    times cheaper to make (every soul makes one on every tick).
    """

    p: float
    a: float
    d: float
    at: float  # when this state holds
    last_input_at: float  # last user turn (the boredom clock)
    shock_until: float = 0.0

    @property
    def pad(self) -> PAD:
        """Return the state as a PAD point."""
        return PAD(self.p, self.a, self.d)

    def as_dict(self) -> dict[str, float]:
        """Return the state for storage."""
        return {
            "p": self.p,
            "a": self.a,
            "d": self.d,
            "at": self.at,
            "last_input_at": self.last_input_at,
            "shock_until": self.shock_until,
        }

    @classmethod
    def from_dict(
        cls, data: Any, latest: float, shock_cooldown: float
    ) -> SoulState | None:
        """Return a stored state, or None when it is missing or malformed.

        Its times are what a clock could have given: one before 1970 is
        refused (at -1e18 a step of ``evolve`` no longer moved its time, and
        Home Assistant hung at start: a fuzz of the stores, 2026-11-29), one
        after ``latest`` is ``latest`` (a far-future one failed every tick;
        the caller's clock may start a little behind), and a shock ends at
        most ``shock_cooldown`` after ``latest``.
        """
        if not isinstance(data, dict):
            return None
        try:
            values = {
                key: float(data[key]) for key in ("p", "a", "d", "at", "last_input_at")
            }
            shock = float(data.get("shock_until", 0.0))
        except (KeyError, TypeError, ValueError, OverflowError):
            return None
        if not all(math.isfinite(v) for v in (*values.values(), shock)):
            return None
        if values["at"] < 0 or values["last_input_at"] < 0:
            return None
        at = min(values["at"], latest)
        return cls(
            p=_clamp(values["p"]),
            a=_clamp(values["a"]),
            d=_clamp(values["d"]),
            at=at,
            last_input_at=min(values["last_input_at"], at),
            shock_until=min(max(shock, 0.0), latest + shock_cooldown),
        )


def initial_state(persona: Persona, now: float) -> SoulState:
    """Return a new soul's state: its baseline, just spoken to."""
    p, a, d = persona.baseline
    return SoulState(p=p, a=a, d=d, at=now, last_input_at=now)


def boredom_level(persona: Persona, idle: float) -> float:
    """Return how far (0…BOREDOM_MAX) boredom has moved the target after ``idle`` s."""
    over = idle - persona.boredom_after
    if over <= 0:
        return 0.0
    return BOREDOM_MAX * min(1.0, over / BOREDOM_RAMP)


def target(persona: Persona, idle: float) -> PAD:
    """Return where the state is heading after ``idle`` seconds without a user turn."""
    level = boredom_level(persona, idle)
    bored = PROTOTYPE[Emotion.BOREDOM]
    return PAD(
        *(b + level * (x - b) for b, x in zip(persona.baseline, bored, strict=True))
    )


def _decay(state: SoulState, goal: PAD, seconds: float, half_life: float) -> PAD:
    keep = math.exp(_NEG_LN2 * seconds / half_life)
    return PAD(*(g + (x - g) * keep for x, g in zip(state.pad, goal, strict=True)))


def evolve(state: SoulState, persona: Persona, now: float) -> SoulState:
    """Return the state at ``now``: recovery towards the (possibly bored) target.

    Exact while the target is constant; in steps of ``_STEP`` seconds while
    boredom moves it. A clock that went backwards leaves the state unchanged.

    It runs for every soul on every tick, so it works on plain floats; the
    arithmetic is ``target``'s and ``_decay``'s, operation for operation.
    """
    t = state.at
    if now <= t:
        return state
    last_input_at = state.last_input_at
    ramp_start = last_input_at + persona.boredom_after
    ramp_end = ramp_start + BOREDOM_RAMP
    half_life = persona.recovery_half_life
    boredom_after = persona.boredom_after
    bp, ba, bd = persona.baseline
    xp, xa, xd = _BORED
    p, a, d = state.p, state.a, state.d
    while t < now:
        if ramp_start <= t < ramp_end:
            step = min(_STEP, now - t, ramp_end - t)
        elif t < ramp_start:
            step = min(now, ramp_start) - t
        else:
            step = now - t
        # boredom_level(persona, t + step / 2 - last_input_at), inlined
        over = t + step / 2 - last_input_at - boredom_after
        level = 0.0 if over <= 0 else BOREDOM_MAX * min(1.0, over / BOREDOM_RAMP)
        gp, ga, gd = (
            bp + level * (xp - bp),
            ba + level * (xa - ba),
            bd + level * (xd - bd),
        )
        keep = math.exp(_NEG_LN2 * step / half_life)
        p, a, d = gp + (p - gp) * keep, ga + (a - ga) * keep, gd + (d - gd) * keep
        t += step
    return SoulState(p, a, d, now, last_input_at, state.shock_until)


def impact(persona: Persona, emotion: Emotion, intensity: float) -> float:
    """Return the fraction of the way a user emotion pulls the soul."""
    if emotion is Emotion.NEUTRAL or intensity <= 0:
        return 0.0
    weight = BASE_IMPACT * persona.sensitivity * min(1.0, intensity)
    if PROTOTYPE[emotion].p < 0:
        weight *= NEGATIVITY_BIAS
    return max(0.0, min(MAX_IMPACT, weight))


def is_shock(emotion: Emotion, intensity: float) -> bool:
    """Return whether an input is negative and intense enough to shock."""
    intensity = min(1.0, intensity)
    return (
        intensity >= SHOCK_INTENSITY
        and PROTOTYPE[emotion].p * intensity <= SHOCK_PLEASURE
    )


def apply_user_emotion(
    state: SoulState,
    persona: Persona,
    emotion: Emotion,
    intensity: float,
    now: float,
    *,
    shock_intensity: float | None = None,
) -> SoulState:
    """Return the state after a user turn with the recognised emotion at ``now``.

    ``shock_intensity`` (``intensity`` when None) decides a shock: a soul
    used to the input's source feels it less for that (``habituation``).
    """
    state = evolve(state, persona, now)
    pull = impact(persona, emotion, intensity)
    goal = PROTOTYPE[emotion]
    p, a, d = (_clamp(x + pull * (g - x)) for x, g in zip(state.pad, goal, strict=True))
    shock_until = state.shock_until
    if is_shock(emotion, intensity if shock_intensity is None else shock_intensity):
        shock_until = max(shock_until, now + persona.shock_cooldown)
    elif goal.p > 0 and shock_until > now:
        remaining = (shock_until - now) * (1 - SHOCK_RELIEF * min(1.0, intensity))
        shock_until = now + remaining
    return SoulState(p=p, a=a, d=d, at=now, last_input_at=now, shock_until=shock_until)


def exec_probability(state: SoulState, now: float) -> float:
    """Return how willing the soul is to act, in [0, 1]."""
    return gate_of(state.p, state.a, state.d, state.shock_until > now)[0]


def exec_mode(state: SoulState, now: float) -> ExecMode:
    """Return the execution mode: blocked during a shock or below ``CONFIRM_AT``."""
    return gate_of(state.p, state.a, state.d, state.shock_until > now)[1]


def gate(state: SoulState, now: float) -> tuple[float, ExecMode]:
    """Return ``exec_probability`` and ``exec_mode`` at once (the logistic once)."""
    return gate_of(state.p, state.a, state.d, state.shock_until > now)


def gate_of(p: float, a: float, d: float, shocked: bool) -> tuple[float, ExecMode]:
    """Return ``gate`` of a PAD point, in shock or not (plain floats, for the tick)."""
    z = (
        GATE_BIAS
        + GATE_W_P * p
        + GATE_W_D * d
        - GATE_W_A * max(0.0, a - AROUSAL_COMFORT)
    )
    probability = 1 / (1 + math.exp(-z))
    if shocked:
        return min(probability, SHOCK_PROBABILITY_CAP), ExecMode.BLOCKED
    if probability >= AUTO_EXECUTE_AT:
        return probability, ExecMode.AUTO_EXECUTE
    if probability >= CONFIRM_AT:
        return probability, ExecMode.CONFIRM
    return probability, ExecMode.BLOCKED


def mood(pad: PAD) -> Mood:
    """Return the PAD octant of ``pad`` (neutral within ``NEUTRAL_RADIUS``)."""
    return mood_of(pad.p, pad.a, pad.d)


def mood_of(p: float, a: float, d: float) -> Mood:
    """Return the PAD octant of ``(p, a, d)`` (``mood`` without building a PAD)."""
    r = NEUTRAL_RADIUS
    if -r < p < r and -r < a < r and -r < d < r:
        return Mood.NEUTRAL
    return _OCTANTS[(p >= 0, a >= 0, d >= 0)]
