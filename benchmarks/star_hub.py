"""Star hub throughput and latency: 50 agents and one environment over real WebSockets.

Each agent keeps ``--window`` actions in flight to the environment, which
answers every one with an outcome; both legs are routed by the server, so a
round trip is two routed messages. The server runs in its own process on
127.0.0.1 and is, in turn:

- ``devtools.star_server`` — the ``StarHub`` with envelope validation, the
  sender check, per-client rate limit, bounded send queues and a writer task;
  the frames it routes to one client in one turn of the event loop go out in
  one write (``transport._Outbox``);
- a bare aiohttp WebSocket relay, as the baseline of the same run: it reads
  ``recipient`` with ``json.loads`` and writes the frame to that socket with
  aiohttp's ``send_str`` (one write a frame), with no validation, no rate
  limit and no queue. ``--baseline coalescing`` swaps in a relay that also
  writes the frames a loop turn routes to one client at once, as the hub
  does: not the goals' baseline, but it shows what validation, admission
  and routing cost over the same writing.

Figures: routed messages per second, p50/p99 of the round-trip latency, and
the server's CPU time per routed message (from ``/proc``; it does not depend
on whether the clients or the server are the bottleneck). The goals: the hub
keeps at least 80 % of the relay's throughput, and its p99 round trip is at
most 1.5 times the relay's; ``--check`` exits 1 when one is missed (or the
hub answered errors). The hub's per-client rate limit (200 msg/s by default, which
would throttle one environment answering 50 busy agents) is raised for the run.
Run with ``scripts/bench`` or ``.venv/bin/python -m benchmarks.star_hub``.
"""

from __future__ import annotations

import argparse
import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
import json
import os
from pathlib import Path
import statistics
import sys
import time
from typing import Any

import aiohttp
from aiohttp import WSMsgType, web

TOKEN = "bench-token"  # noqa: S105 - a throwaway token for a local server
ROOT = Path(__file__).resolve().parent.parent
ENV_ID = "bench_env"
PREFIX = "/api/soul/star"
GOAL = 0.80  # hub / relay throughput, at least
P99_GOAL = 1.5  # hub / relay p99 round-trip latency, at most
_SENDER_AT = len('{"type": "message", "sender": {"id": "')


# -- servers (run in a child process) ------------------------------------------------


async def _serve_hub() -> int:
    from custom_components.soul.core.star.hub import StarHub  # noqa: PLC0415
    from devtools.star_server import StarServer  # noqa: PLC0415

    server = StarServer(tokens={TOKEN}, hub=StarHub(rate=1e9, burst=10**9))
    await server.start()
    return server.port


async def _serve_relay(*, coalesce: bool = False) -> int:
    """Serve the baseline: route by ``recipient`` and write; nothing else.

    ``coalesce``: write the frames bound for one client in a loop turn with
    one ``transport.write``, as the hub does (``--baseline coalescing``).
    """
    peers: dict[tuple[str, str, str], web.WebSocketResponse] = {}
    sockets: dict[web.WebSocketResponse, asyncio.Transport] = {}
    kept: dict[asyncio.Transport, list[bytes]] = {}
    loop = asyncio.get_running_loop()

    def flush() -> None:
        for transport, frames in kept.items():
            transport.write(b"".join(frames))
        kept.clear()

    async def relay_coalescing(ws: web.WebSocketResponse, env_id: str) -> None:
        async for message in ws:
            if message.type is WSMsgType.TEXT:
                recipient = json.loads(message.data)["recipient"]
                target = peers.get((env_id, recipient["type"], recipient["id"]))
                if target is None:
                    continue
                data = message.data.encode()
                if len(data) >= 65536:
                    await target.send_str(message.data)
                    continue
                header = (
                    bytes((0x81, len(data)))
                    if len(data) < 126
                    else bytes((0x81, 126)) + len(data).to_bytes(2, "big")
                )
                if not kept:
                    loop.call_soon(flush)
                kept.setdefault(sockets[target], []).append(header + data)

    async def handle(request: web.Request) -> web.WebSocketResponse:
        env_id = request.match_info["env_id"]
        agent_id = request.match_info.get("agent_id")
        key = (
            (env_id, "agent", agent_id) if agent_id else (env_id, "environment", env_id)
        )
        ws = web.WebSocketResponse(max_msg_size=2 * 1024 * 1024)
        await ws.prepare(request)
        peers[key] = ws
        assert request.transport is not None
        sockets[ws] = request.transport
        try:
            if coalesce:
                await relay_coalescing(ws, env_id)
            else:  # the baseline the goals are set against
                async for message in ws:
                    if message.type is WSMsgType.TEXT:
                        recipient = json.loads(message.data)["recipient"]
                        target = peers.get((env_id, recipient["type"], recipient["id"]))
                        if target is not None:
                            await target.send_str(message.data)
        finally:
            if peers.get(key) is ws:
                del peers[key]
            sockets.pop(ws, None)
        return ws

    app = web.Application()
    app.router.add_get(f"{PREFIX}/env/{{env_id}}", handle)
    app.router.add_get(f"{PREFIX}/env/{{env_id}}/agent/{{agent_id}}", handle)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return site._server.sockets[0].getsockname()[1]  # noqa: SLF001


async def _serve(kind: str) -> None:
    port = await (
        _serve_hub() if kind == "hub" else _serve_relay(coalesce=kind == "coalescing")
    )
    print(port, flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


# -- load (in this process) ---------------------------------------------------------


def _cpu_seconds(pid: int) -> float | None:
    """Return the user + system CPU time of process ``pid`` (Linux), else None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Result:
    """One run's figures."""

    name: str
    seconds: float
    round_trips: int
    latencies: list[float] = field(default_factory=list)
    server_cpu: float | None = None
    client_cpu: float = 0.0
    errors: int = 0

    @property
    def routed_per_second(self) -> float:
        """Messages routed per second (an action and an outcome per round trip)."""
        return 2 * self.round_trips / self.seconds

    def percentile(self, q: int) -> float:
        """Return the q-th percentile of the round-trip latency in ms."""
        cuts = statistics.quantiles(self.latencies, n=100, method="inclusive")
        return cuts[q - 1] * 1000

    @property
    def cpu_us_per_message(self) -> float | None:
        """The server's CPU time per routed message, in µs."""
        if self.server_cpu is None or not self.round_trips:
            return None
        return self.server_cpu / (2 * self.round_trips) * 1e6


def _action(agent_id: str) -> str:
    return json.dumps(
        {
            "type": "message",
            "sender": {"id": agent_id, "type": "agent"},
            "recipient": {"id": ENV_ID, "type": "environment"},
            "payload": {
                "type": "action",
                "action": "move",
                "id": "action_0001",
                "parameters": {"direction": "north", "distance": 2.5},
            },
            "timestamp": "2025-08-19T10:30:00Z",
            "message_id": "msg_0001",
        }
    )


def _outcome(agent_id: str) -> str:
    return json.dumps(
        {
            "type": "message",
            "sender": {"id": ENV_ID, "type": "environment"},
            "recipient": {"id": agent_id, "type": "agent"},
            "payload": {
                "type": "outcome",
                "id": "action_0001",
                "outcome": {
                    "status": "success",
                    "message": "moved north",
                    "data": {"new_position": {"x": 5, "y": 10}, "energy_cost": 2},
                },
                "outcome_type": "dict",
            },
            "timestamp": "2025-08-19T10:30:00Z",
            "message_id": "msg_0002",
        }
    )


async def run_load(
    name: str,
    base_url: str,
    *,
    agents: int,
    window: int,
    warmup: float,
    duration: float,
    server_pid: int | None = None,
) -> Result:
    """Drive one server: ``agents`` agents with ``window`` actions in flight each."""
    ids = [f"bench_agent_{n:03d}" for n in range(agents)]
    replies = {agent_id: _outcome(agent_id) for agent_id in ids}
    width = len(ids[0])
    headers = {"Authorization": f"Bearer {TOKEN}"}
    result = Result(name, duration, 0)
    measuring = False
    stopping = False

    def is_control(text: str) -> bool:
        """Heartbeats and errors are not outcomes."""
        if text.startswith('{"type": "heartbeat"'):
            return True
        if text.startswith('{"type": "error"'):
            result.errors += 1
            return True
        return False

    async def environment(ws: aiohttp.ClientWebSocketResponse) -> None:
        async for message in ws:
            text = message.data
            if message.type is not WSMsgType.TEXT or is_control(text):
                continue
            await ws.send_str(replies[text[_SENDER_AT : _SENDER_AT + width]])

    async def agent(ws: aiohttp.ClientWebSocketResponse, agent_id: str) -> None:
        nonlocal measuring
        action = _action(agent_id)
        clock = time.perf_counter
        sent: deque[float] = deque()
        for _ in range(window):
            sent.append(clock())
            await ws.send_str(action)
        async for message in ws:
            if message.type is not WSMsgType.TEXT or is_control(message.data):
                continue
            now = clock()
            started = sent.popleft()
            if measuring:
                result.round_trips += 1
                result.latencies.append(now - started)
            if stopping:
                if not sent:
                    return
                continue
            sent.append(now)
            await ws.send_str(action)

    async with aiohttp.ClientSession() as session:
        env_ws = await session.ws_connect(
            f"{base_url}{PREFIX}/env/{ENV_ID}", headers=headers
        )
        await asyncio.sleep(0.1)  # registered before the first action arrives
        agent_sockets = [
            await session.ws_connect(
                f"{base_url}{PREFIX}/env/{ENV_ID}/agent/{agent_id}", headers=headers
            )
            for agent_id in ids
        ]
        env_task = asyncio.create_task(environment(env_ws))
        tasks = [
            asyncio.create_task(agent(ws, agent_id))
            for ws, agent_id in zip(agent_sockets, ids, strict=True)
        ]
        await asyncio.sleep(warmup)
        cpu_before = _cpu_seconds(server_pid) if server_pid else None
        client_before = time.process_time()
        started = time.perf_counter()
        measuring = True
        await asyncio.sleep(duration)
        measuring = False
        result.seconds = time.perf_counter() - started
        result.client_cpu = (time.process_time() - client_before) / result.seconds
        cpu_after = _cpu_seconds(server_pid) if server_pid else None
        if cpu_before is not None and cpu_after is not None:
            result.server_cpu = cpu_after - cpu_before
        stopping = True
        done, _ = await asyncio.wait(tasks, timeout=5)
        for task in tasks:
            task.cancel()
        env_task.cancel()
        await asyncio.gather(*tasks, env_task, return_exceptions=True)
        for ws in (*agent_sockets, env_ws):
            await ws.close()
        if len(done) < len(tasks):
            result.errors += len(tasks) - len(done)
    return result


async def measure(kind: str, **load: Any) -> Result:
    """Start a ``kind`` server (hub, relay, coalescing) in a child process; load it."""
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "benchmarks.star_hub",
        "--serve",
        kind,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        cwd=ROOT,
    )
    try:
        assert child.stdout is not None
        port = int(await asyncio.wait_for(child.stdout.readline(), 30))
        name = {
            "hub": "star_server (hub)",
            "relay": "bare relay",
            "coalescing": "coalescing relay",
        }[kind]
        return await run_load(
            name, f"ws://127.0.0.1:{port}", server_pid=child.pid, **load
        )
    finally:
        assert child.stdin is not None
        child.stdin.close()
        try:
            await asyncio.wait_for(child.wait(), 5)
        except TimeoutError:
            child.kill()
            await child.wait()


def _best(results: list[Result]) -> Result:
    return max(results, key=lambda r: r.routed_per_second)


def _row(label: str, cells: list[str]) -> str:
    return f"{label:<20}" + "".join(f"{c:>16}" for c in cells)


def report(
    relay: Result, hub: Result, fmt: Callable[[float | None], str]
) -> tuple[float, float]:
    """Print the table; return the ratios hub / relay of throughput and p99."""
    print(_row("", ["msgs/s", "p50 ms", "p99 ms", "srv CPU µs/msg", "client CPU"]))
    for result in (relay, hub):
        print(
            _row(
                result.name,
                [
                    f"{result.routed_per_second:,.0f}",
                    f"{result.percentile(50):.2f}",
                    f"{result.percentile(99):.2f}",
                    fmt(result.cpu_us_per_message),
                    f"{result.client_cpu:.0%}",
                ],
            )
        )
    ratio = hub.routed_per_second / relay.routed_per_second
    cpu_ratio = (
        hub.cpu_us_per_message / relay.cpu_us_per_message
        if hub.cpu_us_per_message and relay.cpu_us_per_message
        else None
    )
    print(
        _row(
            "hub / relay",
            [
                f"{ratio:.2f}",
                f"{hub.percentile(50) / relay.percentile(50):.2f}",
                f"{hub.percentile(99) / relay.percentile(99):.2f}",
                fmt(cpu_ratio) if cpu_ratio is None else f"{cpu_ratio:.2f}",
                "",
            ],
        )
    )
    for result in (relay, hub):
        if result.client_cpu >= 0.9:
            print(
                f"{result.name}: the load generator was the bottleneck (client CPU"
                f" {result.client_cpu:.0%}); server CPU per message is the fairer figure"
            )
    if relay.errors or hub.errors:
        print(f"errors: relay {relay.errors}, hub {hub.errors}")
    return ratio, hub.percentile(99) / relay.percentile(99)


async def _main(args: argparse.Namespace) -> int:
    load = {
        "agents": args.agents,
        "window": args.window,
        "warmup": args.warmup,
        "duration": args.duration,
    }
    relays, hubs = [], []
    for _ in range(args.repeats):  # interleaved, so drift hits both alike
        relays.append(await measure(args.baseline, **load))
        hubs.append(await measure("hub", **load))
    relay, hub = _best(relays), _best(hubs)
    print(
        f"Star hub: {args.agents} agents + 1 environment on 127.0.0.1,"
        f" {args.window} actions in flight per agent, best of {args.repeats}"
        f" × {args.duration:g} s (server in a child process)"
    )
    if hasattr(os, "getloadavg"):  # others' load moves the figures: say how much
        print(
            "load average (1, 5, 15 min): {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
        )
    ratio, p99_ratio = report(relay, hub, lambda v: "n/a" if v is None else f"{v:.1f}")
    throughput_ok = ratio >= GOAL and not hub.errors
    p99_ok = p99_ratio <= P99_GOAL
    print(
        f"The hub keeps {ratio:.0%} of the bare relay's throughput"
        f" (goal ≥ {GOAL:.0%}): {'PASS' if throughput_ok else 'FAIL'}"
    )
    print(
        f"The hub's p99 round trip is {p99_ratio:.2f}x the relay's"
        f" (goal ≤ {P99_GOAL:g}x): {'PASS' if p99_ok else 'FAIL'}"
    )
    return 0 if (throughput_ok and p99_ok) or not args.check else 1


def main() -> None:
    """Measure and print; with ``--check`` exit 1 when the goal is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=50)
    parser.add_argument(
        "--window", type=int, default=4, help="actions in flight per agent"
    )
    parser.add_argument("--warmup", type=float, default=0.5)
    parser.add_argument("--duration", type=float, default=3.0)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument(
        "--check", action="store_true", help="exit 1 when the goal is missed"
    )
    parser.add_argument(
        "--baseline",
        choices=("relay", "coalescing"),
        default="relay",
        help="the baseline (the goals are set against the default, relay); "
        "coalescing: a relay that also writes a turn's frames to a client at once",
    )
    parser.add_argument(
        "--serve", choices=("hub", "relay", "coalescing"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.serve:
        asyncio.run(_serve(args.serve))
        return
    sys.exit(asyncio.run(_main(args)))


if __name__ == "__main__":
    main()
