"""The simulated body of body-sim: skills, intent catalog, device state and handlers.

:class:`BodySim` is a reference Soul terminal (Soul-Body protocol v2, §7.2). Its
MQTT connection (connect, will, reports, heartbeat, reconnect) is
:class:`devtools.body_mqtt.MqttTerminal`; this module is what the terminal does
with what it receives:

* ``invoke/{requestId}``: runs the skill once its arguments pass the skill's
  ``input_schema`` (checked with ``jsonschema``; otherwise ``ok: false`` with the
  validation error) and answers ``result/{requestId}``, after ``latency`` and
  failing at ``failure_rate`` when asked to;
* ``intent_action``: runs ``intents[].normalized``, mapping the catalog's Chinese
  slot values onto the skills' schemas, unless ``exec_mode`` is ``blocked``
  (§3.8): then it runs nothing and shows the "暂缓执行" (deferred) notice;
* ``emotion_update`` and ``status``: shown as an expression and logged; the
  ``exec_mode`` of the last ``emotion_update`` gates ``intent_action``.

Its skills are the example of §3.3, except that ``create_alarm`` states what it
requires (§7.3: ``trigger_at`` or ``trigger_in_seconds``), so Soul offers no
button for it that would always fail.

Constructor options can break it on purpose (report order, terminal id, results
without ``error``, no re-announce) so that conformance checks can be tested.
"""

from __future__ import annotations

from collections.abc import Iterable
import contextlib
import copy
import functools
import json
import logging
import random
import threading
import time
from typing import Any

from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import SchemaError, ValidationError

from devtools.body_mqtt import REPORTS, MqttTerminal

_LOGGER = logging.getLogger(__name__)

FIRMWARE_VERSION = "1.0.0"
MODEL = "Soul body-sim"
MANUFACTURER = "Soul"

SIMULATED_FAILURE = "simulated failure"
BLOCKED = "blocked"
DEFERRED_NOTICE = "暂缓执行"
"""What the body shows for an ``intent_action`` it defers (§3.8: exec_mode blocked)."""

SPEC_SKILLS: dict[str, Any] = {
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
"""The skills payload of §3.3, verbatim (tests hold Soul to it)."""

_ALARM_PROPERTIES = SPEC_SKILLS["skills"][1]["input_schema"]["properties"]
ALARM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": _ALARM_PROPERTIES,
    # §7.3: an alarm needs trigger_at or trigger_in_seconds. Each branch
    # repeats the properties: Home Assistant's schema converter for the tools
    # Assist's model sees (voluptuous_openapi, up to 2026.9) reads only the
    # branches of an anyOf, and fails on a branch without a type.
    "anyOf": [
        {"type": "object", "properties": _ALARM_PROPERTIES, "required": [name]}
        for name in ("trigger_at", "trigger_in_seconds")
    ],
}
"""``create_alarm``'s input_schema: the spec's, stating what it requires.

The spec's schema requires nothing, so Soul would offer a button (a press
sends ``{}``) that always fails.
"""

_SKILLS: dict[str, Any] = copy.deepcopy(SPEC_SKILLS)
_SKILLS["skills"][1]["input_schema"] = copy.deepcopy(ALARM_SCHEMA)

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
                # Any time in the command ("10分钟后", "明天早上8点"); without
                # one the filter asks for it instead of sending what fails.
                {"name": "trigger_at", "required": True, "from_time_key": "trigger_at"},
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


def spec_skills(terminal_id: str = "terminal-001") -> dict[str, Any]:
    """Return the skills payload of spec §3.3, verbatim, for ``terminal_id``."""
    skills = copy.deepcopy(SPEC_SKILLS)
    skills["terminal_id"] = terminal_id
    return skills


def default_skills(terminal_id: str = "terminal-001") -> dict[str, Any]:
    """Return body-sim's skills for ``terminal_id``, with device info.

    They are the spec's (§3.3), except ``create_alarm``'s schema
    (:data:`ALARM_SCHEMA`).
    """
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


def _explain(error: ValidationError) -> str:
    """Return one validation error as ``invalid {argument}: {why}``."""
    where = "/".join(map(str, error.absolute_path)) or "arguments"
    if error.validator in ("anyOf", "oneOf") and error.context:
        alternatives = dict.fromkeys(sub.message for sub in error.context)
        return f"invalid {where}: {' or '.join(alternatives)}"
    return f"invalid {where}: {error.message}"


@functools.lru_cache(maxsize=128)
def _validator(schema_text: str) -> Any:
    """Return a validator for a schema (as JSON text), checked once; raise SchemaError.

    Checking a schema against its meta-schema takes milliseconds: a body checks
    each of its skills' schemas once, not at every call.
    """
    schema = json.loads(schema_text)
    cls = validators.validator_for(schema, default=Draft202012Validator)
    cls.check_schema(schema)
    return cls(schema)


def validate_arguments(schema: Any, arguments: Any) -> str | None:
    """Check ``arguments`` against a skill's input schema; return the error or None.

    The check is ``jsonschema``'s (the draft the schema names, else 2020-12).
    The error names the argument and why, as §3.6 suggests (``invalid color:
    'blue' is not one of ...``); an error about one argument is preferred to
    an error about the whole object.
    """
    if not isinstance(schema, dict):
        return "invalid input_schema: not a JSON object"
    try:
        validator = _validator(json.dumps(schema))
    except SchemaError as err:
        return f"invalid input_schema: {err.message}"
    errors = list(validator.iter_errors(arguments))
    if not errors:
        return None
    return _explain(
        min(
            errors,
            key=lambda e: (e.validator in ("anyOf", "oneOf"), -len(e.absolute_path)),
        )
    )


def _schema_of(spec: dict[str, Any]) -> Any:
    """Return a skill's input_schema; none means no arguments (as Soul reads it)."""
    schema = spec.get("input_schema")
    return {"type": "object", "properties": {}} if schema is None else schema


def _coerce_slots(schema: Any, arguments: dict[str, Any]) -> dict[str, Any]:
    """Turn numeric slot strings (regex captures) into numbers where the schema says so."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    properties = properties if isinstance(properties, dict) else {}
    coerced = dict(arguments)
    for name, value in arguments.items():
        prop = properties.get(name)
        kind = prop.get("type") if isinstance(prop, dict) else None
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


class BodySim(MqttTerminal):
    """A simulated Soul terminal on an MQTT broker; see the module docstring.

    Everything it receives and does is recorded (under ``lock``): ``invocations``
    (invoke payloads), ``results`` (published results), ``intent_actions``,
    ``emotion_updates``, ``statuses``, ``executions`` (every skill run, from invoke
    or intent_action), ``deferred`` (the intent_actions not run because
    ``exec_mode`` was ``blocked``), and the device state ``light``, ``alarms``,
    ``head_motion``, ``expression``, ``exec_mode`` (from the last
    ``emotion_update``) and ``notice`` ("暂缓执行" after an action was deferred,
    until an ``emotion_update`` is no longer blocked). ``connections`` counts
    successful connects.

    ``exec_mode`` gates ``intent_action`` only (an ``exec_mode`` in the
    ``intent_action`` itself wins over the last ``emotion_update``'s). An
    ``invoke`` always runs: Soul already refuses the model's tool calls while
    blocked, and a command from Home Assistant (a light, a button, an action)
    is the user's own.
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
        super().__init__(
            host,
            port,
            prefix=prefix,
            terminal_id=terminal_id,
            heartbeat=heartbeat,
            order=order,
            reannounce_on_reconnect=reannounce_on_reconnect,
            client_id=client_id,
            username=username,
            password=password,
            keepalive=keepalive,
            reconnect_delay=reconnect_delay,
        )
        if not 0.0 <= failure_rate <= 1.0:
            raise ValueError("failure_rate must be between 0 and 1")
        self.latency = latency
        self.failure_rate = failure_rate
        self.answer = answer
        self.result_without_error = result_without_error
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
        self.exec_mode: str | None = None
        self.deferred: list[dict[str, Any]] = []
        self.notice: str | None = None
        self._timers: set[threading.Timer] = set()

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

    # -- MqttTerminal hooks ------------------------------------------------------------

    def _snapshot(self, report: str) -> Any:
        return self.skills if report == "skills" else self.catalog

    def _on_shutdown(self) -> None:
        with self.lock:
            timers, self._timers = self._timers, set()
        for timer in timers:
            timer.cancel()
        for timer in timers:
            if timer is not threading.current_thread():
                timer.join()

    def _on_status(self, payload: dict[str, Any]) -> None:
        _LOGGER.info("Status: %s %s", payload.get("status"), payload.get("message", ""))
        self._record(lambda: self.statuses.append(payload))

    # -- invoke / result -------------------------------------------------------------

    def _on_invoke(self, topic_id: str, payload: Any) -> None:
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
        if not self._publish_result(topic_id, result):
            return
        _LOGGER.info("Result %s: %s", request_id, result)
        self._record(lambda: self.results.append(result))

    # -- skills ------------------------------------------------------------------------

    def execute(
        self, skill: Any, arguments: Any, *, source: str = "local"
    ) -> tuple[bool, str, str | None]:
        """Run a skill on the simulated hardware; return ``(ok, output, error)``."""
        spec = self._spec(skill)
        if spec is None:
            ok, error = False, f"unknown skill: {skill}"
        else:
            error = validate_arguments(_schema_of(spec), arguments)
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

    def _spec(self, skill: Any) -> dict[str, Any] | None:
        """Return the announced skill called ``skill`` (the first, like Soul)."""
        if not isinstance(skill, str):
            return None
        return next(
            (s for s in skill_list(self.skills) if s.get("name") == skill), None
        )

    def _on_intent_action(self, payload: dict[str, Any]) -> None:
        own = payload.get("exec_mode")
        with self.lock:
            mode = own if isinstance(own, str) else self.exec_mode
        if mode == BLOCKED:
            # §3.8: while blocked, show the deferred notice and do not act.
            _LOGGER.info(
                "%s: intent_action %s not executed (exec_mode blocked)",
                DEFERRED_NOTICE,
                payload.get("request_id"),
            )

            def defer() -> None:
                self.intent_actions.append(payload)
                self.deferred.append(payload)
                self.notice = DEFERRED_NOTICE

            self._record(defer)
            return
        self._record(lambda: self.intent_actions.append(payload))
        intents = payload.get("intents")
        for intent in intents if isinstance(intents, list) else []:
            normalized = intent.get("normalized") if isinstance(intent, dict) else None
            if not isinstance(normalized, dict):
                _LOGGER.warning("Intent without normalized action: %s", intent)
                continue
            skill = normalized.get("skill")
            arguments = {k: v for k, v in normalized.items() if k != "skill"}
            spec = self._spec(skill)
            if spec is not None:
                arguments = _coerce_slots(_schema_of(spec), arguments)
            if skill == "control_light":
                arguments = _normalize_light(arguments)
            _LOGGER.info("Intent %s -> %s", intent.get("intent_id"), skill)
            self.execute(skill, arguments, source="intent_action")

    def _on_emotion_update(self, payload: dict[str, Any]) -> None:
        def update() -> None:
            self.emotion_updates.append(payload)
            mode = payload.get("exec_mode")
            if isinstance(mode, str):
                self.exec_mode = mode
                if mode != BLOCKED:
                    self.notice = None
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
