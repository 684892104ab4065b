"""A reference Soul terminal ("Body") that follows the Soul-Body protocol v2, §7.2.

It is an ordinary MQTT client (paho-mqtt 2.x) that:

1. connects with a will ``{prefix}/terminal/{id}/online`` = ``offline`` (QoS 1, retained);
2. on every (re)connect publishes ``online`` -> ``skills`` -> ``intent_catalog`` ->
   ``heartbeat``, then a heartbeat every ``--heartbeat`` seconds;
3. executes ``invoke/{requestId}`` and answers ``result/{requestId}``;
4. executes ``intent_action`` (``intents[].normalized``) and shows ``status`` and
   ``emotion_update``.

Run it against a broker with ``python -m devtools.body_sim`` (or ``scripts/body-sim``),
or in-process from tests through :class:`BodySim`. Constructor options can break it
on purpose (report order, terminal id, results without ``error``, no re-announce) so
that conformance checks can be tested.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
import contextlib
import copy
import json
import logging
from pathlib import Path
import random
import signal
import socket
import threading
import time
from typing import Any
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

from devtools.broker import add_broker_arguments

_LOGGER = logging.getLogger(__name__)

FIRMWARE_VERSION = "1.0.0"
MODEL = "Soul body-sim"
MANUFACTURER = "Soul"

REPORTS = ("online", "skills", "intent_catalog", "heartbeat")
"""The reports a terminal publishes on every (re)connect, in the required order."""

SUBSCRIPTIONS = ("invoke/+", "status", "emotion_update", "intent_action")
"""The topics (below ``{prefix}/terminal/{id}/``) a terminal subscribes to."""

SIMULATED_FAILURE = "simulated failure"

_SKILLS: dict[str, Any] = {
    "terminal_id": "terminal-001",
    "soul_hint": "friendly",
    "skill_version": 3,
    "skills": [
        {
            "name": "control_light",
            "description": "控制灯：开灯、关灯、设置颜色",
            "input_schema": {
                "type": "object",
                "properties": {
                    "mode": {"type": "string", "enum": ["on", "off", "set_color"]},
                    "color": {"type": "string", "enum": ["white", "red", "green"]},
                },
                "required": ["mode"],
            },
        },
        {
            "name": "create_alarm",
            "description": "订闹钟",
            "input_schema": {
                "type": "object",
                "properties": {
                    "trigger_at": {"type": "string"},
                    "trigger_in_seconds": {"type": "number", "minimum": 1},
                    "label": {"type": "string"},
                },
            },
        },
        {
            "name": "set_head_motion",
            "description": "头部动作：点头/摇头",
            "input_schema": {
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": ["点头", "摇头"]},
                    "duration_seconds": {
                        "type": "number",
                        "minimum": 0.2,
                        "maximum": 10,
                    },
                },
                "required": ["action"],
            },
        },
    ],
}

_CATALOG: dict[str, Any] = {
    "terminal_id": "terminal-001",
    "catalog_version": 12,
    "intent_catalog": [
        {
            "id": "intent_light_control",
            "name": "控制灯",
            "priority": 90,
            "match": {
                "keywords_any": [
                    "开灯",
                    "打开灯",
                    "把灯打开",
                    "灯打开",
                    "关灯",
                    "关闭灯",
                    "灯关了",
                    "灯关",
                    "灯",
                    "红色",
                    "绿色",
                    "白色",
                    "灯白色",
                    "变红",
                    "变绿",
                    "变白",
                ]
            },
            "slots": [
                {"name": "skill", "default": "control_light"},
                {
                    "name": "mode",
                    "regex": "(开灯|打开灯|把灯打开|灯打开|打开|开启|关灯|关闭灯|把灯关掉|灯关了|关了|关掉|关闭|变红|变红色|变绿|变绿色|变白|变白色|红灯|绿灯|白灯)",
                    "regex_group": 1,
                },
                {
                    "name": "color",
                    "regex": "(红色|红|绿色|绿|白色|白|白灯|灯白色)",
                    "regex_group": 1,
                },
            ],
        },
        {
            "id": "intent_alarm_create",
            "name": "订闹钟",
            "priority": 90,
            "match": {"keywords_any": ["闹钟", "叫我", "alarm"]},
            "slots": [
                {"name": "skill", "default": "create_alarm"},
                {
                    "name": "trigger_in_seconds",
                    "regex": "([0-9]+(?:\\.[0-9]+)?)\\s*秒",
                    "regex_group": 1,
                },
                {"name": "label", "default": "闹钟"},
            ],
        },
        {
            "id": "intent_head_motion",
            "name": "头部动作",
            "priority": 80,
            "match": {"keywords_any": ["点头", "摇头"]},
            "slots": [
                {"name": "skill", "default": "set_head_motion"},
                {
                    "name": "action",
                    "required": True,
                    "regex": "(点头|摇头)",
                    "regex_group": 1,
                },
                {
                    "name": "duration_seconds",
                    "regex": "([0-9]+(?:\\.[0-9]+)?)\\s*秒",
                    "regex_group": 1,
                },
            ],
        },
    ],
}

# Slot values of the catalog above, as the intent filter may pass them on unmapped.
_LIGHT_ON = {"开灯", "打开灯", "把灯打开", "灯打开", "打开", "开启"}
_LIGHT_OFF = {"关灯", "关闭灯", "把灯关掉", "灯关了", "关了", "关掉", "关闭", "灯关"}
_COLOURS = {
    "red": {"红色", "红", "变红", "变红色", "红灯"},
    "green": {"绿色", "绿", "变绿", "变绿色", "绿灯"},
    "white": {"白色", "白", "变白", "变白色", "白灯", "灯白色"},
}

# §3.8: user emotion -> (expression, intense expression, intense head motion,
# intensity from which the intense variant applies).
_EXPRESSIONS: dict[str, tuple[str, str, str | None, float]] = {
    **dict.fromkeys(("anger", "disgust", "frustration"), ("生气", "生气", "摇头", 0.0)),
    **dict.fromkeys(("anxiety", "fear"), ("不开心", "不开心", "摇头", 0.7)),
    **dict.fromkeys(
        ("sadness", "disappointment", "boredom"), ("不开心", "哭", "摇头", 0.7)
    ),
    **dict.fromkeys(("joy", "gratitude", "relief"), ("微笑", "微笑", "点头", 0.4)),
    **dict.fromkeys(("excitement", "surprise"), ("大笑", "大笑", "点头", 0.4)),
    **dict.fromkeys(("calm", "neutral"), ("微笑", "微笑", None, 0.0)),
}


def default_skills(terminal_id: str = "terminal-001") -> dict[str, Any]:
    """Return the skills snapshot of spec §3.3 for ``terminal_id``, with device info."""
    skills = copy.deepcopy(_SKILLS)
    skills["terminal_id"] = terminal_id
    skills.update(model=MODEL, manufacturer=MANUFACTURER, firmware=FIRMWARE_VERSION)
    return skills


def default_catalog(terminal_id: str = "terminal-001") -> dict[str, Any]:
    """Return the intent catalog of spec §3.10 for ``terminal_id``."""
    catalog = copy.deepcopy(_CATALOG)
    catalog["terminal_id"] = terminal_id
    return catalog


def skill_list(snapshot: Any) -> list[dict[str, Any]]:
    """Return the skills of a snapshot in object form or the compatible array form."""
    skills = snapshot.get("skills") if isinstance(snapshot, dict) else snapshot
    if not isinstance(skills, list):
        return []
    return [skill for skill in skills if isinstance(skill, dict)]


def _number_error(name: str, prop: dict[str, Any], value: Any) -> str | None:
    kind = prop.get("type")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"invalid {name}: expected a {kind}, got {value!r}"
    if kind == "integer" and not float(value).is_integer():
        return f"invalid {name}: expected an integer, got {value!r}"
    if "minimum" in prop and value < prop["minimum"]:
        return f"invalid {name}: {value!r} is below the minimum {prop['minimum']}"
    if "maximum" in prop and value > prop["maximum"]:
        return f"invalid {name}: {value!r} is above the maximum {prop['maximum']}"
    return None


def _value_error(name: str, prop: dict[str, Any], value: Any) -> str | None:
    if "enum" in prop and value not in prop["enum"]:
        allowed = ", ".join(str(item) for item in prop["enum"])
        return f"invalid {name}: {value!r} (expected one of {allowed})"
    kind = prop.get("type")
    if kind in ("number", "integer"):
        return _number_error(name, prop, value)
    types = {"string": str, "boolean": bool, "object": dict, "array": list}
    if kind in types and not isinstance(value, types[kind]):
        return f"invalid {name}: expected a {kind}, got {value!r}"
    return None


def validate_arguments(schema: dict[str, Any], arguments: Any) -> str | None:
    """Check ``arguments`` against a skill's input schema; return an error or None.

    Minimal on purpose: required properties, ``enum``, ``type``, ``minimum`` and
    ``maximum`` of top-level properties, and ``additionalProperties: false``.
    """
    if not isinstance(arguments, dict):
        return "arguments must be an object"
    properties = schema.get("properties") or {}
    for name in schema.get("required") or []:
        if name not in arguments:
            return f"missing required argument: {name}"
    for name, value in arguments.items():
        prop = properties.get(name)
        if prop is None:
            if schema.get("additionalProperties") is False:
                return f"unknown argument: {name}"
            continue
        if error := _value_error(name, prop, value):
            return error
    return None


def _coerce_slots(schema: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    """Turn numeric slot strings (regex captures) into numbers where the schema says so."""
    properties = schema.get("properties") or {}
    coerced = dict(arguments)
    for name, value in arguments.items():
        kind = (properties.get(name) or {}).get("type")
        if kind in ("number", "integer") and isinstance(value, str):
            with contextlib.suppress(ValueError):
                number = float(value)
                coerced[name] = int(number) if kind == "integer" else number
    return coerced


def _normalize_light(arguments: dict[str, Any]) -> dict[str, Any]:
    """Map the catalog's Chinese light slots (开灯, 变红, 红色, ...) onto the schema."""
    result = dict(arguments)
    mode, color = result.get("mode"), result.get("color")
    for name, words in _COLOURS.items():
        if color in words:
            result["color"] = name
        if mode in words:
            result["mode"] = "set_color"
            result.setdefault("color", name)
    if mode in _LIGHT_ON:
        result["mode"] = "on"
    elif mode in _LIGHT_OFF:
        result["mode"] = "off"
    elif mode is None and "color" in result:
        result["mode"] = "set_color"
    return result


class BodySim:
    """A simulated Soul terminal on an MQTT broker; see the module docstring.

    Everything it receives and does is recorded (under ``lock``): ``invocations``
    (invoke payloads), ``results`` (published results), ``intent_actions``,
    ``emotion_updates``, ``statuses``, ``executions`` (every skill run, from invoke
    or intent_action), and the device state ``light``, ``alarms``, ``head_motion``,
    ``expression``. ``connections`` counts successful connects.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 1883,
        *,
        prefix: str = "soul",
        terminal_id: str = "terminal-001",
        latency: float = 0.0,
        failure_rate: float = 0.0,
        answer: bool = True,
        heartbeat: float = 10.0,
        skills: dict[str, Any] | list[Any] | None = None,
        catalog: dict[str, Any] | None = None,
        seed: int | None = None,
        order: Iterable[str] = REPORTS,
        wrong_terminal_id: bool = False,
        result_without_error: bool = False,
        reannounce_on_reconnect: bool = True,
        client_id: str | None = None,
        username: str | None = None,
        password: str | None = None,
        keepalive: int = 60,
        reconnect_delay: float = 1.0,
    ) -> None:
        """Configure the terminal; nothing connects before :meth:`start`.

        ``skills`` and ``catalog`` are published as given (default: the spec
        examples for ``terminal_id``). Breakage for conformance tests: ``order``
        (which reports, in which order; unknown names raise ValueError),
        ``wrong_terminal_id`` (payloads name another terminal), ``answer=False``
        (invokes get no result), ``result_without_error`` (failed results lack
        ``error``), ``reannounce_on_reconnect=False`` (reconnects publish only
        ``online`` and ``heartbeat``).
        """
        self.order = tuple(order)
        if unknown := set(self.order) - set(REPORTS):
            raise ValueError(f"unknown reports in order: {sorted(unknown)}")
        if not 0.0 <= failure_rate <= 1.0:
            raise ValueError("failure_rate must be between 0 and 1")
        self.host = host
        self.port = port
        self.prefix = prefix
        self.terminal_id = terminal_id
        self.latency = latency
        self.failure_rate = failure_rate
        self.answer = answer
        self.heartbeat = heartbeat
        self.result_without_error = result_without_error
        self.reannounce_on_reconnect = reannounce_on_reconnect
        self.client_id = client_id or f"body-sim-{terminal_id}-{uuid.uuid4().hex[:8]}"
        self.username = username
        self.password = password
        self.keepalive = keepalive
        self.reconnect_delay = reconnect_delay
        self.skills = copy.deepcopy(
            skills if skills is not None else default_skills(terminal_id)
        )
        self.catalog = copy.deepcopy(
            catalog if catalog is not None else default_catalog(terminal_id)
        )
        if wrong_terminal_id:
            for payload in (self.skills, self.catalog):
                if isinstance(payload, dict):
                    payload["terminal_id"] = f"{terminal_id}-wrong"
        self._random = random.Random(seed)  # noqa: S311  # simulation, not crypto

        self.lock = threading.RLock()
        self._changed = threading.Condition(self.lock)
        self.connections = 0
        self.invocations: list[dict[str, Any]] = []
        self.results: list[dict[str, Any]] = []
        self.intent_actions: list[dict[str, Any]] = []
        self.emotion_updates: list[dict[str, Any]] = []
        self.statuses: list[dict[str, Any]] = []
        self.executions: list[dict[str, Any]] = []
        self.light: dict[str, Any] = {"on": False, "color": "white"}
        self.alarms: list[dict[str, Any]] = []
        self.head_motion: dict[str, Any] | None = None
        self.expression: str | None = None
        self.last_connect_error: str | None = None

        self._client: Client | None = None
        self._stop = threading.Event()
        self._heartbeat_thread: threading.Thread | None = None
        self._timers: set[threading.Timer] = set()
        self._subscribe_mid: int | None = None
        self._subscribed = 0
        self._announced: list[MQTTMessageInfo] = []

    # -- topics and state ------------------------------------------------------

    @property
    def base_topic(self) -> str:
        """Return ``{prefix}/terminal/{terminal_id}``."""
        return f"{self.prefix}/terminal/{self.terminal_id}"

    def topic(self, name: str) -> str:
        """Return the full topic for ``name`` (``online``, ``result/abc``, ...)."""
        return f"{self.base_topic}/{name}"

    @property
    def last_emotion(self) -> dict[str, Any] | None:
        """Return the last ``emotion_update`` payload received."""
        with self.lock:
            return self.emotion_updates[-1] if self.emotion_updates else None

    @property
    def last_status(self) -> dict[str, Any] | None:
        """Return the last ``status`` payload received."""
        with self.lock:
            return self.statuses[-1] if self.statuses else None

    @property
    def connected(self) -> bool:
        """Return whether the MQTT connection is up."""
        client = self._client
        return client is not None and client.is_connected()

    def wait_for(
        self, predicate: Callable[[BodySim], bool], timeout: float = 5.0
    ) -> bool:
        """Wait until ``predicate(self)`` holds (checked on every change)."""
        with self._changed:
            return self._changed.wait_for(lambda: predicate(self), timeout)

    def _record(self, update: Callable[[], None]) -> None:
        with self._changed:
            update()
            self._changed.notify_all()

    # -- lifecycle ---------------------------------------------------------------

    def start(self, timeout: float | None = 10.0) -> BodySim:
        """Connect, and return once subscribed and the initial reports are acknowledged.

        Raises TimeoutError (or ConnectionError when the broker refuses) after
        ``timeout`` seconds; ``None`` waits forever, retrying the connection.
        """
        if self._client is not None:
            raise RuntimeError("BodySim is already started")
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
            raise RuntimeError("BodySim is not started")
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
        with self.lock:
            timers, self._timers = self._timers, set()
        for timer in timers:
            timer.cancel()
        for timer in timers:
            if timer is not threading.current_thread():
                timer.join()

    def __enter__(self) -> BodySim:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- publishing ----------------------------------------------------------------

    def _publish_json(self, client: Client, name: str, payload: Any) -> MQTTMessageInfo:
        data = json.dumps(payload, ensure_ascii=False)
        return client.publish(self.topic(name), data, qos=1, retain=True)

    def _announce(self, client: Client, first: bool) -> list[MQTTMessageInfo]:
        """Publish the connect reports in ``order``; QoS 1 ones are returned."""
        infos = []
        for report in self.order:
            if report == "online":
                infos.append(
                    client.publish(self.topic("online"), "online", qos=1, retain=True)
                )
            elif report == "skills" and (first or self.reannounce_on_reconnect):
                infos.append(self._publish_json(client, "skills", self.skills))
            elif report == "intent_catalog" and (first or self.reannounce_on_reconnect):
                infos.append(self._publish_json(client, "intent_catalog", self.catalog))
            elif report == "heartbeat":
                infos.append(client.publish(self.topic("heartbeat"), "1", qos=0))
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
            self._dispatch(client, message)
        except Exception:
            _LOGGER.exception("Failed to handle %s", message.topic)

    def _dispatch(self, client: Client, message: MQTTMessage) -> None:
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
            self._on_invoke(client, name.removeprefix("invoke/"), payload)
        elif not isinstance(payload, dict):
            _LOGGER.warning("Ignoring %s: not a JSON object", message.topic)
        elif name == "intent_action":
            self._on_intent_action(payload)
        elif name == "emotion_update":
            self._on_emotion_update(payload)
        elif name == "status":
            _LOGGER.info(
                "Status: %s %s", payload.get("status"), payload.get("message", "")
            )
            self._record(lambda: self.statuses.append(payload))

    # -- invoke / result -------------------------------------------------------------

    def _on_invoke(self, client: Client, topic_id: str, payload: Any) -> None:
        request = payload if isinstance(payload, dict) else {}
        request_id = request.get("request_id")
        if not isinstance(request_id, str) or not request_id:
            request_id = topic_id
        skill = request.get("skill")
        arguments = request.get("arguments", {})
        _LOGGER.info("Invoke %s: %s %s", request_id, skill, arguments)
        self._record(
            lambda: self.invocations.append(
                {
                    "request_id": request_id,
                    "topic_request_id": topic_id,
                    "skill": skill,
                    "arguments": arguments,
                    "payload": payload,
                    "received_at": time.monotonic(),
                }
            )
        )
        if not self.answer:
            return
        if payload is None:
            job = (topic_id, request_id, "invoke", False, "invalid JSON payload")
        elif self._random.random() < self.failure_rate:
            job = (topic_id, request_id, skill, False, SIMULATED_FAILURE)
        else:
            job = (topic_id, request_id, skill, True, arguments)
        if self.latency <= 0:
            self._answer(*job)
            return
        timer = threading.Timer(self.latency, self._answer, args=job)
        timer.daemon = True
        with self.lock:
            self._timers.add(timer)
        timer.start()

    def _answer(
        self, topic_id: str, request_id: str, skill: Any, run: bool, detail: Any
    ) -> None:
        """Execute (when ``run``; else ``detail`` is the error) and publish the result."""
        with self.lock:
            self._timers.discard(threading.current_thread())
        if run:
            ok, output, error = self.execute(skill, detail, source="invoke")
        else:
            ok, output, error = False, f"{skill} failed", detail
        result: dict[str, Any] = {"request_id": request_id, "ok": ok, "output": output}
        if not ok and not self.result_without_error:
            result["error"] = error
        client = self._client
        if client is None:
            return
        client.publish(
            self.topic(f"result/{topic_id}"),
            json.dumps(result, ensure_ascii=False),
            qos=1,
            retain=False,
        )
        _LOGGER.info("Result %s: %s", request_id, result)
        self._record(lambda: self.results.append(result))

    # -- skills ------------------------------------------------------------------------

    def execute(
        self, skill: Any, arguments: Any, *, source: str = "local"
    ) -> tuple[bool, str, str | None]:
        """Run a skill on the simulated hardware; return ``(ok, output, error)``."""
        specs = {spec.get("name"): spec for spec in skill_list(self.skills)}
        spec = specs.get(skill) if isinstance(skill, str) else None
        if spec is None:
            ok, error = False, f"unknown skill: {skill}"
        else:
            error = validate_arguments(spec.get("input_schema") or {}, arguments)
            if error is None:
                handler = {
                    "control_light": self._control_light,
                    "create_alarm": self._create_alarm,
                    "set_head_motion": self._set_head_motion,
                }.get(skill)
                with self.lock:
                    error = handler(arguments) if handler else None
            ok = error is None
        output = f"{skill} executed" if ok else f"{skill} failed"
        _LOGGER.info("Run %s %s: %s", skill, arguments, "ok" if ok else error)
        self._record(
            lambda: self.executions.append(
                {
                    "source": source,
                    "skill": skill,
                    "arguments": arguments,
                    "ok": ok,
                    "output": output,
                    "error": error,
                }
            )
        )
        return ok, output, error

    def _control_light(self, arguments: dict[str, Any]) -> str | None:
        mode, color = arguments["mode"], arguments.get("color")
        if mode == "set_color" and color is None:
            return "invalid color: color is required for set_color"
        self.light["on"] = mode != "off"
        if color is not None:
            self.light["color"] = color
        _LOGGER.info("Light: %s", self.light)
        return None

    def _create_alarm(self, arguments: dict[str, Any]) -> str | None:
        if "trigger_at" not in arguments and "trigger_in_seconds" not in arguments:
            return "trigger_at or trigger_in_seconds is required"
        alarm = {"label": arguments.get("label", "闹钟"), **arguments}
        self.alarms.append(alarm)
        _LOGGER.info("Alarm: %s", alarm)
        return None

    def _set_head_motion(self, arguments: dict[str, Any]) -> str | None:
        self.head_motion = {
            "action": arguments["action"],
            "duration_seconds": arguments.get("duration_seconds", 1.0),
        }
        _LOGGER.info("Head motion: %s", self.head_motion)
        return None

    # -- intent_action / emotion_update --------------------------------------------------

    def _on_intent_action(self, payload: dict[str, Any]) -> None:
        self._record(lambda: self.intent_actions.append(payload))
        specs = {spec.get("name"): spec for spec in skill_list(self.skills)}
        intents = payload.get("intents")
        for intent in intents if isinstance(intents, list) else []:
            normalized = intent.get("normalized") if isinstance(intent, dict) else None
            if not isinstance(normalized, dict):
                _LOGGER.warning("Intent without normalized action: %s", intent)
                continue
            skill = normalized.get("skill")
            arguments = {k: v for k, v in normalized.items() if k != "skill"}
            spec = specs.get(skill) if isinstance(skill, str) else None
            if spec is not None:
                arguments = _coerce_slots(spec.get("input_schema") or {}, arguments)
            if skill == "control_light":
                arguments = _normalize_light(arguments)
            _LOGGER.info("Intent %s -> %s", intent.get("intent_id"), skill)
            self.execute(skill, arguments, source="intent_action")

    def _on_emotion_update(self, payload: dict[str, Any]) -> None:
        def update() -> None:
            self.emotion_updates.append(payload)
            user = payload.get("user_emotion")
            # A natural-decay tick only refreshes the PAD state; it is no user event.
            if payload.get("session_id") != "system_decay_tick" and isinstance(
                user, dict
            ):
                calm, intense, motion, threshold = _EXPRESSIONS.get(
                    str(user.get("emotion")), _EXPRESSIONS["neutral"]
                )
                intensity = user.get("intensity", 0)
                strong = isinstance(intensity, int | float) and intensity >= threshold
                self.expression = intense if strong else calm
                if strong and motion:
                    self.head_motion = {"action": motion, "duration_seconds": 1.0}
            soul = payload.get("soul_emotion")
            soul = soul if isinstance(soul, dict) else {}
            _LOGGER.info(
                "Emotion: PAD p=%s a=%s d=%s exec_mode=%s exec_probability=%s "
                "expression=%s",
                soul.get("p"),
                soul.get("a"),
                soul.get("d"),
                payload.get("exec_mode"),
                payload.get("exec_probability"),
                self.expression,
            )

        self._record(update)


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
    print(f"body-sim: {sim.base_topic} on {args.host}:{args.port} (Ctrl-C stops)")

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

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
