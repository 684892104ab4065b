"""Every test reads its texts afresh: nothing another test read is kept."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from custom_components.soul.core.intent_filter import said


@pytest.fixture(autouse=True)
def _fresh_texts() -> Iterator[None]:
    """Forget the texts read before (and after: the next module starts afresh)."""
    said.forget()
    yield
    said.forget()
