"""Embedded mem0 add and search latency with 1,000 memories, against a linear scan.

An ``EmbeddedMem0`` (real mem0, local Qdrant on disk in a temporary directory)
stores ``--memories`` generated sentences for one user with ``infer=False`` (no
LLM), each ``add`` timed on its own; then ``--repeats`` rounds of searches
(``limit=5``) over it are timed one by one. Embeddings come from
``devtools.fake_llm.embed`` in process (hashed words, ``--dims`` wide), so the
figures are mem0's and Qdrant's own cost, not a model's.

The baseline, in the same run, on the same vectors and through the same
executor hop: embed the query, then a linear cosine scan in numpy over a matrix
of every stored vector (after a user filter), top 5 by ``argpartition``. For
adds the baseline embeds and appends to a list. The ratios say what mem0 and
Qdrant cost over the simplest store that answers the same question.

The goal is a search p99 under 50 ms at 1,000 memories; ``--check`` makes
missing it exit 1. Run with ``scripts/bench`` or
``.venv/bin/python -m benchmarks.memory``; it says so and exits when mem0ai is
not installed.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable
import gc
import itertools
import logging
import random
import sys
import tempfile
import time
from typing import Any

import numpy as np

from benchmarks.timing import percentiles
from custom_components.soul.core.memory.mem0_embedded import (
    EmbeddedMem0,
    EmbeddedMem0Config,
    mem0_available,
)
from devtools.fake_llm import embed

USER = "alice"
SUBJECTS = ("User", "The user", "Alice", "Her brother", "Her cat", "The neighbour")
VERBS = ("likes", "dislikes", "bought", "talked about", "asked about", "dreamed of")
OBJECTS = (
    "green tea", "black coffee", "the cello", "jazz records", "rainy mornings",
    "Paris", "Shanghai", "spicy noodles", "chess", "the desk lamp", "sunflowers",
    "old films", "running", "the piano", "mountain trails", "board games",
    "a red bicycle", "dumplings", "the ocean", "night markets",
)  # fmt: skip
WHEN = ("on Monday", "last week", "in spring", "at night", "every day", "in 2024")


def sentences(count: int) -> list[str]:
    """Return ``count`` distinct, deterministic memory texts."""
    combos = itertools.product(SUBJECTS, VERBS, OBJECTS, WHEN)
    texts = [f"{s} {v} {o} {w}" for s, v, o, w in combos]
    random.Random(7).shuffle(texts)  # noqa: S311 - fixed test data, not secrets
    if count > len(texts):
        raise SystemExit(f"at most {len(texts)} memories")
    return texts[:count]


def queries(count: int) -> list[str]:
    """Return ``count`` deterministic search queries (two to three words)."""
    rng = random.Random(11)  # noqa: S311 - fixed test data, not secrets
    return [
        " ".join(rng.sample([*OBJECTS, *VERBS], rng.choice((2, 3))))
        for _ in range(count)
    ]


async def time_async(calls: list[Callable[[], Awaitable[object]]]) -> list[int]:
    """Await every call once; return each call's duration in ns."""
    clock = time.perf_counter_ns
    samples = []
    gc.collect()
    for call in calls:
        start = clock()
        await call()
        samples.append(clock() - start)
    return samples


class LinearScan:
    """The baseline: vectors in a numpy matrix, cosine by a dot product."""

    def __init__(self, dims: int) -> None:
        """Start empty."""
        self.dims = dims
        self.texts: list[str] = []
        self.users: list[str] = []
        self.rows: list[list[float]] = []
        self.matrix = np.zeros((0, dims), dtype=np.float32)

    def add(self, text: str, user_id: str) -> None:
        """Embed and append (the matrix is rebuilt by ``freeze``)."""
        self.rows.append(embed(text, self.dims))
        self.texts.append(text)
        self.users.append(user_id)

    def freeze(self) -> None:
        """Stack the rows into the search matrix."""
        self.matrix = np.asarray(self.rows, dtype=np.float32)

    def search(
        self, query: str, user_id: str, limit: int = 5
    ) -> list[tuple[str, float]]:
        """Return text and score of the ``limit`` closest vectors of ``user_id``."""
        vector = np.asarray(embed(query, self.dims), dtype=np.float32)
        mask = np.fromiter((u == user_id for u in self.users), bool, len(self.users))
        scores = np.where(mask, self.matrix @ vector, -np.inf)
        top = np.argpartition(-scores, min(limit, len(scores) - 1))[:limit]
        return [
            (self.texts[i], float(scores[i])) for i in top[np.argsort(-scores[top])]
        ]


async def run(args: argparse.Namespace) -> tuple[dict[str, Any], bool]:
    """Load, measure and return the figures and whether the top hits agree."""
    texts = sentences(args.memories)
    asked = queries(args.repeats)
    with tempfile.TemporaryDirectory() as data_dir:
        config = EmbeddedMem0Config(
            data_dir=data_dir,
            # Never contacted: embeddings are local and infer=False needs no LLM.
            llm_base_url="http://127.0.0.1:9/v1",
            llm_model="none",
            llm_api_key="",
            embedding_model="fake_llm.embed",
            embedding_dims=args.dims,
        )
        memory = EmbeddedMem0(config, asyncio.to_thread)

        def local_embedder(m: Any) -> None:
            model = m.embedding_model
            model.embed = lambda text, action=None: embed(text, args.dims)
            model.embed_batch = lambda batch, action=None: [
                embed(t, args.dims) for t in batch
            ]

        try:
            await memory.run("benchmark setup", local_embedder)
            await memory.health()
            scan = LinearScan(args.dims)
            chats = [[{"role": "user", "content": t}] for t in texts]
            adds = await time_async(
                [
                    lambda c=c, i=i: memory.add(
                        c,
                        user_id=USER,
                        agent_id=f"soul-{i % 2}",
                        metadata={"type": "fact", "soul_id": f"soul-{i % 2}"},
                        infer=False,
                    )
                    for i, c in enumerate(chats)
                ]
            )
            base_adds = await time_async(
                [lambda t=t: asyncio.to_thread(scan.add, t, USER) for t in texts]
            )
            scan.freeze()

            def mem0_search(q: str) -> Awaitable[object]:
                return memory.search(q, user_id=USER, agent_id=None, limit=5)

            def scan_search(q: str) -> Awaitable[object]:
                return asyncio.to_thread(scan.search, q, USER, 5)

            warm = asked[: args.warmup]
            await time_async([lambda q=q: mem0_search(q) for q in warm])
            await time_async([lambda q=q: scan_search(q) for q in warm])
            searches = await time_async([lambda q=q: mem0_search(q) for q in asked])
            base_searches = await time_async(
                [lambda q=q: scan_search(q) for q in asked]
            )
            # Both found an equally close first hit (texts may differ on ties).
            agree = 0
            for q in asked[:50]:
                hits = await memory.search(q, user_id=USER, agent_id=None, limit=1)
                best = scan.search(q, USER, 1)[0][1]
                agree += bool(hits) and abs((hits[0].score or 0) - best) < 1e-3
        finally:
            await memory.close()
    figures = {
        "add": percentiles(adds),
        "add baseline": percentiles(base_adds),
        "search": percentiles(searches),
        "search baseline": percentiles(base_searches),
        "agree": agree,
    }
    return figures, agree == 50


def main() -> None:
    """Measure and print p50/p99 of add and search, the baseline and the ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=300, help="timed searches")
    parser.add_argument("--warmup", type=int, default=20, help="untimed searches")
    parser.add_argument("--dims", type=int, default=1536, help="embedding width")
    parser.add_argument("--budget-us", type=float, default=50_000.0)
    parser.add_argument(
        "--check", action="store_true", help="exit 1 when the search p99 misses it"
    )
    args = parser.parse_args()
    if not mem0_available():
        print("memory: mem0ai is not installed; nothing to measure")
        return
    logging.disable(logging.WARNING)
    figures, agreed = asyncio.run(run(args))

    def row(label: str, p: tuple[float, float], calls: int) -> str:
        return (
            f"  {label:<34}: p50 {p[0] / 1000:8.2f} ms   p99 {p[1] / 1000:8.2f} ms"
            f"   ({calls} calls)"
        )

    def ratio(label: str, a: tuple[float, float], b: tuple[float, float]) -> str:
        return f"  {label:<34}: p50 {a[0] / b[0]:7.1f}x   p99 {a[1] / b[1]:7.1f}x"

    n, r = args.memories, args.repeats
    print(f"memory: embedded mem0, local Qdrant, {n} memories, {args.dims} dims")
    print(row("add (infer=False)", figures["add"], n))
    print(row("baseline add: embed + append", figures["add baseline"], n))
    print(row(f"search, limit 5, over {n}", figures["search"], r))
    print(row("baseline search: numpy linear scan", figures["search baseline"], r))
    print(ratio("ratio add mem0/baseline", figures["add"], figures["add baseline"]))
    print(
        ratio(
            "ratio search mem0/baseline",
            figures["search"],
            figures["search baseline"],
        )
    )
    print(f"  first hit as close as the scan's: {figures['agree']}/50 queries")
    p99 = figures["search"][1]
    ok = p99 < args.budget_us and agreed
    verdict = "under" if p99 < args.budget_us else "NOT under"
    print(f"  search p99 {p99 / 1000:.2f} ms is {verdict} {args.budget_us / 1000:g} ms")
    if args.check and not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
