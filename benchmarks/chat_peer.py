"""The devices of ``benchmarks.chat_path``, in a process of their own.

A body is a device of its own, not a thread of Home Assistant's process: run
in Home Assistant's process, its paho thread (and the baseline's clients)
waited for Home Assistant's GIL, so a turn's sample counted how long Home
Assistant's loop stayed busy after the message had left. Here the reference
body (``BodySim``), the baseline's two paho clients and the quiet bodies of
the 100-body phase run in this child process; every arrival is stamped with
``time.monotonic()`` (CLOCK_MONOTONIC: the same clock in both processes).

The chat requests of the HTTP samples leave from here too (``Poster``), as
from a phone or a body: a client on Home Assistant's own loop would spend the
loop's time building and sending its request before Home Assistant reads it.

Commands arrive one per line on stdin; answers and events leave one per line
on stdout (``ready``, ``ia <t>`` when the body receives an ``intent_action``,
``probe <t>`` when the receiver receives a probe, ``rt <seconds>``,
``rt2 <seconds>``,
``chat <t>`` once a chat request sent at ``t`` was answered as expected,
``done <command>``). ``benchmarks.chat_path`` starts it with ``python -c``
(``scripts/bench`` runs only modules with a ``__main__`` block).
"""

from __future__ import annotations

import argparse
import http.client
import json
import logging
import socket
import sys
import threading
import time
from typing import Any

from paho.mqtt.client import CallbackAPIVersion, Client, MQTTMessage

from benchmarks.quiet_bodies import Address, QuietBodies
from devtools.body_sim import BodySim

PROBE_TOPIC = "bench-probe/rtt"
_write_lock = threading.Lock()


def say(*words: object) -> None:
    """Write one line to the parent (from any thread)."""
    with _write_lock:
        sys.stdout.write(" ".join(str(w) for w in words) + "\n")
        sys.stdout.flush()


class TimedBody(BodySim):
    """The reference body, telling when each ``intent_action`` arrives."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """Configure the body (``BodySim``'s arguments)."""
        super().__init__(*args, **kwargs)
        self.last_payload: dict[str, Any] | None = None

    def _on_intent_action(self, payload: dict[str, Any]) -> None:
        at = time.monotonic()
        say("ia", repr(at))
        self.last_payload = payload
        super()._on_intent_action(payload)


class Receiver:
    """A paho client receiving the probe topic, telling each arrival."""

    def __init__(self, host: str, port: int) -> None:
        """Connect and subscribe (blocking)."""
        self.arrived = threading.Event()  # set once ``wanted`` probes arrived
        self.at = 0.0
        self.count = 0
        self.wanted = 1
        subscribed = threading.Event()
        self.client = Client(CallbackAPIVersion.VERSION2, client_id="bench-receiver")
        self.client.on_message = self._on_message
        self.client.on_subscribe = lambda *_args: subscribed.set()
        self.client.connect(host, port)
        self.client.subscribe(PROBE_TOPIC, qos=1)
        self.client.loop_start()
        if not subscribed.wait(10):
            raise TimeoutError("the receiver did not subscribe")

    def expect(self, wanted: int) -> None:
        """Wait for ``wanted`` probes from now on."""
        self.arrived.clear()
        self.count = 0
        self.wanted = wanted

    def _on_message(self, _client: Client, _userdata: Any, _msg: MQTTMessage) -> None:
        self.at = at = time.monotonic()
        self.count += 1
        if self.count >= self.wanted:
            self.arrived.set()
        say("probe", repr(at))

    def stop(self) -> None:
        """Disconnect."""
        self.client.disconnect()
        self.client.loop_stop()


class Poster:
    """Sends ``POST /api/soul/v1/chat`` over one kept-alive connection."""

    def __init__(self, port: int, token: str, body: str) -> None:
        """Connect to Home Assistant's HTTP server on 127.0.0.1:``port``."""
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        self.connection.connect()
        # as a client that sends small requests at once (aiohttp, browsers)
        self.connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.headers = {
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
        }
        self.body = body

    def chat(self, session_id: str, text: str) -> float:
        """Send one turn; return when it was sent (``time.monotonic``) once answered."""
        request = json.dumps(
            {
                "session_id": session_id,
                "terminal_id": self.body,
                "inputs": [{"type": "speech_text", "text": text}],
            },
            ensure_ascii=False,
        ).encode()
        self.connection.putrequest("POST", "/api/soul/v1/chat")
        for name, value in self.headers.items():
            self.connection.putheader(name, value)
        self.connection.putheader("Content-Length", str(len(request)))
        started = time.monotonic()
        self.connection.endheaders(request)  # headers and body in one send()
        response = self.connection.getresponse()
        answer = json.loads(response.read())
        if response.status != 200 or answer.get("executed_skills") != ["control_light"]:
            raise RuntimeError(f"the turn did not execute: {response.status} {answer}")
        return started

    def close(self) -> None:
        """Close the connection."""
        self.connection.close()


def main() -> None:
    """Serve the parent's commands until ``stop`` or the end of stdin."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--body", required=True)
    parser.add_argument("--quiet", type=int, default=0, help="quiet bodies")
    parser.add_argument("--quiet-hint", default="")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    receiver = Receiver(args.host, args.port)
    publisher = Client(CallbackAPIVersion.VERSION2, client_id="bench-publisher")
    publisher.connect(args.host, args.port)
    publisher.loop_start()
    quiet = QuietBodies(
        Address(args.host, args.port),
        args.prefix,
        [f"quiet-{i:04d}" for i in range(args.quiet)],
        [args.quiet_hint] * args.quiet,
        heartbeat=10.0,
    )
    body = TimedBody(args.host, args.port, prefix=args.prefix, terminal_id=args.body)
    body.start()
    payload = emotion = ""
    poster: Poster | None = None
    say("ready")
    try:
        for line in sys.stdin:
            command = line.strip()
            if command in ("rt", "rt2"):  # the bare broker round trip, timed here
                # rt2: a turn's two messages, as large as its emotion_update
                # and its intent_action, back to back, until the second arrives
                messages = [payload] if command == "rt" else [emotion, payload]
                receiver.expect(len(messages))
                started = time.monotonic()
                for message in messages:
                    publisher.publish(PROBE_TOPIC, message, qos=1)
                if not receiver.arrived.wait(10):
                    raise TimeoutError("the probe did not arrive")
                say(command, repr(receiver.at - started))
                continue
            if command == "probe-like-intent":  # probes as large as the action
                payload = json.dumps(body.last_payload, ensure_ascii=False)
                emotion = json.dumps(body.last_emotion, ensure_ascii=False)
                say("payload", payload)
                continue
            if command.startswith("http "):  # http <port> <token>
                _, port, token = command.split(" ")
                poster = Poster(int(port), token, args.body)
            elif command.startswith("chat "):  # chat <session id> <text>
                if poster is None:
                    raise RuntimeError("chat before http")
                _, session_id, text = command.split(" ", 2)
                say("chat", repr(poster.chat(session_id, text)))
                continue
            elif command == "quiet-publish":
                quiet.publish()
            elif command == "quiet-clear":
                quiet.clear()
            elif command == "stop":
                break
            else:
                raise ValueError(f"unknown command {command!r}")
            say("done", command)
    finally:
        if poster is not None:
            poster.close()
        body.stop()
        quiet.stop()
        receiver.stop()
        publisher.disconnect()
        publisher.loop_stop()
