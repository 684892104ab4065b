"""Bodies that only need to exist: retained reports and heartbeats over one client.

No Home Assistant here: ``benchmarks.chat_peer`` runs them in a process of
their own, ``benchmarks.startup`` beside Home Assistant.
"""

from __future__ import annotations

import copy
import json
import threading
from typing import Any, NamedTuple, Protocol
import uuid

from paho.mqtt.client import CallbackAPIVersion, Client

from devtools.body_sim import default_catalog, default_skills


class Broker(Protocol):
    """Where a broker listens (``devtools.broker.MqttBroker`` or an ``Address``)."""

    @property
    def host(self) -> str:
        """The broker's host."""
        ...

    @property
    def port(self) -> int:
        """The broker's port."""
        ...


class Address(NamedTuple):
    """A broker's address, for a process that did not start the broker."""

    host: str
    port: int


def body_snapshots(
    terminal_id: str, index: int, soul_hint: str | None
) -> dict[str, Any]:
    """Return a body's retained reports (skills with device info, its own catalog).

    Each catalog differs (one intent's name carries the index), so every
    body's catalog is compiled and held on its own: the worst case for memory.
    """
    skills = default_skills(terminal_id)
    if soul_hint is None:
        skills.pop("soul_hint", None)
    else:
        skills["soul_hint"] = soul_hint
    catalog = copy.deepcopy(default_catalog(terminal_id))
    catalog["intent_catalog"][-1]["name"] = f"头部动作 {index}"
    return {"online": "online", "skills": skills, "intent_catalog": catalog}


class QuietBodies:
    """Bodies that announce themselves and heartbeat, over one paho client.

    Their ``online``, ``skills`` and ``intent_catalog`` are retained (QoS 1),
    as a body publishes them; a thread sends every body's heartbeat each
    ``heartbeat`` seconds so none goes stale.
    """

    def __init__(
        self,
        broker: Broker,
        prefix: str,
        ids: list[str],
        hints: list[str | None],
        *,
        heartbeat: float = 10.0,
    ) -> None:
        """Describe the bodies; nothing is sent before ``publish``."""
        self.prefix = prefix
        self.ids = ids
        self.hints = hints
        self.heartbeat = heartbeat
        self._client = Client(
            CallbackAPIVersion.VERSION2, client_id=f"quiet-{uuid.uuid4().hex[:12]}"
        )
        self._client.connect(broker.host, broker.port)
        self._client.loop_start()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _topic(self, terminal_id: str, kind: str) -> str:
        return f"{self.prefix}/terminal/{terminal_id}/{kind}"

    def publish(self) -> None:
        """Publish every body's retained reports, wait for the broker, heartbeat."""
        infos = []
        for index, (terminal_id, hint) in enumerate(
            zip(self.ids, self.hints, strict=True)
        ):
            for kind, payload in body_snapshots(terminal_id, index, hint).items():
                text = (
                    payload
                    if isinstance(payload, str)
                    else json.dumps(payload, ensure_ascii=False)
                )
                infos.append(
                    self._client.publish(
                        self._topic(terminal_id, kind), text, qos=1, retain=True
                    )
                )
        for info in infos:
            info.wait_for_publish(30)
        self._beat()
        if self.heartbeat > 0:
            self._thread = threading.Thread(target=self._loop, daemon=True)
            self._thread.start()

    def _beat(self) -> None:
        for terminal_id in self.ids:
            self._client.publish(self._topic(terminal_id, "heartbeat"), "1", qos=0)

    def _loop(self) -> None:
        while not self._stop.wait(self.heartbeat):
            self._beat()

    def clear(self) -> None:
        """Clear the retained reports (the broker is shared by the phases)."""
        infos = [
            self._client.publish(self._topic(t, kind), b"", qos=1, retain=True)
            for t in self.ids
            for kind in ("intent_catalog", "skills", "online")
        ]
        for info in infos:
            info.wait_for_publish(30)

    def stop(self) -> None:
        """Stop heartbeating and disconnect."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._client.disconnect()
        self._client.loop_stop()
