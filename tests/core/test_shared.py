"""Tests of the parts shared by content (core/shared.py)."""

from __future__ import annotations

import hashlib
import marshal
from typing import Any

import pytest

from custom_components.soul.core import shared
from custom_components.soul.core.shared import content_key


@pytest.mark.parametrize("size", [0, 1, 2046, 2047, 2048, 2049, 4094, 4095, 70000])
def test_digest_is_blake2b_of_the_content(size: int) -> None:
    """A large content's key is its BLAKE2b digest, however it is hashed."""
    raw = "x" * size
    assert (
        content_key(raw)
        == hashlib.blake2b(marshal.dumps(raw, 2), digest_size=32).digest()
    )
    assert content_key(raw, digest=False) == marshal.dumps(raw, 2)


def test_digest_never_hands_hashlib_a_piece_it_would_hash_without_the_gil(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Python's hashlib lets go of the GIL from 2,048 bytes; no piece is as large.

    Letting go and taking it back again and again in a thread that parses a
    snapshot starved the event loop (52 ordinary skills: 145 ms at once).
    """
    sizes: list[int] = []
    blake2b = hashlib.blake2b

    class Recording:
        def __init__(self, data: Any = b"", **kwargs: Any) -> None:
            self._hash = blake2b(**kwargs)
            self.update(data)

        def update(self, data: Any) -> None:
            sizes.append(len(data))
            self._hash.update(data)

        def digest(self) -> bytes:
            return self._hash.digest()

    monkeypatch.setattr(shared.hashlib, "blake2b", Recording)
    schema = {
        "properties": {f"p{i}": {"description": f"colour {i} " * 40} for i in range(24)}
    }
    assert len(marshal.dumps(schema, 2)) > 3 * 2048
    key = content_key(schema)
    monkeypatch.undo()
    assert key == hashlib.blake2b(marshal.dumps(schema, 2), digest_size=32).digest()
    assert sizes
    assert max(sizes) < 2048


def test_other_content_has_no_key() -> None:
    """Content marshal cannot write (an object) has no key."""
    assert content_key(object()) is None
