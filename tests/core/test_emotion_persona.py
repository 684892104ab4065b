"""MBTI → traits → PAD baseline and reactivity (``core.emotion.persona``)."""

from __future__ import annotations

import pytest

from custom_components.soul.core.emotion.persona import (
    BASELINE_SCALE,
    MBTI_TYPES,
    InvalidMBTIError,
    Traits,
    is_mbti,
    normalize_mbti,
    persona_from_mbti,
    temperament,
    traits_from_mbti,
)


def test_sixteen_types() -> None:
    assert len(MBTI_TYPES) == 16 == len(set(MBTI_TYPES))
    assert all(is_mbti(t) for t in MBTI_TYPES)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("intj", "INTJ"), (" ENFP-t ", "ENFP-T"), ("Istj-A", "ISTJ-A")],
)
def test_normalize(raw: str, expected: str) -> None:
    assert normalize_mbti(raw) == expected


@pytest.mark.parametrize(
    "raw", ["", "ABCD", "INTJX", "INT", "INTJ-X", None, 4, "INTJ-"]
)
def test_invalid_types_rejected(raw: object) -> None:
    assert not is_mbti(raw)
    with pytest.raises(InvalidMBTIError, match="invalid MBTI type"):
        normalize_mbti(raw)


def test_traits_follow_mccrae_costa() -> None:
    enfj = traits_from_mbti("ENFJ")
    istp = traits_from_mbti("ISTP")
    assert enfj.extraversion == 0.74 and istp.extraversion == -0.74
    assert enfj.openness == 0.72 and istp.openness == -0.72
    assert enfj.agreeableness == 0.44 and istp.agreeableness == -0.44
    assert enfj.conscientiousness == 0.49 and istp.conscientiousness == -0.49
    # Introverts lean slightly neurotic; the -T/-A identity moves it further.
    assert istp.neuroticism > enfj.neuroticism
    assert traits_from_mbti("ISTP-T").neuroticism > istp.neuroticism
    assert traits_from_mbti("ISTP-A").neuroticism < istp.neuroticism


def test_mehrabian_formula() -> None:
    traits = Traits(
        openness=0.5,
        conscientiousness=-0.2,
        extraversion=0.3,
        agreeableness=0.1,
        neuroticism=-0.4,
    )
    p, a, d = temperament(traits)
    assert p == pytest.approx(0.21 * 0.3 + 0.59 * 0.1 + 0.19 * 0.4)
    assert a == pytest.approx(0.15 * 0.5 + 0.30 * 0.1 - 0.57 * 0.4)
    assert d == pytest.approx(0.25 * 0.5 + 0.17 * -0.2 + 0.60 * 0.3 - 0.32 * 0.1)


def _neutral(**overrides: float) -> Traits:
    values = dict.fromkeys(
        (
            "openness",
            "conscientiousness",
            "extraversion",
            "agreeableness",
            "neuroticism",
        ),
        0.0,
    )
    values.update(overrides)
    return Traits(**values)


@pytest.mark.parametrize(
    ("trait", "dimension", "sign"),
    [
        ("extraversion", 0, 1),  # extraverts are more pleasant
        ("agreeableness", 0, 1),
        ("neuroticism", 0, -1),  # stability raises pleasure
        ("neuroticism", 1, 1),  # neuroticism raises arousal
        ("extraversion", 2, 1),  # extraverts are dominant
        ("agreeableness", 2, -1),  # agreeable people are submissive
        ("openness", 1, 1),
        ("conscientiousness", 2, 1),
    ],
)
def test_traits_move_baseline_like_the_literature(
    trait: str, dimension: int, sign: int
) -> None:
    low = temperament(_neutral(**{trait: -0.5}))[dimension]
    high = temperament(_neutral(**{trait: 0.5}))[dimension]
    assert (high - low) * sign > 0


def test_persona_baseline_and_reactivity() -> None:
    enfj = persona_from_mbti("enfj")
    assert enfj.mbti == "ENFJ"
    assert enfj.baseline.p == pytest.approx(
        BASELINE_SCALE * temperament(enfj.traits).p, abs=1e-4
    )
    infp_t = persona_from_mbti("INFP-T")
    estj_a = persona_from_mbti("ESTJ-A")
    # The turbulent, agreeable soul is moved more, recovers slower, stays shocked longer.
    assert infp_t.sensitivity > estj_a.sensitivity
    assert infp_t.recovery_half_life > estj_a.recovery_half_life
    assert infp_t.shock_cooldown > estj_a.shock_cooldown
    assert infp_t.stability < estj_a.stability
    # Extraverts get bored sooner.
    assert (
        persona_from_mbti("ESTJ").boredom_after
        < persona_from_mbti("ISTJ").boredom_after
    )
    for mbti in MBTI_TYPES:
        persona = persona_from_mbti(mbti)
        assert all(-1 <= v <= 1 for v in persona.baseline)
        assert persona.sensitivity > 0 and persona.recovery_half_life > 0
