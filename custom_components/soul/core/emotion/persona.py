"""From an MBTI type to a temperament: traits, PAD baseline and reactivity.

Three published steps, each documented with its source in ``docs/emotion.md``:

1. MBTI → Big Five. McCrae & Costa (1989) found each MBTI scale to be a
   facet of one Big Five factor: E–I ↔ extraversion (r ≈ .74), S–N ↔ openness
   (r ≈ .72), T–F ↔ agreeableness (r ≈ .44), J–P ↔ conscientiousness
   (r ≈ .49); neuroticism is only weakly tied to introversion (r ≈ .16). A
   letter sets its factor to ± that correlation. The optional identity suffix
   (``-A`` assertive / ``-T`` turbulent, a neuroticism scale added by the
   16Personalities test) moves neuroticism by ±0.5.
2. Big Five → PAD temperament. Mehrabian (1996), also ALMA's default mood
   (Gebhard 2005), with S = emotional stability = −neuroticism:
   P = .21 E + .59 A + .19 S;  A = .15 O + .30 A − .57 S;
   D = .25 O + .17 C + .60 E − .32 A.
   Soul scales the result by ``BASELINE_SCALE`` so every soul starts in the
   calm middle of the space, with room to react.
3. Reactivity. Emotional contagion grows with neuroticism and agreeableness
   (Doherty 1997); stable people recover sooner and extraverts need more
   stimulation (they get bored sooner, Eysenck's arousal theory).
"""

from __future__ import annotations

from dataclasses import dataclass
import re

from .labels import PAD

MBTI_TYPES: tuple[str, ...] = tuple(
    a + b + c + d for a in "EI" for b in "SN" for c in "TF" for d in "JP"
)
_MBTI = re.compile(r"([EI])([SN])([TF])([JP])(?:-([AT]))?", re.IGNORECASE)

# McCrae & Costa (1989), correlations of the MBTI scales with the NEO factors.
R_EXTRAVERSION = 0.74
R_OPENNESS = 0.72
R_AGREEABLENESS = 0.44
R_CONSCIENTIOUSNESS = 0.49
R_NEUROTICISM_INTROVERSION = 0.16
IDENTITY_NEUROTICISM = 0.5
BASELINE_SCALE = 0.5

# Reactivity around an average person (all traits 0).
BASE_SENSITIVITY = 1.0
BASE_RECOVERY_HALF_LIFE = 90.0  # seconds for half of a deviation to fade
BASE_SHOCK_COOLDOWN = 60.0  # seconds a shock blocks execution
BASE_BOREDOM_AFTER = 600.0  # idle seconds before boredom starts to pull


class InvalidMBTIError(ValueError):
    """Raised for a string that is not an MBTI type."""


def normalize_mbti(value: object) -> str:
    """Return ``value`` as an upper-case MBTI type ("intj-t" → "INTJ-T"), or raise."""
    if not isinstance(value, str) or _MBTI.fullmatch(value.strip()) is None:
        raise InvalidMBTIError(
            f"invalid MBTI type {value!r}: expected four letters such as INTJ or "
            "ENFP, optionally followed by -A or -T"
        )
    return value.strip().upper()


def is_mbti(value: object) -> bool:
    """Return whether ``value`` is an MBTI type."""
    try:
        normalize_mbti(value)
    except InvalidMBTIError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class Traits:
    """Big Five factors, each in [-1, 1]."""

    openness: float
    conscientiousness: float
    extraversion: float
    agreeableness: float
    neuroticism: float

    @property
    def stability(self) -> float:
        """Return emotional stability (−neuroticism)."""
        return -self.neuroticism


def traits_from_mbti(mbti: str) -> Traits:
    """Return the Big Five estimate of an MBTI type (McCrae & Costa 1989)."""
    match = _MBTI.fullmatch(normalize_mbti(mbti))
    if match is None:  # pragma: no cover - normalize_mbti returns only MBTI types
        raise InvalidMBTIError(f"invalid MBTI type {mbti!r}")
    ei, sn, tf, jp, identity = match.groups()
    neuroticism = (
        R_NEUROTICISM_INTROVERSION if ei == "I" else -R_NEUROTICISM_INTROVERSION
    )
    if identity:
        neuroticism += (
            IDENTITY_NEUROTICISM if identity == "T" else -IDENTITY_NEUROTICISM
        )
    return Traits(
        openness=R_OPENNESS if sn == "N" else -R_OPENNESS,
        conscientiousness=R_CONSCIENTIOUSNESS if jp == "J" else -R_CONSCIENTIOUSNESS,
        extraversion=R_EXTRAVERSION if ei == "E" else -R_EXTRAVERSION,
        agreeableness=R_AGREEABLENESS if tf == "F" else -R_AGREEABLENESS,
        neuroticism=neuroticism,
    )


def temperament(traits: Traits) -> PAD:
    """Return Mehrabian's (1996) PAD temperament of a Big Five profile."""
    e, o, c = traits.extraversion, traits.openness, traits.conscientiousness
    a, s = traits.agreeableness, traits.stability
    return PAD(
        0.21 * e + 0.59 * a + 0.19 * s,
        0.15 * o + 0.30 * a - 0.57 * s,
        0.25 * o + 0.17 * c + 0.60 * e - 0.32 * a,
    )


@dataclass(frozen=True, slots=True)
class Persona:
    """The temperament of a soul: where its mood rests and how it reacts."""

    mbti: str
    traits: Traits
    baseline: PAD
    sensitivity: float  # multiplies the pull of the user's emotion
    stability: float  # in [0, 1]; 1 = hard to shake
    recovery_half_life: float  # seconds
    shock_cooldown: float  # seconds
    boredom_after: float  # idle seconds before boredom drift starts


def _clamp(value: float, low: float = -1.0, high: float = 1.0) -> float:
    return max(low, min(high, value))


def persona_from_mbti(mbti: str) -> Persona:
    """Return the persona of an MBTI type."""
    mbti = normalize_mbti(mbti)
    traits = traits_from_mbti(mbti)
    pad = temperament(traits)
    n, a, e = traits.neuroticism, traits.agreeableness, traits.extraversion
    return Persona(
        mbti=mbti,
        traits=traits,
        baseline=PAD(*(round(_clamp(BASELINE_SCALE * v), 4) for v in pad)),
        # Contagion: +40 % per unit of neuroticism, +30 % per unit of agreeableness.
        sensitivity=round(BASE_SENSITIVITY * (1 + 0.4 * n + 0.3 * a), 4),
        stability=round((1 - n) / 2, 4),
        # Stable souls recover up to 40 % sooner; neurotic ones up to 40 % later.
        recovery_half_life=round(BASE_RECOVERY_HALF_LIFE * (1 + 0.4 * n), 2),
        shock_cooldown=round(BASE_SHOCK_COOLDOWN * (1 + 0.5 * n), 2),
        # Extraverts seek stimulation and get bored sooner.
        boredom_after=round(BASE_BOREDOM_AFTER * (1 - 0.4 * e), 2),
    )
