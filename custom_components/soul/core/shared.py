"""Parts shared by content: bodies of one kind publish the same catalogs and skills.

The intent filter keeps its compiled catalog parts here; the registry and the
protocol parser keep a snapshot's intents and skills, so a hundred bodies of
one model hold one copy.
"""

from __future__ import annotations

import hashlib
import marshal
import threading
from typing import Any
import weakref


class Shared[V]:
    """Parts by content, shared by everything that holds them.

    Bodies of one kind publish the same intents, slots, keywords and skills:
    each is checked and compiled once, and one copy serves every catalog or
    snapshot (each costs its own memory only for what is its own). Only what passed every
    check is kept, so an error is always found again, with its own wording.
    Bounded: the oldest entries go first; or ``weak``: an entry lasts while
    a catalog holds it. A weak entry is a plain reference without a callback
    (a ``WeakValueDictionary`` costs a Python call to read, and another when
    each value dies); dead ones are swept when the table is full.
    """

    def __init__(self, size: int, *, weak: bool = False) -> None:
        self._size = size
        self._weak = weak
        self._items: dict[Any, Any] = {}
        self._lock = threading.Lock()

    def get(self, key: Any) -> V | None:
        """Return the part kept for ``key``, or None (never a dead one)."""
        item = self._items.get(key)
        if item is None or not self._weak:
            return item
        return item()  # type: ignore[no-any-return]

    def keep(self, key: Any, value: V) -> V:
        """Keep ``value`` for ``key`` unless a part is kept already; return the kept one."""
        with self._lock:
            if self._weak:
                ref = self._items.get(key)
                kept = None if ref is None else ref()
                if kept is not None:
                    return kept  # type: ignore[no-any-return]
                self._items[key] = weakref.ref(value)
                if len(self._items) > self._size:
                    self._sweep()
                return value
            kept = self._items.setdefault(key, value)
            while len(self._items) > self._size:
                del self._items[next(iter(self._items))]
        return kept  # type: ignore[no-any-return]

    def _sweep(self) -> None:
        """Drop dead weak entries, then the oldest down to three quarters of the size.

        Room is left so that a table of living entries is not swept at every
        addition (the cost stays constant an entry, amortised).
        """
        items = self._items
        for key in [key for key, ref in items.items() if ref() is None]:
            del items[key]
        while len(items) > self._size * 3 // 4:
            del items[next(iter(items))]

    def clear(self) -> None:
        """Forget every part."""
        with self._lock:
            self._items.clear()


def content_key(raw: Any, *, digest: bool = True) -> bytes | None:
    """Return a key for plain JSON content (None for anything else).

    The content's bytes (equal content gives equal bytes, see
    ``cached_catalog``); with ``digest``, their 32-byte digest, for a large
    part (a key is kept while its part lives).
    """
    try:
        content = marshal.dumps(raw, 2)
    except (TypeError, ValueError):
        return None
    return _digest(content) if digest else content


# hashlib lets go of the GIL to hash 2,048 bytes or more, and takes it back
# after. Done again and again by a thread parsing a snapshot, that starves the
# event loop: each letting go wakes the loop's thread waiting for the GIL,
# which finds it taken again and starts its 5 ms wait over, so it never asks
# the parsing thread to switch. 52 ordinary skills held the loop for 145 ms
# at once. Pieces below that size are hashed with the GIL held.
_GIL_FREE_HASH = 2048
_PIECE = _GIL_FREE_HASH - 1


def _digest(content: bytes) -> bytes:
    """Return the 32-byte BLAKE2b digest of ``content``, never letting go of the GIL."""
    if len(content) < _GIL_FREE_HASH:
        return hashlib.blake2b(content, digest_size=32).digest()
    hasher = hashlib.blake2b(digest_size=32)
    view = memoryview(content)
    for start in range(0, len(content), _PIECE):
        hasher.update(view[start : start + _PIECE])
    return hasher.digest()
