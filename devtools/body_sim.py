"""A reference Soul terminal ("Body") that follows the Soul-Body protocol v2, §7.2.

It is an ordinary MQTT client (paho-mqtt 2.x) that:

1. connects with a will ``{prefix}/terminal/{id}/online`` = ``offline`` (QoS 1, retained);
2. on every (re)connect publishes ``online`` -> ``skills`` -> ``intent_catalog`` ->
   ``heartbeat``, then a heartbeat every ``--heartbeat`` seconds;
3. executes ``invoke/{requestId}`` once the arguments pass the skill's
   ``input_schema`` (``jsonschema``) and answers ``result/{requestId}``
   (``ok: false`` with the validation error otherwise);
4. executes ``intent_action`` (``intents[].normalized``) unless ``exec_mode`` is
   ``blocked`` (then it shows "暂缓执行" and runs nothing, §3.8), and shows
   ``status`` and ``emotion_update``.

Run it against a broker with ``python -m devtools.body_sim`` (or ``scripts/body-sim``),
or in-process from tests through :class:`BodySim`. Constructor options can break it
on purpose (report order, terminal id, results without ``error``, no re-announce) so
that conformance checks can be tested.

This module is the command line; the MQTT transport is :mod:`devtools.body_mqtt`
and the simulated body (skills, catalog, state, handlers) :mod:`devtools.body_device`.
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path
import signal
import threading
from typing import Any

from devtools.body_device import (
    BLOCKED,
    DEFERRED_NOTICE,
    FIRMWARE_VERSION,
    MANUFACTURER,
    MODEL,
    SIMULATED_FAILURE,
    BodySim,
    default_catalog,
    default_skills,
    skill_list,
    spec_skills,
    validate_arguments,
)
from devtools.body_mqtt import REPORTS, SUBSCRIPTIONS
from devtools.broker import add_broker_arguments

__all__ = [
    "BLOCKED",
    "DEFERRED_NOTICE",
    "FIRMWARE_VERSION",
    "MANUFACTURER",
    "MODEL",
    "REPORTS",
    "SIMULATED_FAILURE",
    "SUBSCRIPTIONS",
    "BodySim",
    "build_parser",
    "default_catalog",
    "default_skills",
    "main",
    "skill_list",
    "spec_skills",
    "validate_arguments",
]


def _load_json(path: str | None) -> Any:
    return None if path is None else json.loads(Path(path).read_text(encoding="utf-8"))


def build_parser() -> argparse.ArgumentParser:
    """Return the command-line parser."""
    parser = argparse.ArgumentParser(
        prog="body-sim",
        description="A reference Soul terminal (Soul-Body protocol v2) on an MQTT broker.",
    )
    add_broker_arguments(parser)
    parser.add_argument(
        "--latency", type=float, default=0.0, help="seconds before each result"
    )
    parser.add_argument(
        "--failure-rate",
        type=float,
        default=0.0,
        help="fraction (0..1) of invokes answered ok=false",
    )
    parser.add_argument("--no-answer", action="store_true", help="never answer invokes")
    parser.add_argument(
        "--heartbeat", type=float, default=10.0, help="heartbeat period in seconds"
    )
    parser.add_argument("--seed", type=int, help="random seed for --failure-rate")
    parser.add_argument("--skills-file", help="JSON file with the skills payload")
    parser.add_argument("--catalog-file", help="JSON file with the intent_catalog")
    return parser


def main(argv: list[str] | None = None) -> None:
    """Run a simulated terminal until interrupted."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    sim = BodySim(
        args.host,
        args.port,
        prefix=args.prefix,
        terminal_id=args.terminal_id,
        latency=args.latency,
        failure_rate=args.failure_rate,
        answer=not args.no_answer,
        heartbeat=args.heartbeat,
        seed=args.seed,
        skills=_load_json(args.skills_file),
        catalog=_load_json(args.catalog_file),
        username=args.username,
        password=args.password,
    )
    print(
        f"body-sim: {sim.base_topic} on {args.host}:{args.port} (Ctrl-C stops)",
        flush=True,
    )

    def interrupt(signum: int, frame: object) -> None:
        # Stop cleanly once; a second signal ends the process at once.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        raise KeyboardInterrupt

    # SIGINT too: a process started in the background may inherit it ignored.
    signal.signal(signal.SIGINT, interrupt)
    signal.signal(signal.SIGTERM, interrupt)
    try:
        sim.start(timeout=None)
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        sim.stop()


if __name__ == "__main__":
    main()
