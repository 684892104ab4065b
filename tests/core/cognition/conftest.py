"""Fixtures of the cognition tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .journal_kit import Opener, open_journals


@pytest.fixture
def open_journal(tmp_path: Path) -> Iterator[Opener]:
    """Open journals (default ``tmp_path / "journal.db"``, clock at START); close them after."""
    yield from open_journals(tmp_path)
