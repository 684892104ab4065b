"""The words of the lexicon's decision-marker lists, read from its source."""

from __future__ import annotations

import ast
from pathlib import Path

from custom_components.soul.core.intent_filter import lexicon


def marker_words() -> dict[str, list[str]]:
    """Each marker list's words (``NAME = _alternation(…)``; ``_`` is a space)."""
    tree = ast.parse(Path(lexicon.__file__).read_text(encoding="utf-8"))
    lists: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id == "_alternation"
            and isinstance(target := node.targets[0], ast.Name)
        ):
            words = ast.literal_eval(node.value.args[0])
            lists[target.id] = [w.replace("_", " ") for w in words.split()]
    return lists
