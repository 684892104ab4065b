"""services.yaml follows hassfest's schema and is translated (script/hassfest/services.py).

The rules are in ``tests/hassfest/services.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .hassfest.common import TRANSLATION_FILES, read_json, services_yaml
from .hassfest.services import service_problems, service_translation_problems


def test_services_yaml_schema() -> None:
    """Action and field structure, selectors, targets, unique fields."""
    problems = service_problems(services_yaml())
    assert not problems, "services.yaml:\n" + "\n".join(problems)


@pytest.mark.parametrize("path", TRANSLATION_FILES, ids=lambda p: p.name)
def test_services_yaml_is_translated(path: Path) -> None:
    """Names and descriptions of actions and fields, and select options."""
    problems = service_translation_problems(services_yaml(), read_json(path))
    assert not problems, f"{path.name}:\n" + "\n".join(problems)
