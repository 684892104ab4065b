"""Random ids (UUID4) without a system call each.

``uuid.uuid4`` reads 16 bytes with ``os.urandom``: a ``getrandom`` system call
that lets go of the GIL, so on the event loop, with other threads busy (an MQTT
client, the journal's writer, Home Assistant's executor), getting it back costs
tens of µs at the median and milliseconds at the tail, two or three times in
every chat turn (measured in ``benchmarks.chat_path``: p50 19 µs, p99 263 µs,
worst 4.2 ms a call). Here the same operating-system randomness is read 4 KiB
at a time (one system call for 256 ids) and handed out 16 bytes at a time: the
ids are as random as ``uuid.uuid4``'s, and a process made by ``fork`` starts
a pool of its own.
"""

from __future__ import annotations

import os
import threading
from typing import Final
import uuid

POOL_BYTES: Final = 4096


class _Pool:
    """Operating-system random bytes, read a pool at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._data = b""
        self._at = 0

    def take(self) -> bytes:
        """Return 16 random bytes never handed out before."""
        with self._lock:
            at = self._at
            if at + 16 > len(self._data):
                self._data = os.urandom(POOL_BYTES)
                at = 0
            self._at = at + 16
            return self._data[at : at + 16]

    def forget(self) -> None:
        """Drop what is left (a forked child must not repeat its parent's ids)."""
        self._lock = threading.Lock()
        self._data = b""
        self._at = 0


_POOL: Final = _Pool()
os.register_at_fork(after_in_child=_POOL.forget)


def uuid4() -> uuid.UUID:
    """Return a random UUID (version 4), as ``uuid.uuid4`` does."""
    return uuid.UUID(bytes=_POOL.take(), version=4)


def uuid4_text() -> str:
    """Return a random UUID4 in its canonical text form."""
    return str(uuid4())


def uuid4_hex() -> str:
    """Return a random UUID4 as 32 hexadecimal digits."""
    return uuid4().hex
