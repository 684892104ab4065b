"""The Star Protocol's SimpleWorld demo: an environment and a scripted agent.

``SimpleWorld`` is the spec's example world (appendix C and D): a square of
``size`` × ``size`` with items on it. Agents act on it:

- ``move`` (``direction`` north|south|east|west, ``distance``) → ``new_position``;
- ``observe`` (``range``) → ``nearby_items``, ``nearby_agents``;
- ``pickup`` (``item_id``) → success when the item is within reach, else failure;
- ``ping`` → ``pong``.

It broadcasts the events ``agent_moved``, ``item_spawned``, ``item_picked_up``
and, every ``status_interval`` seconds, ``world_status`` to the environment's
agents. ``WorldHost`` connects a world to a hub as an environment; ``run_agent``
is the scripted agent (ping, observe, walk to the nearest item, pick it up) and
returns a summary; ``run_demo`` runs both against any hub URL::

    scripts/star-demo --token <long-lived access token>   # Home Assistant's hub
    scripts/star-demo --serve                              # its own devtools hub
"""

from __future__ import annotations

import argparse
import asyncio
from collections import Counter
from collections.abc import Callable
import contextlib
from dataclasses import dataclass, field
import logging
import math
import os
import random
import secrets
import sys
from typing import Any

from soul_star import (
    AgentClient,
    Envelope,
    EnvironmentClient,
    StarError,
    StarHubError,
    now_iso,
)

_LOGGER = logging.getLogger(__name__)

DEFAULT_URL = "ws://127.0.0.1:8123"
DEFAULT_ENV = "demo_world"
DEFAULT_AGENT = "agent_001"
DIRECTIONS = {"north": (0, 1), "south": (0, -1), "east": (1, 0), "west": (-1, 0)}
ITEM_NAMES = ("apple", "crystal", "key", "coin", "map", "lantern")

type Say = Callable[[str], object]
type Position = tuple[float, float]


def _point(position: Position) -> dict[str, float]:
    return {"x": position[0], "y": position[1]}


def _distance(a: Position, b: Position) -> float:
    return round(math.dist(a, b), 2)


def success(message: str, data: dict[str, Any]) -> dict[str, Any]:
    """Return a successful outcome in the spec's shape."""
    return {"status": "success", "message": message, "data": data}


def failure(message: str, data: dict[str, Any] | None = None, code: str = "ACTION_FAILED") -> dict[str, Any]:  # fmt: skip
    """Return a failed outcome in the spec's shape."""
    return {"status": "error", "message": message, "error_code": code, "data": data or {}}  # fmt: skip


@dataclass
class Item:
    """Something lying in the world."""

    id: str
    name: str
    position: Position

    def describe(self, origin: Position | None = None) -> dict[str, Any]:
        """Return the item as an observation sees it."""
        seen: dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "position": _point(self.position),
        }
        if origin is not None:
            seen["distance"] = _distance(origin, self.position)
        return seen


@dataclass
class SimpleWorld:
    """The world's state and rules; no I/O (``WorldHost`` connects it to a hub)."""

    size: float = 20.0
    max_step: float = 5.0
    reach: float = 1.0
    respawn: bool = True
    seed: int | None = None
    positions: dict[str, Position] = field(default_factory=dict)
    inventories: dict[str, list[str]] = field(default_factory=dict)
    items: dict[str, Item] = field(default_factory=dict)
    ticks: int = 0
    _counter: int = 0

    def __post_init__(self) -> None:
        """Seed the random generator."""
        self._random = random.Random(self.seed)  # noqa: S311 - a game, not crypto

    @property
    def start(self) -> Position:
        """Where a new agent appears: the middle of the world."""
        return (self.size / 2, self.size / 2)

    def spawn_item(
        self, name: str | None = None, position: Position | None = None
    ) -> Item:
        """Put a new item on the map (at random unless ``position`` is given)."""
        self._counter += 1
        name = name or self._random.choice(ITEM_NAMES)
        if position is None:
            position = (
                round(self._random.uniform(0, self.size), 1),
                round(self._random.uniform(0, self.size), 1),
            )
        item = Item(f"{name}_{self._counter}", name, position)
        self.items[item.id] = item
        return item

    def status(self) -> dict[str, Any]:
        """Return the ``world_info`` of a ``world_status`` event."""
        self.ticks += 1
        return {
            "world_info": {
                "tick": self.ticks,
                "size": self.size,
                "agents": {a: _point(p) for a, p in self.positions.items()},
                "items": len(self.items),
                "timestamp": now_iso(),
            }
        }

    def act(
        self, agent_id: str, action: str, parameters: dict[str, Any]
    ) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
        """Apply ``action`` for ``agent_id``; return its outcome and the events it caused."""
        self.positions.setdefault(agent_id, self.start)
        self.inventories.setdefault(agent_id, [])
        handler = {
            "move": self._move,
            "observe": self._observe,
            "pickup": self._pickup,
            "ping": self._ping,
        }.get(action)
        if handler is None:
            return failure(f"unknown action {action!r}", code="INVALID_ACTION"), []
        return handler(agent_id, parameters)

    def _move(self, agent_id: str, parameters: dict[str, Any]) -> Any:
        direction = parameters.get("direction")
        distance = parameters.get("distance", 1.0)
        if direction not in DIRECTIONS:
            return failure(f"direction must be one of {', '.join(DIRECTIONS)}"), []
        if (
            not isinstance(distance, int | float)
            or isinstance(distance, bool)
            or not 0 < distance < math.inf
        ):
            return failure("distance must be a positive number"), []
        distance = min(float(distance), self.max_step)
        dx, dy = DIRECTIONS[direction]
        x, y = self.positions[agent_id]
        new = (
            round(min(self.size, max(0.0, x + dx * distance)), 2),
            round(min(self.size, max(0.0, y + dy * distance)), 2),
        )
        self.positions[agent_id] = new
        moved = {"agent_id": agent_id, "new_position": _point(new)}
        data = {"new_position": _point(new), "energy_cost": round(distance, 2)}
        return success(f"moved {direction}", data), [("agent_moved", moved)]

    def _observe(self, agent_id: str, parameters: dict[str, Any]) -> Any:
        reach = parameters.get("range", 5.0)
        if not isinstance(reach, int | float) or isinstance(reach, bool) or reach < 0:
            return failure("range must be a non-negative number"), []
        here = self.positions[agent_id]
        items = sorted(
            (i.describe(here) for i in self.items.values()),
            key=lambda seen: seen["distance"],
        )
        agents = [
            {"id": other, "position": _point(p), "distance": _distance(here, p)}
            for other, p in self.positions.items()
            if other != agent_id
        ]
        data = {
            "position": _point(here),
            "nearby_items": [i for i in items if i["distance"] <= reach],
            "nearby_agents": [a for a in agents if a["distance"] <= reach],
        }
        return success(f"{len(data['nearby_items'])} items in range", data), []

    def _pickup(self, agent_id: str, parameters: dict[str, Any]) -> Any:
        item = self.items.get(parameters.get("item_id"))  # type: ignore[arg-type]
        if item is None:
            return failure("no such item", {"success": False}), []
        distance = _distance(self.positions[agent_id], item.position)
        if distance > self.reach:
            return failure(
                f"{item.id} is {distance} away; reach is {self.reach}",
                {"success": False, "item_id": item.id, "distance": distance},
            ), []
        del self.items[item.id]
        self.inventories[agent_id].append(item.id)
        events = [("item_picked_up", {"agent_id": agent_id, "item_id": item.id})]
        if self.respawn:
            new = self.spawn_item()
            events.append(
                ("item_spawned", {"item_id": new.id, "position": _point(new.position)})
            )
        data = {
            "success": True,
            "item_id": item.id,
            "inventory": list(self.inventories[agent_id]),
        }
        return success(f"picked up {item.name}", data), events

    def _ping(self, _agent_id: str, _parameters: dict[str, Any]) -> Any:
        return success("pong", {"pong": True, "timestamp": now_iso()}), []


class WorldHost:
    """A ``SimpleWorld`` connected to a hub as environment ``env_id``."""

    def __init__(
        self,
        url: str,
        env_id: str = DEFAULT_ENV,
        *,
        token: str | None = None,
        world: SimpleWorld | None = None,
        items: int = 3,
        status_interval: float | None = 5.0,
        say: Say = print,
    ) -> None:
        """Describe the host; ``start()`` connects it."""
        self.world = world or SimpleWorld()
        if world is None:
            for _ in range(items):
                self.world.spawn_item()
        self.client = EnvironmentClient(url, env_id, token=token)
        self.status_interval = status_interval
        self.say = say
        self.actions: Counter[str] = Counter()
        self._status: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Connect and start the periodic ``world_status`` broadcast."""
        self.client.on_action(self._handle)
        self.client.on_error(self._error)
        await self.client.connect()
        self.say(
            f"[{self.client.client_id}] world {self.world.size:g}×{self.world.size:g}"
            f" with {len(self.world.items)} items: {', '.join(self.world.items)}"
        )
        if self.status_interval:
            self._status = asyncio.get_running_loop().create_task(self._broadcast())

    async def close(self) -> None:
        """Stop broadcasting and disconnect."""
        if self._status is not None:
            self._status.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._status
        await self.client.close()

    async def _handle(
        self, action: str, parameters: dict[str, Any], envelope: Envelope
    ) -> dict[str, Any]:
        self.actions[action] += 1
        outcome, events = self.world.act(envelope.sender.id, action, parameters)
        shown = f"{action} {parameters}" if parameters else action
        self.say(
            f"[{self.client.client_id}] {envelope.sender.id} {shown}"
            f" → {outcome['status']}: {outcome['message']}"
        )
        # Events go out before the outcome, so the actor sees them first.
        for name, data in events:
            await self.client.broadcast_event(name, data)
        return outcome

    async def _broadcast(self) -> None:
        assert self.status_interval
        while True:
            await asyncio.sleep(self.status_interval)
            if self.world.positions and self.client.connected:
                with contextlib.suppress(StarError):
                    await self.client.broadcast_event(
                        "world_status", self.world.status()
                    )

    def _error(self, error: StarHubError) -> None:
        # Broadcasts to agents that have left are expected; the rest is news.
        level = (
            logging.DEBUG if error.code == "RECIPIENT_NOT_FOUND" else logging.WARNING
        )
        _LOGGER.log(level, "World %s: hub error %s", self.client.client_id, error)


def _step_towards(
    here: Position, target: Position, max_step: float
) -> tuple[str, float]:
    """Return the direction and distance of the next move along the longer axis."""
    dx, dy = target[0] - here[0], target[1] - here[1]
    if abs(dx) >= abs(dy):
        return ("east" if dx > 0 else "west"), round(min(abs(dx), max_step), 2)
    return ("north" if dy > 0 else "south"), round(min(abs(dy), max_step), 2)


async def run_agent(
    url: str,
    env_id: str = DEFAULT_ENV,
    agent_id: str = DEFAULT_AGENT,
    *,
    token: str | None = None,
    say: Say = print,
    max_step: float = 5.0,
    reach: float = 1.0,
    max_moves: int = 40,
    timeout: float = 10.0,
) -> dict[str, Any]:
    """Ping, observe, walk to the nearest item and pick it up; return a summary."""
    agent = AgentClient(url, agent_id, env_id, token=token, action_timeout=timeout)
    events: Counter[str] = Counter()
    tag = f"[{agent_id}]"

    def on_event(envelope: Envelope) -> None:
        name = envelope.payload.get("event")
        events[str(name)] += 1
        say(f"{tag} event {name}: {envelope.payload.get('data')}")

    agent.on_event(on_event)
    summary: dict[str, Any] = {"agent_id": agent_id, "env_id": env_id, "moves": 0}
    await agent.connect()
    try:
        pong = await agent.action(env_id, "ping")
        summary["pong"] = pong.get("message") == "pong"
        say(f"{tag} ping → {pong.get('message')}")

        seen = await agent.action(env_id, "observe", {"range": 1000})
        here = _xy(seen["data"]["position"])
        items = seen["data"]["nearby_items"]
        summary["start"] = _point(here)
        say(f"{tag} at {here}; items: " + ", ".join(f"{i['id']} at {_xy(i['position'])} ({i['distance']})" for i in items))  # fmt: skip
        if not items:
            summary["picked_up"] = False
            return summary
        target = items[0]
        summary["item"] = target["id"]
        goal = _xy(target["position"])
        while math.dist(here, goal) > reach and summary["moves"] < max_moves:
            direction, distance = _step_towards(here, goal, max_step)
            moved = await agent.action(
                env_id, "move", {"direction": direction, "distance": distance}
            )
            if moved.get("status") != "success":
                say(f"{tag} move failed: {moved.get('message')}")
                break
            here = _xy(moved["data"]["new_position"])
            summary["moves"] += 1
            say(f"{tag} move {direction} {distance} → {here}")
        summary["position"] = _point(here)

        picked = await agent.action(env_id, "pickup", {"item_id": target["id"]})
        summary["picked_up"] = bool(picked.get("data", {}).get("success"))
        summary["inventory"] = picked.get("data", {}).get("inventory", [])
        say(f"{tag} pickup {target['id']} → {picked.get('status')}: {picked.get('message')}")  # fmt: skip
    finally:
        summary["events"] = dict(events)
        await agent.close()
    return summary


def _xy(point: dict[str, Any]) -> Position:
    return (float(point["x"]), float(point["y"]))


async def run_demo(
    url: str,
    *,
    token: str | None = None,
    env_id: str = DEFAULT_ENV,
    agent_id: str = DEFAULT_AGENT,
    seed: int | None = None,
    world: SimpleWorld | None = None,
    status_interval: float | None = 5.0,
    say: Say = print,
) -> dict[str, Any]:
    """Run a world and the scripted agent against the hub at ``url``; return the agent's summary.

    Without ``world`` a fresh one with three random items (``seed``) is used.
    """
    if world is None:
        world = SimpleWorld(seed=seed)
        for _ in range(3):
            world.spawn_item()
    host = WorldHost(
        url,
        env_id,
        token=token,
        world=world,
        status_interval=status_interval,
        say=say,
    )
    await host.start()
    try:
        summary = await run_agent(
            url,
            env_id,
            agent_id,
            token=token,
            say=say,
            max_step=world.max_step,
            reach=world.reach,
        )
    finally:
        await host.close()
    summary["world_actions"] = dict(host.actions)
    return summary


async def _main(args: argparse.Namespace) -> int:
    url, token, server = args.url, args.token, None
    if args.serve:
        from devtools.star_server import StarServer  # noqa: PLC0415

        token = token or secrets.token_urlsafe(16)
        server = StarServer(tokens={token})
        url = await server.start(port=args.port)
        print(f"Serving a Star hub at {url} (token {token})")
    try:
        if args.role == "world":
            host = WorldHost(
                url, args.env, token=token, status_interval=args.status_interval
            )
            await host.start()
            try:
                await asyncio.Event().wait()
            finally:
                await host.close()
        elif args.role == "agent":
            summary = await run_agent(url, args.env, args.agent, token=token)
        else:
            summary = await run_demo(
                url,
                token=token,
                env_id=args.env,
                agent_id=args.agent,
                seed=args.seed,
                status_interval=args.status_interval,
            )
    except StarError as err:
        print(f"Star demo failed: {err}", file=sys.stderr)
        return 1
    finally:
        if server is not None:
            await server.close()
    print("Summary:", summary)
    return 0 if summary.get("picked_up") else 1


def main() -> None:
    """Parse the command line and run the demo."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--url", default=DEFAULT_URL, help=f"the hub's base URL (default {DEFAULT_URL})"
    )
    parser.add_argument(
        "--token",
        default=os.environ.get("SOUL_STAR_TOKEN"),
        help="a Home Assistant long-lived access token (default $SOUL_STAR_TOKEN)",
    )
    parser.add_argument("--env", default=DEFAULT_ENV, help="the environment id")
    parser.add_argument("--agent", default=DEFAULT_AGENT, help="the agent id")
    parser.add_argument(
        "--serve",
        action="store_true",
        help="start a devtools.star_server hub instead of using --url",
    )
    parser.add_argument("--port", type=int, default=0, help="the port for --serve")
    parser.add_argument(
        "--role",
        choices=("both", "world", "agent"),
        default="both",
        help="run the world, the agent, or both (default)",
    )
    parser.add_argument("--status-interval", type=float, default=5.0)
    parser.add_argument("--seed", type=int)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(asyncio.run(_main(args)))


if __name__ == "__main__":
    main()
