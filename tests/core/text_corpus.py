"""Texts many tests read: the dev sets, the strings of test files, generated mixes."""

from __future__ import annotations

import ast
import json
from pathlib import Path
import random

from custom_components.soul.core.emotion.lexicon import COMPILED_STRUCTURES, TABLE

ROOT = Path(__file__).resolve().parents[2]


def strings_of_tests(folder: Path) -> list[str]:
    """Return the string constants (1 to 200 characters) of the test files in ``folder``."""
    found: list[str] = []
    for path in sorted(folder.glob("test_*.py")):
        found.extend(
            node.value
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and 0 < len(node.value) <= 200
        )
    return found


def corpus() -> list[str]:
    """Return the dev sets' texts, the emotion and filter tests' strings and 4,000 mixes."""
    texts: list[str] = []
    for name in ("intents_dev.jsonl", "emotions_dev.jsonl"):
        for line in (ROOT / "tests/data/eval" / name).read_text().splitlines():
            if line.strip():
                case = json.loads(line)
                texts.append(case.get("command") or case.get("text") or "")
    texts += strings_of_tests(ROOT / "tests/core/emotion")
    texts += strings_of_tests(ROOT / "tests/core/intent_filter")
    # Generated: surfaces, structure literals and neutral words, mixed.
    rng = random.Random(7)  # noqa: S311 - test data, not secrets
    surfaces = sorted(TABLE)
    literals = [literal for literal, *_rest in COMPILED_STRUCTURES]
    neutral = [
        "灯",
        "帮我把",
        "变成",
        "绿色",
        "点头",
        "10分钟后",
        "提醒我",
        "開燈",
        "吧",
    ]
    neutral += ["\n", " ", "。", "ＡＢ", "İ", "ǅ", "﹗", "！", "～"]
    for _ in range(4000):
        pieces = []
        for _piece in range(rng.randint(1, 5)):
            roll = rng.random()
            if roll < 0.35:
                surface = rng.choice(surfaces)
                if rng.random() < 0.3 and len(surface) > 1:  # a fragment of one
                    cut = rng.randint(1, len(surface) - 1)
                    surface = surface[:cut] if rng.random() < 0.5 else surface[cut:]
                pieces.append(surface)
            elif roll < 0.45:
                pieces.append(rng.choice(literals))
            else:
                pieces.append(rng.choice(neutral))
        texts.append("".join(pieces))
    return texts
