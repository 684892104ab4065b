"""Random ids from a pool of operating-system randomness (core/random_ids.py)."""

from __future__ import annotations

import os
from pathlib import Path
import subprocess
import sys
import threading
import uuid

import pytest

from custom_components.soul.core import random_ids
from custom_components.soul.core.cognition.events import new_trace_id

ROOT = Path(__file__).resolve().parents[2]


def test_ids_are_uuid4s_and_never_repeat() -> None:
    # Several pools' worth, so refills are crossed.
    count = 5 * random_ids.POOL_BYTES // 16 + 3
    texts = [random_ids.uuid4_text() for _ in range(count)]
    assert len(set(texts)) == count
    for text in texts[:50]:
        parsed = uuid.UUID(text)
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122
        assert str(parsed) == text
    hexes = {random_ids.uuid4_hex() for _ in range(1000)}
    assert len(hexes) == 1000
    assert all(len(h) == 32 and uuid.UUID(h).version == 4 for h in hexes)
    assert uuid.UUID(new_trace_id()).version == 4


def test_the_pool_reads_the_system_a_pool_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[int] = []
    real = os.urandom

    def counting(size: int) -> bytes:
        calls.append(size)
        return real(size)

    pool = random_ids._Pool()
    monkeypatch.setattr(random_ids.os, "urandom", counting)
    taken = [pool.take() for _ in range(random_ids.POOL_BYTES // 16 + 1)]
    assert calls == [random_ids.POOL_BYTES, random_ids.POOL_BYTES]
    assert len(set(taken)) == len(taken)
    assert all(len(t) == 16 for t in taken)


def test_threads_never_get_the_same_id() -> None:
    results: list[list[str]] = [[] for _ in range(8)]

    def make(into: list[str]) -> None:
        into.extend(random_ids.uuid4_hex() for _ in range(2000))

    threads = [threading.Thread(target=make, args=(r,)) for r in results]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [i for r in results for i in r]
    assert len(set(every)) == len(every) == 16000


FORK_CHECK = """
import os
from custom_components.soul.core import random_ids
random_ids.uuid4_hex()  # the parent's pool holds unused bytes now
read, write = os.pipe()
pid = os.fork()
if pid == 0:  # the child: send its next id and leave at once
    os.write(write, random_ids.uuid4_hex().encode())
    os._exit(0)
os.close(write)
child = os.read(read, 64).decode()
os.waitpid(pid, 0)
print(child, random_ids.uuid4_hex())
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_does_not_repeat_its_parents_ids() -> None:
    # In a process of its own: pytest's has threads, which fork warns about.
    done = subprocess.run(  # noqa: S603 - our own code, fixed arguments
        [sys.executable, "-c", FORK_CHECK],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    child, parent = done.stdout.split()
    assert len(child) == len(parent) == 32
    assert child != parent
