"""icons.json follows hassfest's schema (script/hassfest/icons.py).

The rules are in ``tests/hassfest/icons.py``.
"""

from __future__ import annotations

import pytest

from .hassfest.common import MDI_LIST, english, icons, services_yaml
from .hassfest.icons import ICONS, icon_reference_problems, mdi_names


def test_icons_schema() -> None:
    """mdi: icons that exist; actions and entities keyed as hassfest wants."""
    problems = ICONS(icons(), "")
    assert not problems, "icons.json:\n" + "\n".join(problems)


def test_icons_name_what_exists() -> None:
    """Every action has an icon; entity, state and section icons are not stale."""
    problems = icon_reference_problems(icons(), services_yaml(), english())
    assert not problems, "icons.json:\n" + "\n".join(problems)


def test_the_icon_list_is_there() -> None:
    """Icon names are checked wherever the frontend (and its icon list) is installed."""
    if not MDI_LIST.is_file():
        pytest.skip("home-assistant-frontend is not installed: icon names unchecked")
    assert "robot-outline" in mdi_names()
