"""Terminal registry throughput: 1,000 terminals connecting at once.

Each terminal sends the spec's connect sequence (online, skills, intent_catalog,
heartbeat). The baseline is bare ``json.loads`` of the same skills and catalog
payloads; the ratio says how much parsing, schema checks and bookkeeping cost on
top of decoding. Run with ``scripts/bench``.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from typing import Any

from custom_components.soul.core.registry import TerminalRegistry
from custom_components.soul.core.topics import Kind
from tests.core.spec_payloads import catalog, skills


def connect_messages(terminals: int) -> list[tuple[Kind, str, bytes]]:
    """Return every terminal's connect sequence as (kind, terminal id, payload)."""
    messages = []
    for n in range(terminals):
        tid = f"terminal-{n:04d}"
        messages += [
            (Kind.ONLINE, tid, b"online"),
            (Kind.SKILLS, tid, json.dumps(skills(terminal_id=tid)).encode()),
            (Kind.INTENT_CATALOG, tid, json.dumps(catalog(terminal_id=tid)).encode()),
            (Kind.HEARTBEAT, tid, b"1"),
        ]
    return messages


def best_of(repeats: int, run: Any) -> float:
    """Return the fastest of ``repeats`` runs, in seconds."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    """Measure and print snapshots per second and the ratio to the baseline."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--terminals", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    messages = connect_messages(args.terminals)
    snapshots = [m for m in messages if m[0] in (Kind.SKILLS, Kind.INTENT_CATALOG)]

    def baseline() -> None:
        for _, _, payload in snapshots:
            json.loads(payload)

    def registry_run() -> None:
        registry = TerminalRegistry(max_terminals=args.terminals)
        for kind, tid, payload in messages:
            registry.handle_message(kind, tid, payload)
        assert sum(1 for _ in registry) == args.terminals

    base = best_of(args.repeats, baseline)
    real = best_of(args.repeats, registry_run)
    count = len(snapshots)
    print(f"registry: {args.terminals} terminals connecting, {count} snapshots")
    print(
        f"  baseline json.loads : {count / base:12,.0f} snapshots/s ({base * 1000:.1f} ms)"
    )
    print(
        f"  registry            : {count / real:12,.0f} snapshots/s ({real * 1000:.1f} ms)"
    )
    print(f"  ratio registry/baseline time: {real / base:.1f}x")


if __name__ == "__main__":
    main()
