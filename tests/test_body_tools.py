"""The hardware-vendor tools on a real broker: ``devtools.body_sim`` and ``body_check``.

The simulated body must follow the Soul-Body protocol v2 (§3, §7.2): retained
snapshots, report order, LWT, invoke/result, intent_action, status and
emotion_update. The checker must pass it and catch deliberately broken bodies.
Tests are synchronous (paho runs its own threads; every client is stopped and
joined). The broker is shared by the session, so each test uses its own terminal
id and clears the retained messages it leaves.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
import copy
import json
import logging
import threading
import time
from typing import Any
import uuid

from paho.mqtt.client import (
    CallbackAPIVersion,
    Client,
    MQTTMessage,
    MQTTProtocolVersion,
    topic_matches_sub,
)
import pytest

from custom_components.soul.compat import schema_from_json, schema_to_json
from custom_components.soul.core.intent_filter import filter_intents
from custom_components.soul.core.protocol import parse_skills
from custom_components.soul.core.registry import TerminalRegistry
from custom_components.soul.core.skill_profiles import Profile, profile
from custom_components.soul.core.topics import Kind
from devtools import body_check, body_sim
from devtools.body_check import CheckResult, run_checks
from devtools.body_device import ALARM_SCHEMA
from devtools.body_sim import (
    DEFERRED_NOTICE,
    BodySim,
    default_catalog,
    default_skills,
    validate_arguments,
)
from devtools.broker import MqttBroker, free_port

from .core.spec_payloads import SKILLS as SPEC_SKILLS

PREFIX = "soul"
REPORTS = ["online", "skills", "intent_catalog", "heartbeat"]


class Recorder:
    """A paho client that records the messages matching one topic filter."""

    def __init__(self, broker: MqttBroker, topic_filter: str) -> None:
        self.filter = topic_filter
        self.messages: list[MQTTMessage] = []
        self._changed = threading.Condition()
        self._subscribed = threading.Event()
        self.client = Client(
            CallbackAPIVersion.VERSION2,
            client_id=f"test-recorder-{uuid.uuid4().hex[:8]}",
            protocol=MQTTProtocolVersion.MQTTv311,
        )
        self.client.on_message = self._on_message
        self.client.on_subscribe = lambda *args: self._subscribed.set()
        # Subscribe on every connection: a connection the broker drops early
        # (amqtt, on a busy machine) is made again and subscribed again.
        self.client.on_connect = lambda *args: self.client.subscribe(topic_filter, 1)
        self.client.connect(broker.host, broker.port)
        self.client.loop_start()
        if not self._subscribed.wait(15):
            self.close()  # no paho thread left behind for later tests
            pytest.fail(f"the broker did not acknowledge {topic_filter} in 15 s")

    def _on_message(self, client: Client, userdata: Any, message: MQTTMessage) -> None:
        # amqtt also sends retained messages of other clients' filters on connect.
        if topic_matches_sub(self.filter, message.topic):
            with self._changed:
                self.messages.append(message)
                self._changed.notify_all()

    def wait_for(
        self, predicate: Callable[[list[MQTTMessage]], bool], timeout: float = 5.0
    ) -> bool:
        """Wait until ``predicate(messages)`` holds."""
        with self._changed:
            return self._changed.wait_for(lambda: predicate(self.messages), timeout)

    def publish(self, topic: str, payload: Any, *, retain: bool = False) -> None:
        """Publish (JSON unless bytes/str) with QoS 1 and wait until acknowledged."""
        if not isinstance(payload, bytes | str):
            payload = json.dumps(payload, ensure_ascii=False)
        self.client.publish(topic, payload, qos=1, retain=retain).wait_for_publish(5)

    def close(self) -> None:
        """Disconnect and join paho's thread."""
        self.client.disconnect()
        self.client.loop_stop()


def names(messages: list[MQTTMessage], tid: str) -> list[str]:
    """Return the topics below the terminal's base topic."""
    base = f"{PREFIX}/terminal/{tid}/"
    return [m.topic.removeprefix(base) for m in messages]


def by_status(results: list[CheckResult], status: str) -> set[str]:
    """Return the names of the checks with ``status``."""
    return {result.name for result in results if result.status == status}


@pytest.fixture
def terminal_id() -> str:
    """A terminal id of its own (the broker and its retained messages are shared)."""
    return f"test-body-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def recorders(mqtt_broker: MqttBroker) -> Generator[Callable[[str], Recorder]]:
    """Make recorders that are closed at the end of the test."""
    made: list[Recorder] = []

    def make(topic_filter: str) -> Recorder:
        made.append(Recorder(mqtt_broker, topic_filter))
        return made[-1]

    yield make
    for recorder in made:
        recorder.close()


@pytest.fixture
def make_body(
    mqtt_broker: MqttBroker, terminal_id: str
) -> Generator[Callable[..., BodySim]]:
    """Make body simulators (not started); afterwards stop them and clear their topics."""
    made: list[BodySim] = []

    def make(**options: Any) -> BodySim:
        options.setdefault("terminal_id", terminal_id)
        options.setdefault("heartbeat", 0.3)
        made.append(BodySim(mqtt_broker.host, mqtt_broker.port, **options))
        return made[-1]

    yield make
    for body in made:
        body.stop(offline=False)
    cleaner = Recorder(mqtt_broker, f"{PREFIX}/terminal/cleanup/{terminal_id}")
    try:
        for tid in {body.terminal_id for body in made}:
            for name in ("online", "skills", "intent_catalog"):
                cleaner.publish(f"{PREFIX}/terminal/{tid}/{name}", b"", retain=True)
    finally:
        cleaner.close()


def invoke(recorder: Recorder, tid: str, skill: str, arguments: Any) -> str:
    """Publish an invoke and return its request id."""
    request_id = str(uuid.uuid4())
    recorder.publish(
        f"{PREFIX}/terminal/{tid}/invoke/{request_id}",
        {"request_id": request_id, "skill": skill, "arguments": arguments},
    )
    return request_id


def result_of(recorder: Recorder, tid: str, request_id: str, timeout: float = 5.0):
    """Wait for the result of ``request_id`` and return (payload, message)."""
    topic = f"{PREFIX}/terminal/{tid}/result/{request_id}"
    assert recorder.wait_for(lambda ms: any(m.topic == topic for m in ms), timeout)
    message = next(m for m in recorder.messages if m.topic == topic)
    return json.loads(message.payload), message


# -- body_sim ----------------------------------------------------------------------


def test_reports_in_order_with_spec_payloads(
    terminal_id: str,
    make_body: Callable[..., BodySim],
    recorders: Callable[[str], Recorder],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On connect: online -> skills -> intent_catalog -> heartbeat, with §3.2 QoS/retain."""
    published: list[tuple[str, int, bool]] = []
    original = Client.publish

    def spy(
        self: Client,
        topic: str,
        payload: Any = None,
        qos: int = 0,
        retain: bool = False,
        **kw: Any,
    ):
        published.append((topic, qos, retain))
        return original(self, topic, payload, qos, retain, **kw)

    monkeypatch.setattr(Client, "publish", spy)
    live = recorders(f"{PREFIX}/terminal/{terminal_id}/#")
    body = make_body().start()
    assert live.wait_for(lambda ms: names(ms, terminal_id).count("heartbeat") >= 2)
    assert names(live.messages, terminal_id)[:4] == REPORTS
    online, skills, catalog, heartbeat = live.messages[:4]
    assert online.payload == b"online"
    assert heartbeat.payload == b"1"

    # The spec's skills, but create_alarm states what it requires.
    spec_skills = copy.deepcopy(SPEC_SKILLS)
    spec_skills["skills"][1]["input_schema"] = ALARM_SCHEMA
    expected_skills = {
        **spec_skills,
        "terminal_id": terminal_id,
        "model": "Soul body-sim",
        "manufacturer": "Soul",
        "firmware": body_sim.FIRMWARE_VERSION,
    }
    assert json.loads(skills.payload) == expected_skills == default_skills(terminal_id)
    catalog_payload = json.loads(catalog.payload)
    assert catalog_payload == default_catalog(terminal_id)
    assert catalog_payload["terminal_id"] == terminal_id
    assert catalog_payload["catalog_version"] == 12
    assert [i["id"] for i in catalog_payload["intent_catalog"]] == [
        "intent_light_control",
        "intent_alarm_create",
        "intent_head_motion",
    ]
    assert len(catalog_payload["intent_catalog"][0]["match"]["keywords_any"]) == 16

    base = f"{PREFIX}/terminal/{terminal_id}/"
    modes = {
        topic.removeprefix(base): (qos, retain)
        for topic, qos, retain in published
        if topic.startswith(base)
    }
    assert modes == {
        "online": (1, True),
        "skills": (1, True),
        "intent_catalog": (1, True),
        "heartbeat": (0, False),
    }

    # A later subscriber gets the retained snapshots, but no heartbeat.
    late = recorders(f"{PREFIX}/terminal/{terminal_id}/#")
    assert late.wait_for(lambda ms: len(ms) >= 3)
    retained = {m.topic.removeprefix(base): m for m in late.messages if m.retain}
    assert set(retained) == {"online", "skills", "intent_catalog"}
    assert retained["online"].payload == b"online"
    assert json.loads(retained["skills"].payload) == expected_skills
    assert body.connections == 1


def test_invoke_results(
    terminal_id: str,
    make_body: Callable[..., BodySim],
    recorders: Callable[[str], Recorder],
) -> None:
    """Invokes run the skill and answer result/{rid}; bad calls fail with ``error``."""
    body = make_body().start()
    rec = recorders(f"{PREFIX}/terminal/{terminal_id}/result/+")

    rid = invoke(
        rec, terminal_id, "control_light", {"mode": "set_color", "color": "green"}
    )
    result, message = result_of(rec, terminal_id, rid)
    assert result == {"request_id": rid, "ok": True, "output": "control_light executed"}
    assert not message.retain
    assert body.light == {"on": True, "color": "green"}

    rid = invoke(
        rec, terminal_id, "control_light", {"mode": "set_color", "color": "blue"}
    )
    result, _ = result_of(rec, terminal_id, rid)
    assert result["request_id"] == rid
    assert result["ok"] is False
    assert "color" in result["error"]
    assert body.light == {"on": True, "color": "green"}

    rid = invoke(rec, terminal_id, "fly", {})
    result, _ = result_of(rec, terminal_id, rid)
    assert result["ok"] is False
    assert "unknown skill" in result["error"]

    rid = invoke(
        rec, terminal_id, "create_alarm", {"trigger_in_seconds": 30, "label": "茶"}
    )
    assert result_of(rec, terminal_id, rid)[0]["ok"] is True
    rid = invoke(rec, terminal_id, "set_head_motion", {"action": "点头"})
    assert result_of(rec, terminal_id, rid)[0]["ok"] is True
    assert body.alarms == [{"label": "茶", "trigger_in_seconds": 30}]
    assert body.head_motion == {"action": "点头", "duration_seconds": 1.0}
    assert [i["skill"] for i in body.invocations] == [
        "control_light",
        "control_light",
        "fly",
        "create_alarm",
        "set_head_motion",
    ]
    assert len(body.results) == 5


def test_failure_rate_latency_and_broken_results(
    terminal_id: str,
    make_body: Callable[..., BodySim],
    recorders: Callable[[str], Recorder],
) -> None:
    """failure_rate=1 fails every invoke after the latency; broken bodies misbehave."""
    body = make_body(failure_rate=1.0, latency=0.4).start()
    rec = recorders(f"{PREFIX}/terminal/+/result/+")
    sent = time.monotonic()
    rid = invoke(rec, terminal_id, "control_light", {"mode": "on"})
    result, _ = result_of(rec, terminal_id, rid)
    assert time.monotonic() - sent >= 0.3
    assert result == {
        "request_id": rid,
        "ok": False,
        "output": "control_light failed",
        "error": "simulated failure",
    }
    assert body.light["on"] is False
    body.stop(offline=False)

    other = f"{terminal_id}-b"
    make_body(terminal_id=other, result_without_error=True).start()
    rid = invoke(rec, other, "fly", {})
    result, _ = result_of(rec, other, rid)
    assert result["ok"] is False
    assert "error" not in result

    silent_id = f"{terminal_id}-c"
    silent = make_body(terminal_id=silent_id, answer=False).start()
    invoke(rec, silent_id, "control_light", {"mode": "on"})
    assert silent.wait_for(lambda b: len(b.invocations) == 1)
    assert not rec.wait_for(lambda ms: any(silent_id in m.topic for m in ms), 0.5)


def test_intent_action_status_and_emotion(
    terminal_id: str,
    make_body: Callable[..., BodySim],
    recorders: Callable[[str], Recorder],
) -> None:
    """intent_action runs intents[].normalized; status/emotion_update are kept."""
    body = make_body().start()
    rec = recorders(f"{PREFIX}/terminal/{terminal_id}/nothing")
    base = f"{PREFIX}/terminal/{terminal_id}"
    rec.publish(
        f"{base}/intent_action",
        {
            "request_id": "ia-1",
            "session_id": "s1",
            "terminal_id": terminal_id,
            "soul_id": "soul_xxx",
            "intents": [
                {
                    "intent_id": "intent_light_control",
                    "intent_name": "控制灯光",
                    "confidence": 0.92,
                    "normalized": {
                        "skill": "control_light",
                        "mode": "set_color",
                        "color": "green",
                    },
                },
                {
                    "intent_id": "intent_alarm_create",
                    "normalized": {
                        "skill": "create_alarm",
                        "trigger_in_seconds": "30",
                        "label": "闹钟",
                    },
                },
            ],
            "exec_probability": 0.88,
            "ts": "2026-02-22T10:20:31Z",
        },
    )
    assert body.wait_for(lambda b: len(b.executions) == 2)
    assert body.light == {"on": True, "color": "green"}
    assert body.alarms == [{"label": "闹钟", "trigger_in_seconds": 30.0}]

    # Raw slot values of the spec catalog (关灯, 摇头 + "2" seconds) work too.
    rec.publish(
        f"{base}/intent_action",
        {
            "request_id": "ia-2",
            "intents": [
                {"normalized": {"skill": "control_light", "mode": "关灯"}},
                {
                    "normalized": {
                        "skill": "set_head_motion",
                        "action": "摇头",
                        "duration_seconds": "2",
                    }
                },
            ],
        },
    )
    assert body.wait_for(lambda b: len(b.executions) == 4)
    assert all(e["ok"] and e["source"] == "intent_action" for e in body.executions)
    assert body.light["on"] is False
    assert body.head_motion == {"action": "摇头", "duration_seconds": 2.0}
    assert [a["request_id"] for a in body.intent_actions] == ["ia-1", "ia-2"]
    assert body.results == []  # intent_action has no result topic

    status = {"status": "mem0_searching", "message": "正在回顾", "session_id": "s1"}
    rec.publish(f"{base}/status", status)
    emotion = {
        "session_id": "s1",
        "terminal_id": terminal_id,
        "user_emotion": {
            "emotion": "joy",
            "p": 0.6,
            "a": 0.3,
            "d": 0.1,
            "intensity": 0.8,
        },
        "soul_emotion": {"p": 0.2, "a": 0.1, "d": 0.0},
        "exec_probability": 0.7,
        "exec_mode": "normal",
    }
    rec.publish(f"{base}/emotion_update", emotion)
    decay = {**emotion, "session_id": "system_decay_tick"}
    decay["user_emotion"] = {"emotion": "anger", "intensity": 1.0}
    rec.publish(f"{base}/emotion_update", decay)
    assert body.wait_for(lambda b: len(b.emotion_updates) == 2 and b.statuses)
    assert body.last_status == status
    assert body.last_emotion == decay
    assert body.expression == "微笑"  # the decay tick only refreshes the PAD state
    assert body.head_motion == {"action": "点头", "duration_seconds": 1.0}


def test_invoke_arguments_are_checked_with_jsonschema(
    terminal_id: str,
    make_body: Callable[..., BodySim],
    recorders: Callable[[str], Recorder],
) -> None:
    """Arguments that break the skill's schema get ok=false and jsonschema's reason."""
    skills = default_skills(terminal_id)
    skills["skills"].append(
        {
            "name": "say",
            "input_schema": {
                "type": "object",
                "properties": {
                    "text": {"type": "string", "maxLength": 5, "pattern": "^[a-z]+$"}
                },
                "required": ["text"],
                "additionalProperties": False,
            },
        }
    )
    body = make_body(skills=skills).start()
    rec = recorders(f"{PREFIX}/terminal/{terminal_id}/result/+")
    refused = [
        (
            "create_alarm",
            {"label": "起床"},
            "invalid arguments: 'trigger_at' is a required property or "
            "'trigger_in_seconds' is a required property",
        ),
        (
            "create_alarm",
            {"trigger_in_seconds": 0},
            "invalid trigger_in_seconds: 0 is less than the minimum of 1",
        ),
        ("say", {"text": "toolong"}, "invalid text: 'toolong' is too long"),
        ("say", {"text": "ABC"}, "invalid text: 'ABC' does not match '^[a-z]+$'"),
        (
            "say",
            {"text": "hi", "loud": True},
            "invalid arguments: Additional properties are not allowed "
            "('loud' was unexpected)",
        ),
        ("control_light", "on", "invalid arguments: 'on' is not of type 'object'"),
    ]
    for skill, arguments, error in refused:
        rid = invoke(rec, terminal_id, skill, arguments)
        assert result_of(rec, terminal_id, rid)[0] == {
            "request_id": rid,
            "ok": False,
            "output": f"{skill} failed",
            "error": error,
        }
    assert body.alarms == []
    for skill, arguments in [
        ("create_alarm", {"trigger_at": "2026-02-23T07:00:00+08:00"}),
        ("say", {"text": "hi"}),
    ]:
        rid = invoke(rec, terminal_id, skill, arguments)
        assert result_of(rec, terminal_id, rid)[0]["ok"] is True
    assert body.alarms == [{"label": "闹钟", "trigger_at": "2026-02-23T07:00:00+08:00"}]


def test_validate_arguments() -> None:
    """The body's own check: jsonschema, its draft, and a broken schema said so."""
    assert validate_arguments(ALARM_SCHEMA, {"trigger_in_seconds": 30}) is None
    assert validate_arguments(
        {"type": "object", "properties": {"n": {"type": "integr"}}}, {}
    ) == ("invalid input_schema: 'integr' is not valid under any of the given schemas")
    assert validate_arguments(["not", "a", "schema"], {}) == (
        "invalid input_schema: not a JSON object"
    )
    # A draft-07 schema is checked as draft-07 (items as a list is a tuple there).
    draft7 = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"pair": {"type": "array", "items": [{"type": "integer"}]}},
    }
    assert validate_arguments(draft7, {"pair": ["x"]}) == (
        "invalid pair/0: 'x' is not of type 'integer'"
    )


def test_validate_arguments_keeps_the_schemas_order() -> None:
    """Of equal errors the first in the schema's own order is said (checked once, cached)."""
    schema = {
        "type": "object",
        "properties": {"b": {"type": "integer"}, "a": {"type": "integer"}},
    }
    for _ in range(2):  # the second call uses the cached validator
        assert validate_arguments(schema, {"b": "x", "a": "y"}) == (
            "invalid b: 'x' is not of type 'integer'"
        )


def test_blocked_exec_mode_defers_intent_action(
    terminal_id: str,
    make_body: Callable[..., BodySim],
    recorders: Callable[[str], Recorder],
) -> None:
    """exec_mode blocked (§3.8): an intent_action runs nothing and shows 暂缓执行."""
    body = make_body().start()
    rec = recorders(f"{PREFIX}/terminal/{terminal_id}/result/+")
    base = f"{PREFIX}/terminal/{terminal_id}"

    def feel(mode: str) -> None:
        count = len(body.emotion_updates)
        rec.publish(
            f"{base}/emotion_update",
            {
                "session_id": "system_decay_tick",
                "terminal_id": terminal_id,
                "user_emotion": {"emotion": "neutral", "intensity": 0},
                "soul_emotion": {"p": -0.2, "a": 0.1, "d": 0.0},
                "exec_probability": 0.3 if mode == "blocked" else 0.9,
                "exec_mode": mode,
            },
        )
        assert body.wait_for(lambda b: len(b.emotion_updates) > count)

    def act(request_id: str, mode: str, **extra: Any) -> dict[str, Any]:
        payload = {
            "request_id": request_id,
            "intents": [{"normalized": {"skill": "control_light", "mode": mode}}],
            **extra,
        }
        rec.publish(f"{base}/intent_action", payload)
        assert body.wait_for(lambda b: payload in b.intent_actions)
        return payload

    feel("blocked")
    assert body.exec_mode == "blocked"
    blocked = act("ia-1", "on")
    assert body.deferred == [blocked]
    assert body.executions == []
    assert body.light["on"] is False
    assert body.notice == DEFERRED_NOTICE

    feel("auto_execute")  # the gate opens: the notice goes, actions run again
    assert body.notice is None
    act("ia-2", "on")
    assert body.wait_for(lambda b: len(b.executions) == 1)
    assert body.light["on"] is True

    # An exec_mode in the intent_action itself wins over the last emotion_update.
    own = act("ia-3", "off", exec_mode="blocked")
    assert body.deferred == [blocked, own]
    assert body.light["on"] is True
    assert len(body.executions) == 1

    # An invoke is not gated: it is Soul's or the user's explicit command.
    feel("blocked")
    rid = invoke(rec, terminal_id, "control_light", {"mode": "off"})
    assert result_of(rec, terminal_id, rid)[0]["ok"] is True
    assert body.light["on"] is False


def test_sim_skills_map_to_entities_that_work() -> None:
    """Soul keeps every sim skill; create_alarm needs an argument, so it is no button."""
    snapshot = parse_skills("terminal-001", default_skills())
    assert snapshot.rejected == ()
    assert {s.name: profile(s) for s in snapshot.skills} == {
        "control_light": Profile.LIGHT,
        "create_alarm": None,  # a press would send {}, which always fails
        "set_head_motion": Profile.SELECT,
    }
    alarm = snapshot.skill("create_alarm")
    assert alarm is not None
    assert alarm.argument_errors({}) != []
    assert alarm.argument_errors({"trigger_in_seconds": 30, "label": "茶"}) == []
    assert alarm.argument_errors({"trigger_at": "2026-02-23T07:00:00+08:00"}) == []
    assert validate_arguments(ALARM_SCHEMA, {}) is not None
    # The spec's create_alarm requires nothing, so Soul makes it a button.
    spec_alarm = parse_skills("terminal-001", SPEC_SKILLS).skill("create_alarm")
    assert spec_alarm is not None
    assert profile(spec_alarm) is Profile.BUTTON
    # Home Assistant's converter (the tool Assist's model sees) keeps the
    # arguments: each anyOf branch has them all (a bare {"required": [...]}
    # branch fails voluptuous_openapi, and Soul falls back to no arguments).
    seen = json.dumps(schema_to_json(schema_from_json(ALARM_SCHEMA)))
    assert all(name in seen for name in ("trigger_at", "trigger_in_seconds", "label"))


def test_kill_sends_will_and_reconnects_reannounce(
    terminal_id: str,
    make_body: Callable[..., BodySim],
    recorders: Callable[[str], Recorder],
) -> None:
    """kill() leaves a retained offline via LWT; every reconnect reports again, in order."""
    live = recorders(f"{PREFIX}/terminal/{terminal_id}/#")
    body = make_body(heartbeat=0)
    body.start()
    assert live.wait_for(lambda ms: len(ms) >= 4)

    body.kill()
    assert live.wait_for(lambda ms: ms[-1].payload == b"offline")
    after_kill = recorders(f"{PREFIX}/terminal/{terminal_id}/online")
    assert after_kill.wait_for(bool)
    assert after_kill.messages[0].payload == b"offline"
    assert after_kill.messages[0].retain

    mark = len(live.messages)
    body.start()
    assert live.wait_for(lambda ms: len(ms) >= mark + 4)
    assert names(live.messages[mark:], terminal_id) == REPORTS

    # A dropped connection: the broker sends the will, paho reconnects by itself.
    mark = len(live.messages)
    body.reconnect()
    assert live.wait_for(lambda ms: len(ms) >= mark + 5)
    assert live.messages[mark].payload == b"offline"
    assert names(live.messages[mark + 1 :], terminal_id) == REPORTS
    assert body.connections == 3

    body.stop()  # a clean stop announces offline itself
    assert live.wait_for(lambda ms: ms[-1].payload == b"offline")


# -- body_check -------------------------------------------------------------------


def test_check_passes_a_good_body(
    mqtt_broker: MqttBroker,
    terminal_id: str,
    make_body: Callable[..., BodySim],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Against body-sim nothing fails; with --wait-reconnect the order is checked."""
    body = make_body().start()
    results = run_checks(
        mqtt_broker.host,
        mqtt_broker.port,
        PREFIX,
        terminal_id,
        timeout=5,
        wait_reconnect=True,
        on_waiting=lambda: body.reconnect(wait=False),
    )
    checks = [r.name for r in results if r.name in body_check.CHECKS]
    assert checks == list(body_check.CHECKS)
    assert by_status(results, "fail") == set(), body_check.format_table(results)
    assert by_status(results, "skip") == {"intent_action", "emotion_update"}
    # A row per skill after skills_valid, a row per intent after intent_catalog_valid.
    names = [r.name for r in results]
    at = names.index("skills_valid")
    assert names[at + 1 : at + 4] == [
        "skill:control_light",
        "skill:create_alarm",
        "skill:set_head_motion",
    ]
    at = names.index("intent_catalog_valid")
    assert names[at + 1 : at + 4] == [
        "intent:intent_light_control",
        "intent:intent_alarm_create",
        "intent:intent_head_motion",
    ]
    details = {r.name: r.detail for r in results}
    assert details["skill:control_light"] == "accepted; Home Assistant: a light"
    assert details["skill:create_alarm"].startswith(
        "accepted; Home Assistant: no entity"
    )
    assert details["skill:set_head_motion"] == "accepted; Home Assistant: a select"
    assert details["intent:intent_head_motion"] == "accepted"

    exit_code = body_check.main(
        [
            "--host",
            mqtt_broker.host,
            "--port",
            str(mqtt_broker.port),
            "--terminal-id",
            terminal_id,
            "--timeout",
            "3",
        ]
    )
    output = capsys.readouterr().out
    assert exit_code == 0
    assert "0 failed" in output
    assert "report_order" in output
    assert "SKIP" in output


@pytest.mark.parametrize(
    ("options", "wait_reconnect", "failing"),
    [
        (  # Soul drops both snapshots, so nothing is invoked either
            {"wrong_terminal_id": True},
            False,
            {
                "skills_terminal_id",
                "skills_valid",
                "intent_catalog_terminal_id",
                "intent_catalog_valid",
            },
        ),
        ({"result_without_error": True}, False, {"invoke_unknown_skill"}),
        ({"answer": False}, False, {"invoke_result", "invoke_unknown_skill"}),
        ({"reannounce_on_reconnect": False}, True, {"report_order", "reannounce"}),
        (
            {"order": ("skills", "online", "intent_catalog", "heartbeat")},
            True,
            {"report_order"},
        ),
        (
            {"order": ("online", "skills", "intent_catalog")},
            False,
            {"heartbeat"},
        ),
    ],
    ids=[
        "wrong-terminal-id",
        "result-without-error",
        "no-answer",
        "no-reannounce",
        "wrong-order",
        "no-heartbeat",
    ],
)
def test_check_catches_broken_bodies(
    mqtt_broker: MqttBroker,
    terminal_id: str,
    make_body: Callable[..., BodySim],
    *,
    options: dict[str, Any],
    wait_reconnect: bool,
    failing: set[str],
) -> None:
    """Each deliberate breakage fails exactly the checks that cover it."""
    body = make_body(**options).start()
    results = run_checks(
        mqtt_broker.host,
        mqtt_broker.port,
        PREFIX,
        terminal_id,
        timeout=1.5 if "heartbeat" in failing else 5,
        wait_reconnect=wait_reconnect,
        invoke_timeout=1.0,
        on_waiting=lambda: body.reconnect(wait=False),
    )
    assert by_status(results, "fail") == failing, body_check.format_table(results)


def soul_says(
    caplog: pytest.LogCaptureFixture, kind: Kind, terminal_id: str, payload: Any
) -> list[str]:
    """Return the warnings Soul's own registry logs for one message of a body."""
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="custom_components.soul"):
        TerminalRegistry().handle_message(
            kind, terminal_id, json.dumps(payload, ensure_ascii=False)
        )
    return [
        r.getMessage()
        for r in caplog.records
        if r.name.startswith("custom_components.soul") and r.levelno >= logging.WARNING
    ]


def failures(results: list[CheckResult]) -> list[tuple[str, str]]:
    """Return (name, detail) of the failing rows."""
    return [(r.name, r.detail) for r in results if r.status == "fail"]


def test_check_invalid_snapshots(
    mqtt_broker: MqttBroker,
    terminal_id: str,
    make_body: Callable[..., BodySim],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Skills Soul leaves out, a catalog it drops and versions 0 fail with Soul's words."""
    skills = {
        "terminal_id": terminal_id,
        "skill_version": 0,
        "skills": [
            {"name": "beep", "input_schema": {"type": "object"}},
            {"name": "beep", "input_schema": {"type": "object"}},
            {"name": "hum", "input_schema": {"type": "string"}},
        ],
    }
    catalog = {"terminal_id": terminal_id, "intent_catalog": {}}
    make_body(skills=skills, catalog=catalog).start()
    results = run_checks(
        mqtt_broker.host, mqtt_broker.port, PREFIX, terminal_id, timeout=3
    )
    duplicate, not_object = soul_says(caplog, Kind.SKILLS, terminal_id, skills)
    assert "duplicate skill name beep" in duplicate
    assert "input_schema must describe an object" in not_object
    [dropped] = soul_says(caplog, Kind.INTENT_CATALOG, terminal_id, catalog)
    assert failures(results) == [
        ("skills_valid", "Soul leaves out 2 of 3 skills: beep, hum"),
        ("skill:beep", duplicate),
        ("skill:hum", not_object),
        ("skill_version", "must be > 0 (got 0)"),
        ("intent_catalog_valid", dropped),
        ("catalog_version", "must be > 0 (got None)"),
    ]
    assert dropped == (
        f"Dropped intent_catalog of terminal {terminal_id}: "
        "intent_catalog payload has no intent_catalog array"
    )
    # The first beep is kept, and it is what gets invoked.
    assert ("skill:beep", "pass") in [(r.name, r.status) for r in results]
    invoked = next(r for r in results if r.name == "invoke_result")
    assert invoked.detail.startswith("beep {}: ok=true")


def _with_skill(terminal_id: str, skill: dict[str, Any]) -> dict[str, Any]:
    payload = default_skills(terminal_id)
    payload["skills"].append(skill)
    return payload


def _with_intent(terminal_id: str, intent: dict[str, Any]) -> dict[str, Any]:
    payload = default_catalog(terminal_id)
    payload["intent_catalog"].append(intent)
    return payload


def _too_many_skills(terminal_id: str) -> dict[str, Any]:
    payload = default_skills(terminal_id)
    payload["skills"] = [
        {"name": f"beep_{index}", "input_schema": {"type": "object"}}
        for index in range(65)
    ]
    return payload


BAD_SKILLS: dict[str, Callable[[str], dict[str, Any]]] = {
    "camel-case-skill-name": lambda tid: _with_skill(
        tid, {"name": "setColor", "input_schema": {"type": "object"}}
    ),
    "invalid-json-schema": lambda tid: _with_skill(
        tid,
        {
            "name": "beep",
            "input_schema": {
                "type": "object",
                "properties": {"times": {"type": "integr"}},
            },
        },
    ),
    "schema-pattern-does-not-compile": lambda tid: _with_skill(
        tid,
        {
            "name": "say",
            "input_schema": {
                "type": "object",
                "properties": {"text": {"type": "string", "pattern": "(unclosed"}},
            },
        },
    ),
}
BAD_CATALOGS: dict[str, Callable[[str], dict[str, Any]]] = {
    "unknown-match-key": lambda tid: _with_intent(
        tid, {"id": "intent_beep", "match": {"keyword_any": ["beep"]}}
    ),
    "slot-regex-does-not-compile": lambda tid: _with_intent(
        tid,
        {
            "id": "intent_beep",
            "match": {"keywords_any": ["beep"]},
            "slots": [{"name": "times", "regex": "([0-9]+"}],
        },
    ),
    "match-regex-does-not-compile": lambda tid: _with_intent(
        tid, {"id": "intent_beep", "match": {"regex_any": ["beep[0-"]}}
    ),
}


@pytest.mark.parametrize(
    ("name", "row"),
    [
        ("camel-case-skill-name", "skill:setColor"),
        ("invalid-json-schema", "skill:beep"),
        ("schema-pattern-does-not-compile", "skill:say"),
        ("too-many-skills", None),
        ("unknown-match-key", "intent:intent_beep"),
        ("slot-regex-does-not-compile", "intent:intent_beep"),
        ("match-regex-does-not-compile", "intent:intent_beep"),
    ],
)
def test_check_judges_like_soul(
    mqtt_broker: MqttBroker,
    terminal_id: str,
    make_body: Callable[..., BodySim],
    caplog: pytest.LogCaptureFixture,
    *,
    name: str,
    row: str | None,
) -> None:
    """What Soul drops fails, in the words Soul logs, and nothing else does."""
    skills = (
        _too_many_skills(terminal_id)
        if name == "too-many-skills"
        else BAD_SKILLS.get(name, default_skills)(terminal_id)
    )
    catalog = BAD_CATALOGS.get(name, default_catalog)(terminal_id)
    make_body(skills=skills, catalog=catalog).start()
    results = run_checks(
        mqtt_broker.host,
        mqtt_broker.port,
        PREFIX,
        terminal_id,
        timeout=3,
        invoke=False,
    )
    if name in BAD_CATALOGS:
        assert soul_says(caplog, Kind.SKILLS, terminal_id, skills) == []
        [line] = soul_says(caplog, Kind.INTENT_CATALOG, terminal_id, catalog)
        [(_, reason)] = [f for f in failures(results) if f[0] == row]
        assert failures(results) == [("intent_catalog_valid", line), (row, reason)]
        # The intent alone gets the same words: it is the catalog's only problem.
        assert line == f"Dropped intent_catalog of terminal {terminal_id}: {reason}"
        others = {r.detail for r in results if r.name.startswith("intent:")} - {reason}
        assert others == {"valid alone; dropped with the catalog"}
    else:
        assert soul_says(caplog, Kind.INTENT_CATALOG, terminal_id, catalog) == []
        [line] = soul_says(caplog, Kind.SKILLS, terminal_id, skills)
        if row is None:  # the whole snapshot is refused
            assert failures(results) == [("skills_valid", line)]
            assert line.startswith(f"Dropped skills of terminal {terminal_id}: ")
        else:
            assert failures(results) == [
                ("skills_valid", f"Soul leaves out 1 of 4 skills: {row[6:]}"),
                (row, line),
            ]
            assert line.startswith(
                f"Terminal {terminal_id}: skill {row[6:]} rejected: "
            )


def test_check_judges_what_a_reconnect_reports(
    mqtt_broker: MqttBroker,
    terminal_id: str,
    make_body: Callable[..., BodySim],
) -> None:
    """Re-published snapshots are judged by Soul too: a lower skill_version is ignored."""
    body = make_body()
    body.start()

    def roll_back() -> None:
        body.skills["skill_version"] = 2
        body.reconnect(wait=False)

    results = run_checks(
        mqtt_broker.host,
        mqtt_broker.port,
        PREFIX,
        terminal_id,
        timeout=5,
        wait_reconnect=True,
        invoke=False,
        on_waiting=roll_back,
    )
    assert failures(results) == [
        (
            "reannounce",
            f"re-published, but Dropped skills of terminal {terminal_id}: "
            "skill_version 2 would replace 3; ignored",
        ),
        ("skill_version_monotonic", "skill_version went back from 3 to 2"),
    ]


def test_check_without_terminal_or_broker(
    mqtt_broker: MqttBroker, terminal_id: str
) -> None:
    """Nothing retained and nobody answering fails; an unreachable broker fails fast."""
    results = run_checks(
        mqtt_broker.host,
        mqtt_broker.port,
        PREFIX,
        terminal_id,
        timeout=0.5,
        invoke_timeout=0.5,
    )
    assert by_status(results, "fail") == {  # the details say why, should this fail
        "online_retained",
        "skills_retained",
        "intent_catalog_retained",
        "heartbeat",
        "invoke_unknown_skill",
    }, [(r.name, r.status, r.detail) for r in results]
    assert "skills_terminal_id" in by_status(results, "skip")
    assert "invoke_result" in by_status(results, "skip")

    results = run_checks("127.0.0.1", free_port(), PREFIX, terminal_id, timeout=1)
    assert [(r.name, r.status) for r in results] == [("broker", "fail")]


def test_example_arguments_and_choice() -> None:
    """Invoke arguments come from the schema: enum first, number minimum or 1."""
    schema = {
        "type": "object",
        "properties": {
            "mode": {"type": "string", "enum": ["on", "off"]},
            "level": {"type": "integer", "minimum": 2.5},
            "speed": {"type": "number", "maximum": 0.5},
            "name": {"type": "string"},
            "fast": {"type": "boolean"},
            "optional": {"type": "string"},
        },
        "required": ["mode", "level", "speed", "name", "fast"],
    }
    assert body_check.example_arguments(schema) == {
        "mode": "on",
        "level": 3,
        "speed": 0.5,
        "name": "test",
        "fast": True,
    }
    skills = default_skills()["skills"]
    assert body_check.choose_invoke(skills) == ("control_light", {"mode": "on"})
    no_args = {"name": "beep", "input_schema": {"type": "object", "properties": {}}}
    assert body_check.choose_invoke([*skills, no_args]) == ("beep", {})
    assert body_check.choose_invoke([]) is None


def test_command_lines() -> None:
    """Both tools have the documented flags."""
    sim = body_sim.build_parser().parse_args(
        ["--latency", "0.5", "--failure-rate", "0.2", "--no-answer", "--seed", "7"]
    )
    assert (sim.host, sim.port, sim.prefix, sim.terminal_id) == (
        "127.0.0.1",
        1883,
        "soul",
        "terminal-001",
    )
    assert (sim.latency, sim.failure_rate, sim.no_answer, sim.heartbeat, sim.seed) == (
        0.5,
        0.2,
        True,
        10.0,
        7,
    )
    check = body_check.build_parser().parse_args(["--wait-reconnect", "--timeout", "9"])
    assert (check.timeout, check.wait_reconnect, check.terminal_id) == (
        9.0,
        True,
        "terminal-001",
    )
    with pytest.raises(ValueError, match="unknown reports"):
        BodySim(order=("online", "hello"))


@pytest.mark.parametrize(
    ("command", "trigger_at"),
    [
        ("10分钟后叫我", "2026-11-23T10:10:00+08:00"),
        ("明天早上8点叫我", "2026-11-24T08:00:00+08:00"),
        ("set an alarm in 5 minutes", "2026-11-23T10:05:00+08:00"),
        ("设置一个闹钟", None),  # no time: the filter asks for one
    ],
)
def test_sim_catalog_alarms_fit_the_sim_schema(
    command: str, trigger_at: str | None
) -> None:
    """An alarm the catalog reads is one create_alarm accepts, or a question."""
    response = filter_intents(
        {
            "command": command,
            "intent_catalog": default_catalog()["intent_catalog"],
            "now": "2026-11-23T10:00:00",
        },
        default_timezone="Asia/Shanghai",
    )
    (intent,) = response["intents"]
    arguments = {k: v for k, v in intent["normalized"].items() if k != "skill"}
    if trigger_at is None:
        assert intent["status"] == "need_clarification"
        assert intent["missing_parameters"] == ["trigger_at"]
        assert validate_arguments(ALARM_SCHEMA, arguments) is not None
    else:
        assert intent["status"] == "ready"
        assert arguments["trigger_at"] == trigger_at
        assert validate_arguments(ALARM_SCHEMA, arguments) is None
