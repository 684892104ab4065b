"""The MQTT side of a Soul terminal (Soul-Body protocol v2, §7.2), for body-sim.

:class:`MqttTerminal` is an ordinary paho-mqtt 2.x client that connects with a
will ``{prefix}/terminal/{id}/online`` = ``offline`` (QoS 1, retained), on every
(re)connect subscribes to :data:`SUBSCRIPTIONS` and publishes the reports of
:data:`REPORTS` in order, sends a heartbeat every ``heartbeat`` seconds, and hands
every message it receives to a hook of its subclass (``_on_invoke``,
``_on_intent_action``, ``_on_emotion_update``, ``_on_status``). What the terminal
*is* (skills, catalog, state) lives in :mod:`devtools.body_device`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
import contextlib
import json
import logging
import socket
import threading
import time
from typing import Any, Self
import uuid

from paho.mqtt.client import (
    CallbackAPIVersion,
    Client,
    ConnectFlags,
    DisconnectFlags,
    MQTTMessage,
    MQTTMessageInfo,
    MQTTProtocolVersion,
)
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

_LOGGER = logging.getLogger(__name__)

REPORTS = ("online", "skills", "intent_catalog", "heartbeat")
"""The reports a terminal publishes on every (re)connect, in the required order."""

SUBSCRIPTIONS = ("invoke/+", "status", "emotion_update", "intent_action")
"""The topics (below ``{prefix}/terminal/{id}/``) a terminal subscribes to."""


class MqttTerminal:
    """A terminal's MQTT connection: connect, subscribe, publish, reconnect, LWT.

    Subclasses provide the retained snapshots (:meth:`_snapshot`) and handle what
    arrives (``_on_invoke``, ``_on_intent_action``, ``_on_emotion_update``,
    ``_on_status``, called on paho's network thread). Changes are recorded under
    ``lock`` through :meth:`_record`, so :meth:`wait_for` wakes on each of them;
    ``connections`` counts successful connects.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 1883,
        *,
        prefix: str = "soul",
        terminal_id: str = "terminal-001",
        heartbeat: float = 10.0,
        order: Iterable[str] = REPORTS,
        reannounce_on_reconnect: bool = True,
        client_id: str | None = None,
        username: str | None = None,
        password: str | None = None,
        keepalive: int = 60,
        reconnect_delay: float = 1.0,
    ) -> None:
        """Configure the connection; nothing connects before :meth:`start`.

        ``order`` says which reports are published on connect, in which order
        (unknown names raise ValueError); with ``reannounce_on_reconnect=False``
        reconnects publish only ``online`` and ``heartbeat``.
        """
        self.order = tuple(order)
        if unknown := set(self.order) - set(REPORTS):
            raise ValueError(f"unknown reports in order: {sorted(unknown)}")
        self.host = host
        self.port = port
        self.prefix = prefix
        self.terminal_id = terminal_id
        self.heartbeat = heartbeat
        self.reannounce_on_reconnect = reannounce_on_reconnect
        self.client_id = client_id or f"body-sim-{terminal_id}-{uuid.uuid4().hex[:8]}"
        self.username = username
        self.password = password
        self.keepalive = keepalive
        self.reconnect_delay = reconnect_delay

        self.lock = threading.RLock()
        self._changed = threading.Condition(self.lock)
        self.connections = 0
        self.last_connect_error: str | None = None

        self._client: Client | None = None
        self._stop = threading.Event()
        self._heartbeat_thread: threading.Thread | None = None
        self._subscribe_mid: int | None = None
        self._subscribed = 0
        self._announced: list[MQTTMessageInfo] = []

    # -- hooks for the terminal itself ------------------------------------------------

    def _snapshot(self, report: str) -> Any:
        """Return the retained payload of ``skills`` or ``intent_catalog``."""
        raise NotImplementedError

    def _on_invoke(self, topic_id: str, payload: Any) -> None:
        """Handle ``invoke/{topic_id}``; ``payload`` is None when it is not JSON."""
        raise NotImplementedError

    def _on_intent_action(self, payload: dict[str, Any]) -> None:
        raise NotImplementedError

    def _on_emotion_update(self, payload: dict[str, Any]) -> None:
        raise NotImplementedError

    def _on_status(self, payload: dict[str, Any]) -> None:
        raise NotImplementedError

    def _on_shutdown(self) -> None:
        """Stop the terminal's own work (timers); the client is already gone."""

    # -- topics and state ------------------------------------------------------

    @property
    def base_topic(self) -> str:
        """Return ``{prefix}/terminal/{terminal_id}``."""
        return f"{self.prefix}/terminal/{self.terminal_id}"

    def topic(self, name: str) -> str:
        """Return the full topic for ``name`` (``online``, ``result/abc``, ...)."""
        return f"{self.base_topic}/{name}"

    @property
    def connected(self) -> bool:
        """Return whether the MQTT connection is up."""
        client = self._client
        return client is not None and client.is_connected()

    def wait_for(self, predicate: Callable[[Self], bool], timeout: float = 5.0) -> bool:
        """Wait until ``predicate(self)`` holds (checked on every change)."""
        with self._changed:
            return self._changed.wait_for(lambda: predicate(self), timeout)

    def _record(self, update: Callable[[], None]) -> None:
        with self._changed:
            update()
            self._changed.notify_all()

    # -- lifecycle ---------------------------------------------------------------

    def start(self, timeout: float | None = 10.0) -> Self:
        """Connect, and return once subscribed and the initial reports are acknowledged.

        Raises TimeoutError (or ConnectionError when the broker refuses) after
        ``timeout`` seconds; ``None`` waits forever, retrying the connection.
        """
        if self._client is not None:
            raise RuntimeError(f"{type(self).__name__} is already started")
        client = Client(
            CallbackAPIVersion.VERSION2,
            client_id=self.client_id,
            protocol=MQTTProtocolVersion.MQTTv311,
            clean_session=True,
        )
        if self.username is not None:
            client.username_pw_set(self.username, self.password)
        client.will_set(self.topic("online"), "offline", qos=1, retain=True)
        client.reconnect_delay_set(
            min_delay=self.reconnect_delay, max_delay=max(self.reconnect_delay, 30)
        )
        client.on_connect = self._on_connect
        client.on_disconnect = self._on_disconnect
        client.on_subscribe = self._on_subscribe
        client.on_message = self._on_message
        with self.lock:
            target = self.connections + 1
            self.last_connect_error = None
        self._stop = threading.Event()
        self._client = client
        client.connect_async(self.host, self.port, self.keepalive)
        client.loop_start()
        if self.heartbeat > 0:
            self._heartbeat_thread = threading.Thread(
                target=self._heartbeat_loop,
                name=f"body-sim-heartbeat-{self.terminal_id}",
                daemon=True,
            )
            self._heartbeat_thread.start()
        try:
            self._wait_announced(target, timeout)
        except BaseException:
            self._shutdown(clean=True)
            raise
        return self

    def _wait_announced(self, target: int, timeout: float | None) -> None:
        deadline = None if timeout is None else time.monotonic() + timeout

        def remaining() -> float | None:
            return None if deadline is None else max(0.0, deadline - time.monotonic())

        with self._changed:
            ready = self._changed.wait_for(
                lambda: (
                    self.last_connect_error is not None
                    or (self.connections >= target and self._subscribed >= target)
                ),
                remaining(),
            )
            if self.last_connect_error is not None:
                raise ConnectionError(
                    f"broker refused the connection: {self.last_connect_error}"
                )
            announced = list(self._announced)
        if not ready:
            raise TimeoutError(
                f"body-sim did not connect to {self.host}:{self.port} in {timeout} s"
            )
        for info in announced:
            info.wait_for_publish(remaining())
            if not info.is_published():
                raise TimeoutError("the initial reports were not acknowledged in time")

    def stop(self, *, offline: bool = True) -> None:
        """Disconnect cleanly (the broker sends no will).

        With ``offline`` (the default) a retained ``offline`` is published first,
        as a terminal shutting down on purpose should.
        """
        client = self._client
        if client is None:
            return
        if offline and client.is_connected():
            info = client.publish(self.topic("online"), "offline", qos=1, retain=True)
            with contextlib.suppress(RuntimeError, ValueError):
                info.wait_for_publish(3.0)
        self._shutdown(clean=True)

    def kill(self) -> None:
        """Drop the connection without DISCONNECT, so the broker publishes the will."""
        client = self._client
        if client is None:
            return
        self._stop.set()
        # Keep paho's thread from sleeping before a reconnect attempt (private, so
        # only a speed-up: disconnect() below stops the reconnect either way).
        client._thread_terminate = True  # noqa: SLF001
        sock = client.socket()
        if isinstance(sock, socket.socket):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        # The socket is shut down, so no DISCONNECT reaches the broker; this only
        # tells paho's thread not to reconnect.
        client.disconnect()
        client.loop_stop()
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.close()
        self._shutdown(clean=False)

    def reconnect(self, timeout: float | None = 10.0, *, wait: bool = True) -> None:
        """Drop the connection like a network failure and let paho reconnect.

        The broker publishes the will, then the terminal reconnects after
        ``reconnect_delay`` and reports again. With ``wait``, return once the new
        connection's reports are acknowledged.
        """
        client = self._client
        if client is None:
            raise RuntimeError(f"{type(self).__name__} is not started")
        with self.lock:
            target = self.connections + 1
        sock = client.socket()
        if isinstance(sock, socket.socket):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        if wait:
            self._wait_announced(target, timeout)

    def _shutdown(self, *, clean: bool) -> None:
        """Stop the client (disconnecting when ``clean``), the heartbeat and timers."""
        self._stop.set()
        client, self._client = self._client, None
        if client is not None and clean:
            client.disconnect()
            client.loop_stop()
        if self._heartbeat_thread is not None:
            self._heartbeat_thread.join()
            self._heartbeat_thread = None
        self._on_shutdown()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- publishing ----------------------------------------------------------------

    def _publish_json(self, client: Client, name: str, payload: Any) -> MQTTMessageInfo:
        data = json.dumps(payload, ensure_ascii=False)
        return client.publish(self.topic(name), data, qos=1, retain=True)

    def _publish_result(self, topic_id: str, result: dict[str, Any]) -> bool:
        """Publish ``result/{topic_id}``; return False when not started."""
        client = self._client
        if client is None:
            return False
        client.publish(
            self.topic(f"result/{topic_id}"),
            json.dumps(result, ensure_ascii=False),
            qos=1,
            retain=False,
        )
        return True

    def _announce(self, client: Client, first: bool) -> list[MQTTMessageInfo]:
        """Publish the connect reports in ``order``; QoS 1 ones are returned."""
        infos = []
        for report in self.order:
            if report == "online":
                infos.append(
                    client.publish(self.topic("online"), "online", qos=1, retain=True)
                )
            elif report == "heartbeat":
                infos.append(client.publish(self.topic("heartbeat"), "1", qos=0))
            elif first or self.reannounce_on_reconnect:
                infos.append(self._publish_json(client, report, self._snapshot(report)))
        return infos

    def _heartbeat_loop(self) -> None:
        while not self._stop.wait(self.heartbeat):
            client = self._client
            if (
                client is not None
                and client.is_connected()
                and "heartbeat" in self.order
            ):
                client.publish(self.topic("heartbeat"), "1", qos=0, retain=False)

    # -- paho callbacks (paho's network thread) -------------------------------------

    def _on_connect(
        self,
        client: Client,
        userdata: Any,
        flags: ConnectFlags,
        reason_code: ReasonCode,
        properties: Properties | None,
    ) -> None:
        if reason_code.is_failure:
            _LOGGER.warning("Connection refused: %s", reason_code)
            self._record(lambda: setattr(self, "last_connect_error", str(reason_code)))
            return
        _result, mid = client.subscribe(
            [(self.topic(name), 1) for name in SUBSCRIPTIONS]
        )
        with self.lock:
            first = self.connections == 0
            self._subscribe_mid = mid
        infos = self._announce(client, first)
        _LOGGER.info(
            "Connected to %s:%s as %s; reported %s",
            self.host,
            self.port,
            self.base_topic,
            ", ".join(self.order),
        )

        def update() -> None:
            self.connections += 1
            self._announced = infos

        self._record(update)

    def _on_subscribe(
        self,
        client: Client,
        userdata: Any,
        mid: int,
        reason_codes: list[ReasonCode],
        properties: Properties | None,
    ) -> None:
        def update() -> None:
            if mid == self._subscribe_mid:
                self._subscribed = self.connections

        self._record(update)

    def _on_disconnect(
        self,
        client: Client,
        userdata: Any,
        flags: DisconnectFlags,
        reason_code: ReasonCode,
        properties: Properties | None,
    ) -> None:
        _LOGGER.info("Disconnected: %s", reason_code)

    def _on_message(self, client: Client, userdata: Any, message: MQTTMessage) -> None:
        try:
            self._dispatch(message)
        except Exception:
            _LOGGER.exception("Failed to handle %s", message.topic)

    def _dispatch(self, message: MQTTMessage) -> None:
        name = message.topic.removeprefix(self.base_topic + "/")
        is_invoke = name.startswith("invoke/") and name.count("/") == 1
        if not is_invoke and name not in SUBSCRIPTIONS:
            # Some brokers (amqtt) also send retained messages nobody asked for.
            _LOGGER.debug("Ignoring %s", message.topic)
            return
        try:
            payload = json.loads(message.payload)
        except ValueError:
            payload = None
        if is_invoke:
            self._on_invoke(name.removeprefix("invoke/"), payload)
        elif not isinstance(payload, dict):
            _LOGGER.warning("Ignoring %s: not a JSON object", message.topic)
        elif name == "intent_action":
            self._on_intent_action(payload)
        elif name == "emotion_update":
            self._on_emotion_update(payload)
        elif name == "status":
            self._on_status(payload)
