"""The hostile body: one MQTT client publishing for many terminals."""

from __future__ import annotations

import json
import threading
from typing import Any

from paho.mqtt.client import CallbackAPIVersion, Client, MQTTMessage

from devtools.hostile.payloads import PREFIX


class Body:
    """An MQTT client that publishes for many terminals and answers their invokes."""

    def __init__(self, host: str, port: int, run: str) -> None:
        """Connect to the broker at ``host:port``."""
        self.client = Client(
            CallbackAPIVersion.VERSION2, client_id=f"hostile-check-{run}"
        )
        self.client.on_message = self._on_message
        self.client.on_connect = self._on_connect
        self.connected = threading.Event()
        self.answering: set[str] = set()  # terminals whose invokes get a result
        self.alive: set[str] = set()  # terminals that send heartbeats
        self.retained: set[str] = set()  # topics to clear at the end
        self.seen: dict[str, int] = {}  # topic kind → messages received
        self.invokes: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        self.client.connect(host, port, keepalive=30)
        self.client.loop_start()
        if not self.connected.wait(10):
            raise RuntimeError(f"could not connect to the MQTT broker {host}:{port}")

    def _on_connect(self, client: Client, *_args: Any) -> None:
        client.subscribe(f"{PREFIX}/terminal/+/invoke/+", qos=1)
        client.subscribe(f"{PREFIX}/terminal/+/emotion_update", qos=0)
        self.connected.set()

    def _on_message(self, client: Client, _userdata: Any, message: MQTTMessage) -> None:
        parts = message.topic.split("/")
        if len(parts) < 4:
            return
        terminal_id, kind = parts[2], parts[3]
        with self._lock:
            key = f"{terminal_id}/{kind}"
            self.seen[key] = self.seen.get(key, 0) + 1
        if kind == "invoke" and len(parts) == 5 and terminal_id in self.answering:
            try:
                invoke = json.loads(message.payload)
            except ValueError:
                return
            self.invokes.append((terminal_id, invoke))
            client.publish(
                f"{PREFIX}/terminal/{terminal_id}/result/{parts[4]}",
                json.dumps(
                    {"request_id": parts[4], "ok": True, "output": "hostile ok"}
                ),
                qos=1,
            )

    def count(self, terminal_id: str, kind: str) -> int:
        """Return how many messages of ``kind`` Soul sent to ``terminal_id``."""
        with self._lock:
            return self.seen.get(f"{terminal_id}/{kind}", 0)

    def publish(
        self,
        terminal_id: str,
        kind: str,
        payload: str | bytes,
        *,
        retain: bool = False,
        qos: int = 1,
        wait: bool = True,
    ) -> None:
        """Publish on a terminal's topic (retained ones are cleared at the end)."""
        topic = f"{PREFIX}/terminal/{terminal_id}/{kind}"
        if retain:
            self.retained.add(topic)
        info = self.client.publish(topic, payload, qos=qos, retain=retain)
        if wait and qos > 0:
            info.wait_for_publish(30)

    def announce(
        self,
        terminal_id: str,
        skills: dict[str, Any] | str,
        catalog_payload: str | None = None,
    ) -> None:
        """Connect a terminal the §2 way: online, skills, intent_catalog, heartbeat."""
        self.publish(terminal_id, "online", "online", retain=True)
        skills_payload = skills if isinstance(skills, str) else json.dumps(skills)
        self.publish(terminal_id, "skills", skills_payload, retain=True)
        if catalog_payload is not None:
            self.publish(terminal_id, "intent_catalog", catalog_payload, retain=True)
        self.publish(terminal_id, "heartbeat", "1", qos=0)
        self.answering.add(terminal_id)
        self.alive.add(terminal_id)

    def heartbeats(self) -> None:
        """Send one heartbeat for every live terminal."""
        for terminal_id in list(self.alive):
            self.publish(terminal_id, "heartbeat", "1", qos=0, wait=False)

    def clear(self) -> None:
        """Clear every retained message published (the terminals go away)."""
        self.alive.clear()
        infos = [
            self.client.publish(topic, b"", qos=1, retain=True)
            for topic in sorted(self.retained)
        ]
        for info in infos:
            info.wait_for_publish(30)
        self.retained.clear()

    def close(self) -> None:
        """Disconnect."""
        self.client.disconnect()
        self.client.loop_stop()
