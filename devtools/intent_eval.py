"""Score the intent filter on an evaluation set (rules in ``tests/data/eval/README.md``).

``python -m devtools.intent_eval`` scores the bundled dev set;
``--eval-dir DIR`` scores another set laid out the same way (``intents_*.jsonl``
with ``catalog_*.json``), e.g. ``../shared/eval``; ``-v`` prints every failure.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from dataclasses import dataclass
import json
from pathlib import Path
from typing import Any

from custom_components.soul.core.intent_filter import filter_intents

BUNDLED = Path(__file__).resolve().parents[1] / "tests" / "data" / "eval"
DEFAULT_NOW = "2026-02-22T17:40:00+08:00"
DEFAULT_TIMEZONE = "Asia/Shanghai"


@dataclass(frozen=True, slots=True)
class Outcome:
    """One scored case: ``problem`` is None when it passed."""

    case: dict[str, Any]
    response: dict[str, Any]
    problem: str | None

    @property
    def passed(self) -> bool:
        """Return whether every expectation held."""
        return self.problem is None


def load_cases(path: Path) -> list[dict[str, Any]]:
    """Return the cases of a JSON-lines file."""
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def request_for(case: dict[str, Any], catalog: list[Any]) -> dict[str, Any]:
    """Return the filter request the README prescribes for ``case``."""
    return {
        "command": case["command"],
        "intent_catalog": catalog,
        "now": case.get("now", DEFAULT_NOW),
        "timezone": DEFAULT_TIMEZONE,
    }


def _value_matches(got: Any, want: Any) -> bool:
    for option in want if isinstance(want, list) else [want]:
        if isinstance(option, bool) or not isinstance(option, int | float):
            if got == option:
                return True
        elif (
            isinstance(got, int | float)
            and not isinstance(got, bool)
            and abs(got - option) <= max(1, abs(option) * 0.01)
        ):
            return True
    return False


def check(response: dict[str, Any], expect: dict[str, Any]) -> str | None:
    """Return what is wrong with ``response`` against ``expect``, or None."""
    action = response["decision"]["action"]
    if "decision" in expect and action != expect["decision"]:
        return f"decision {action}, expected {expect['decision']}"
    if "decision_any" in expect and action not in expect["decision_any"]:
        return f"decision {action}, expected one of {expect['decision_any']}"
    if "decision_not" in expect and action == expect["decision_not"]:
        return f"decision {action}, expected anything else"
    wanted = expect.get("intents") or []
    if wanted and wanted[0]["intent_id"].startswith("sys."):
        first = response["intents"][0]["intent_id"] if response["intents"] else None
        if first != wanted[0]["intent_id"]:
            return f"first intent {first}, expected {wanted[0]['intent_id']}"
    elif wanted:
        got = [i for i in response["intents"] if not i["intent_id"].startswith("sys.")]
        got_ids = [i["intent_id"] for i in got]
        want_ids = [i["intent_id"] for i in wanted]
        if got_ids != want_ids:
            return f"intents {got_ids}, expected {want_ids}"
        for have, want in zip(got, wanted, strict=True):
            for key, value in want.get("normalized", {}).items():
                if not _value_matches(have["normalized"].get(key), value):
                    return (
                        f"{have['intent_id']}.{key} = {have['normalized'].get(key)!r}, "
                        f"expected {value!r}"
                    )
    for intent_id, status in (expect.get("intents_status") or {}).items():
        statuses = [
            i["status"] for i in response["intents"] if i["intent_id"] == intent_id
        ]
        if status not in statuses:
            return f"{intent_id} status {statuses}, expected {status}"
    return None


def score(cases: list[dict[str, Any]], catalog: list[Any]) -> Iterator[Outcome]:
    """Run and check every case."""
    for case in cases:
        response = filter_intents(request_for(case, catalog))
        yield Outcome(case, response, check(response, case["expect"]))


def sets(eval_dir: Path) -> Iterator[tuple[Path, list[Any]]]:
    """Yield each ``intents_*.jsonl`` of ``eval_dir`` with its catalog."""
    catalogs = sorted(eval_dir.glob("catalog_*.json"))
    for path in sorted(eval_dir.glob("intents_*.jsonl")):
        stem = path.stem.removeprefix("intents_")
        match = [c for c in catalogs if stem in c.stem] or catalogs[:1]
        yield path, json.loads(match[0].read_text(encoding="utf-8"))


def main() -> None:
    """Print the score of every set in the evaluation directory."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--eval-dir", type=Path, default=BUNDLED)
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    for path, catalog in sets(args.eval_dir):
        outcomes = list(score(load_cases(path), catalog))
        for stretch in (False, True):
            chosen = [o for o in outcomes if bool(o.case.get("stretch")) is stretch]
            if not chosen:
                continue
            passed = sum(o.passed for o in chosen)
            label = "stretch" if stretch else "core"
            print(
                f"{path.name} {label}: {passed}/{len(chosen)} = {passed / len(chosen):.1%}"
            )
        if args.verbose:
            for outcome in outcomes:
                if not outcome.passed:
                    print(
                        f"  {outcome.case.get('id')} {outcome.case['command']!r}: {outcome.problem}"
                    )


if __name__ == "__main__":
    main()
