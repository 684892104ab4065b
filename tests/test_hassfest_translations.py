"""Every translation file follows hassfest's schema (script/hassfest/translations.py).

The rules are in ``tests/hassfest/translations.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .hassfest.common import TRANSLATION_FILES, load_json, parse_json
from .hassfest.translations import translation_problems


def _sections_of_all_files() -> list[tuple[Path, str]]:
    pairs = []
    for path in TRANSLATION_FILES:
        try:
            pairs += [(path, key) for key in load_json(path)]
        except ValueError:
            pairs.append((path, "<unreadable>"))
    return pairs


@pytest.mark.parametrize("path", TRANSLATION_FILES, ids=lambda p: p.name)
def test_translation_file_is_one_json_object(path: Path) -> None:
    """Valid JSON, an object, no key twice (translations.py: "Invalid JSON")."""
    parse_json(path.read_text(encoding="utf-8"))


def test_every_language_is_checked() -> None:
    assert {path.stem for path in TRANSLATION_FILES} >= {"en", "zh-Hans"}


@pytest.mark.parametrize(
    ("path", "section"),
    _sections_of_all_files(),
    ids=[f"{p.name}-{s}" for p, s in _sections_of_all_files()],
)
def test_translation_section(path: Path, section: str) -> None:
    """One top-level section of one translation file follows hassfest's schema.

    Structure (allowed keys, required texts, sections inside ``sections``),
    key formats (option, state, entity and action keys ``[a-z0-9-_]+``),
    texts (non-empty, trimmed, no HTML, no URL, well-formed placeholders, none
    in states) and data_description keys naming fields of their data.
    """
    problems = translation_problems(load_json(path), only=section)
    assert not problems, f"{path.name}:\n" + "\n".join(problems)
