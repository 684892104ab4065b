"""The public dev set (``tests/data/eval``), scored by the rules of its README."""

from __future__ import annotations

from pathlib import Path

import pytest

from devtools.intent_eval import BUNDLED, check, load_cases, score, sets

SHARED = Path(__file__).resolve().parents[4] / "shared" / "eval"


def test_dev_set_scores_at_least_95_percent() -> None:
    (path, catalog), *_ = sets(BUNDLED)
    outcomes = list(score(load_cases(path), catalog))
    core = [o for o in outcomes if not o.case.get("stretch")]
    failures = [
        f"{o.case['id']} {o.case['command']}: {o.problem}" for o in core if not o.passed
    ]
    assert len(core) >= 30
    assert sum(o.passed for o in core) / len(core) >= 0.95, failures


def test_interop_sets_score_at_least_90_percent() -> None:
    """Soul's own sets for issue 15 (``tests/data/eval_interop/README.md``)."""
    scored = 0
    for path, catalog in sets(BUNDLED.parent / "eval_interop"):
        outcomes = [
            o for o in score(load_cases(path), catalog) if not o.case.get("stretch")
        ]
        failures = [
            f"{o.case['id']} {o.case['command']}: {o.problem}"
            for o in outcomes
            if not o.passed
        ]
        assert sum(o.passed for o in outcomes) / len(outcomes) >= 0.9, failures
        scored += 1
    assert scored == 2


def test_scorer_rejects_wrong_responses() -> None:
    """The scorer itself can fail: each rule of the README is checked."""
    response = {
        "decision": {"action": "execute_intents"},
        "intents": [
            {
                "intent_id": "light",
                "status": "ready",
                "normalized": {"mode": "on", "s": 600},
            }
        ],
    }
    assert check(response, {"decision": "execute_intents"}) is None
    assert check(response, {"decision": "no_action"}) is not None
    assert check(response, {"decision_any": ["no_action", "fallback_reasoning"]})
    assert check(response, {"decision_not": "execute_intents"}) is not None
    assert check(response, {"intents": [{"intent_id": "sys.no_action"}]}) is not None
    assert check(response, {"intents": [{"intent_id": "alarm"}]}) is not None
    assert check(
        response, {"intents": [{"intent_id": "light", "normalized": {"mode": "off"}}]}
    )
    assert (
        check(
            response,
            {
                "intents": [
                    {"intent_id": "light", "normalized": {"mode": ["off", "on"]}}
                ]
            },
        )
        is None
    )
    assert (
        check(response, {"intents": [{"intent_id": "light", "normalized": {"s": 605}}]})
        is None
    )
    assert check(
        response, {"intents": [{"intent_id": "light", "normalized": {"s": 620}}]}
    )
    assert (
        check(response, {"intents_status": {"light": "need_clarification"}}) is not None
    )


def test_bundled_copy_matches_the_shared_set() -> None:
    if not SHARED.is_dir():
        pytest.skip("no ../shared/eval next to this checkout")
    for name in ("intents_dev.jsonl", "catalog_desk_robot.json", "README.md"):
        assert (BUNDLED / name).read_bytes() == (SHARED / name).read_bytes(), name
