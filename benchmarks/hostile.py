"""Hostile inputs against the event loop's 20 ms budget, each with a benign twin.

Every class of untrusted input (``docs/security.md``) gets its worst inputs
fed to the code Home Assistant runs, and an ordinary input of the same size
goes the same way in the same run. The figure is how long the event loop is
held for one input, in ms:

- ``loop``: the part that runs on the event loop is called directly; its wall
  time is the loop's hold (median of ``--rounds``; one round when it takes
  longer than a quarter second);
- ``stall``: where the product moves the work off the loop (the executor, a
  thread), the input goes through that path inside a running loop, and a
  ticker coroutine sleeping 1 ms records its longest lateness: what stays on
  the loop plus what the worker thread takes by holding the GIL (median of
  the rounds). Such a row notes the longest garbage collection meanwhile
  when it reached 5 ms: a collection holds the GIL in whichever thread runs it.

Classes: 1 poisoned JSON and text (``core/untrusted.py``), 2 untrusted
regexes (catalog patterns in ``filter_intents``, schema ``pattern`` in
``Skill.argument_errors``, ``safe_regex.compile_untrusted``), 3 big catalogs
through ``SnapshotIngest`` and the filter afterwards, 4 a schema flood, 5
filling the registry with phantom ids, 6 Star frames (``StarHub.receive`` and
the transport's threaded decode), 7 chat bodies and model replies, 8 other
attacks found by reading the code, 9 the slow inputs a fuzzer found, 10 an
MCP server's messages (``core/mcp/messages.py`` and the SDK's result
models; 10b over HTTP, ``core/mcp/http.py``).
Each prints its inputs, then a summary
prints one row per class: its worst input against the budget and against the
benign twin. ``--check`` exits 1 when a class misses the budget. Run with
``scripts/bench`` or ``.venv/bin/python -m benchmarks.hostile [--quick]``.

This module is the entry point: arguments, the run of the classes and the
report. The classes live in helper modules without a ``__main__`` block:
``hostile_json`` (1), ``hostile_regex`` (2), ``hostile_catalog`` (3-5),
``hostile_star`` (6), ``hostile_chat`` (7-8, and the fake LLM server this
module runs as a child with ``--serve-llm``), ``hostile_fuzz`` (9) and
``hostile_mcp`` (10); ``hostile_meter`` holds the
budget, shared inputs and the measuring.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable
import gc
import logging
import os
import platform
import sys
import time

from benchmarks.hostile_catalog import catalogs, registry, schema_flood
from benchmarks.hostile_chat import chat, found, serve_llm
from benchmarks.hostile_fuzz import fuzzed
from benchmarks.hostile_json import poisoned_json
from benchmarks.hostile_mcp import mcp_messages
from benchmarks.hostile_meter import BUDGET_MS, Meter, Section, Ticker
from benchmarks.hostile_regex import regexes
from benchmarks.hostile_star import star_frames
from custom_components.soul.core import json_schema, regex_chars, safe_regex
from custom_components.soul.core.intent_filter import clear_compile_cache

# -- report ------------------------------------------------------------------------------


def print_section(section: Section) -> None:
    """Print a class's inputs."""
    print(f"\n{section.number}. {section.title}")
    print(f"   path: {section.path}")
    print(
        f"   {'input':<56}{'size':>16}{'how':>7}{'hostile':>11}{'benign':>10}"
        f"{'ratio':>9}  verdict"
    )
    for row in section.rows:
        benign = "-" if row.benign is None else f"{row.benign:.3f}"
        print(
            f"   {row.name:<56}{row.size:>16}{row.how:>7}{row.hostile:>11.3f}"
            f"{benign:>10}{row.ratio:>9}  {'PASS' if row.ok else 'FAIL'}"
        )
        if row.note:
            print(f"   {'':<4}↳ {row.note}")


def print_summary(sections: list[Section]) -> None:
    """Print one row per class: its worst input against the budget and the benign twin."""
    print(f"\nSummary: the worst input of each class against {BUDGET_MS:g} ms (ms)")
    print(
        f"   {'class':<48}  {'worst input':<50}{'hostile':>10}{'benign':>10}"
        f"{'ratio':>9}  verdict"
    )
    for section in sections:
        # A class that fails shows the input that failed it.
        row = next((r for r in section.rows if not r.ok), section.worst)
        benign = "-" if row.benign is None else f"{row.benign:.2f}"
        verdict = "PASS" if section.ok else "FAIL"
        print(
            f"   {section.number + ' ' + section.title:<48.48}  {row.name:<50.50}"
            f"{row.hostile:>10.2f}{benign:>10}{row.ratio:>9}  {verdict}"
        )
    failed = [s.number for s in sections if not s.ok]
    print(
        f"{len(sections) - len(failed)} of {len(sections)} classes within "
        f"{BUDGET_MS:g} ms" + (f"; over it: {', '.join(failed)}" if failed else "")
    )


def clear_caches() -> None:
    """Empty the product's compile caches, so one class does not warm the next."""
    clear_compile_cache()
    safe_regex.check_untrusted.cache_clear()  # the checked (and compiled) patterns
    regex_chars.first_chars.cache_clear()
    json_schema._compile_schema.cache_clear()  # noqa: SLF001
    gc.collect()


async def idle_stall() -> float:
    """Return the ticker's worst lateness on an idle loop over 200 ms."""
    async with Ticker() as ticker:
        await asyncio.sleep(0.2)
    return ticker.worst


CLASSES: dict[str, Callable[..., Awaitable[list[Section]]]] = {
    "1": poisoned_json,
    "2": regexes,
    "3": catalogs,
    "4": schema_flood,
    "5": registry,
    "6": star_frames,
    "7": chat,
    "8": found,
    "9": fuzzed,
    "10": mcp_messages,
}


async def _main(args: argparse.Namespace) -> int:
    meter = Meter(args.rounds)
    chosen = args.classes.split(",") if args.classes else list(CLASSES)
    print(
        f"Hostile inputs against the event loop's budget of {BUDGET_MS:g} ms per input"
    )
    print(
        f"Python {platform.python_version()} on {platform.system()} "
        f"{platform.machine()}, {os.cpu_count()} CPUs, GIL switch interval "
        f"{sys.getswitchinterval() * 1000:g} ms, idle ticker lateness "
        f"{await idle_stall():.2f} ms; loop = median wall time of {args.rounds} "
        "rounds, stall = worst lateness of a 1 ms ticker"
    )
    sections: list[Section] = []
    started = time.perf_counter()
    for key in chosen:
        clear_caches()
        measure = CLASSES[key]
        new = await (
            measure(meter, args.flood_seconds) if key == "4" else measure(meter)
        )
        for section in new:
            print_section(section)
        sections += new
    print_summary(sections)
    print(f"({time.perf_counter() - started:.0f} s)")
    return 1 if args.check and not all(s.ok for s in sections) else 0


def main() -> None:
    """Measure and print; with ``--check`` exit 1 when a class misses the budget."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds per input")
    parser.add_argument(
        "--quick", action="store_true", help="one round per input, shorter floods"
    )
    parser.add_argument(
        "--flood-seconds", type=float, default=6.0, help="cap of each schema flood"
    )
    parser.add_argument("--classes", help="comma-separated class numbers (1-10)")
    parser.add_argument(
        "--check", action="store_true", help="exit 1 when a class misses the budget"
    )
    parser.add_argument(
        "--serve-llm",
        choices=(
            "hostile",
            "benign",
            "values",
            "values-benign",
            "stream",
            "stream-benign",
        ),
        help=argparse.SUPPRESS,
    )
    args = parser.parse_args()
    if args.serve_llm:
        asyncio.run(serve_llm(args.serve_llm))
        return
    if args.quick:
        args.rounds = 1
        args.flood_seconds = min(args.flood_seconds, 2.0)
    logging.disable(logging.CRITICAL)
    sys.exit(asyncio.run(_main(args)))


if __name__ == "__main__":
    main()
