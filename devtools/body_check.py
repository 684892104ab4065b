"""Check a Soul terminal ("Body") on an MQTT broker against the Soul-Body protocol v2.

It covers what the broker lets one observe of the §6 checklist and the §7.4
criteria: the retained ``online``, ``skills`` and ``intent_catalog`` snapshots
(present, kept by Soul, ``terminal_id`` equal to the topic's, ``skill_version``
and ``catalog_version`` > 0 and not going back), a heartbeat within
``--timeout``, a real ``invoke`` (of a skill Soul keeps)
answered by a well-formed ``result`` within 5 s (plus one for a skill that does
not exist, which must fail with ``error``), and, with ``--wait-reconnect``, the
report order ``online -> skills -> intent_catalog -> heartbeat`` on the terminal's
next (re)connect. The order cannot be read from retained messages, so without
``--wait-reconnect`` those checks are skipped.

The snapshots are judged by Soul itself: every message seen is fed, in order, to
Soul's own terminal registry (``core.registry``: its parsers, schema checks and
intent-catalog compiler), and what it logs is reported word for word. A skill
Soul leaves out gets a failing ``skill:NAME`` row with Soul's log line, a
catalog Soul drops fails ``intent_catalog_valid`` with Soul's log line, and each
intent gets an ``intent:ID`` row saying what the compiler makes of it alone
(Soul names only a catalog's first problem). Accepted skills say which Home
Assistant entity they become.

``python -m devtools.body_check --terminal-id terminal-001`` (or
``scripts/body-check``) prints a pass/fail/skip table and exits with 1 when a check
failed. Note that the invoke check really runs a skill on the terminal
(``--no-invoke`` skips it; ``--skill``/``--arguments`` choose it).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
import contextlib
from dataclasses import dataclass
import itertools
import json
import logging
import math
import sys
import threading
import time
from typing import Any
import uuid

from paho.mqtt.client import (
    CallbackAPIVersion,
    Client,
    ConnectFlags,
    MQTTMessage,
    MQTTProtocolVersion,
)
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

from custom_components.soul.core.protocol import IntentCatalogSnapshot, SkillsSnapshot
from custom_components.soul.core.registry import TerminalRegistry
from custom_components.soul.core.skill_profiles import Profile, profile
from custom_components.soul.core.terminal import Prepared
from custom_components.soul.core.topics import Kind
from devtools.broker import add_broker_arguments

REPORTS = ("online", "skills", "intent_catalog", "heartbeat")
# Reaching the broker is not what --timeout bounds (heartbeats, reconnects).
CONNECT_TIMEOUT = 10.0
INVOKE_TIMEOUT = 5.0
RETAINED_WAIT = 2.0
RECONNECT_GRACE = 2.0
UNKNOWN_SKILL = "body_check_unknown_skill"
ONLINE_VALUES = ("online", "true", "1")
OFFLINE_VALUES = ("offline", "false", "0")

CHECKS = (
    "broker",
    "online_retained",
    "skills_retained",
    "skills_terminal_id",
    "skills_valid",
    "skill_version",
    "intent_catalog_retained",
    "intent_catalog_terminal_id",
    "intent_catalog_valid",
    "catalog_version",
    "heartbeat",
    "report_order",
    "reannounce",
    "lwt_offline",
    "skill_version_monotonic",
    "invoke_result",
    "invoke_unknown_skill",
    "intent_action",
    "emotion_update",
)
"""Every check, in the order they are reported."""

ITEM_ROWS = {"skill:": "skills_valid", "intent:": "intent_catalog_valid"}
"""Rows per skill and per intent (``skill:NAME``), reported after these checks."""

SOUL_LOGGER = "custom_components.soul"
_ENTITIES = {
    Profile.LIGHT: "a light",
    Profile.BUTTON: "a button (a press sends {})",
    Profile.SELECT: "a select",
    None: "no entity (the soul.invoke_skill action and the device action)",
}


@dataclass
class CheckResult:
    """The outcome of one check: ``status`` is ``pass``, ``fail`` or ``skip``."""

    name: str
    status: str
    detail: str = ""


@dataclass
class Observed:
    """A message seen on one of the terminal's topics."""

    kind: str
    topic: str
    payload: bytes
    retain: bool
    live: bool
    at: float

    @property
    def text(self) -> str:
        """Return the payload as text."""
        return self.payload.decode(errors="replace")

    def json(self) -> Any:
        """Return the decoded JSON payload, or None when it is not JSON."""
        try:
            return json.loads(self.payload)
        except ValueError:
            return None


def _pass(name: str, detail: str = "") -> CheckResult:
    return CheckResult(name, "pass", detail)


def _fail(name: str, detail: str) -> CheckResult:
    return CheckResult(name, "fail", detail)


def _skip(name: str, detail: str) -> CheckResult:
    return CheckResult(name, "skip", detail)


class _Observer:
    """A paho client that records everything on the terminal's topics."""

    def __init__(
        self,
        host: str,
        port: int,
        base: str,
        username: str | None,
        password: str | None,
    ) -> None:
        self.host = host
        self.port = port
        self.base = base
        self.messages: list[Observed] = []
        self.retained_phase = True
        self._changed = threading.Condition()
        self._connect_result: ReasonCode | None = None
        # SUBACKs seen, by message id: paho may deliver one (on its thread)
        # before subscribe() has even returned the id to wait for.
        self._acked: set[int] = set()
        self._client = Client(
            CallbackAPIVersion.VERSION2,
            client_id=f"soul-body-check-{uuid.uuid4().hex[:8]}",
            protocol=MQTTProtocolVersion.MQTTv311,
            clean_session=True,
            reconnect_on_failure=False,
        )
        if username is not None:
            self._client.username_pw_set(username, password)
        self._client.on_connect = self._on_connect
        self._client.on_subscribe = self._on_subscribe
        self._client.on_message = self._on_message
        self._started = False

    def connect(self, timeout: float) -> None:
        """Connect and subscribe to the terminal's report and result topics."""
        self._client.connect(self.host, self.port, keepalive=30)
        self._client.loop_start()
        self._started = True
        if not self.wait(lambda: self._connect_result is not None, timeout):
            raise TimeoutError("no CONNACK")
        if self._connect_result is None or self._connect_result.is_failure:
            raise ConnectionError(f"broker refused: {self._connect_result}")
        topics = [f"{self.base}/{name}" for name in (*REPORTS, "result/+")]
        _rc, mid = self._client.subscribe([(topic, 1) for topic in topics])
        if not self.wait(lambda: mid in self._acked, timeout):
            raise TimeoutError("no SUBACK")

    def close(self) -> None:
        """Disconnect and stop paho's thread."""
        if self._started:
            self._client.disconnect()
            self._client.loop_stop()
            self._started = False

    def wait(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for ``predicate`` (checked on each message)."""
        with self._changed:
            return self._changed.wait_for(predicate, max(0.0, timeout))

    def end_retained_phase(self) -> None:
        """Treat every later message as live, whatever its retain flag says."""
        with self._changed:
            self.retained_phase = False

    def snapshot(self) -> list[Observed]:
        """Return the messages seen so far."""
        with self._changed:
            return list(self.messages)

    def publish(self, name: str, payload: dict[str, Any]) -> None:
        """Publish JSON to ``{base}/{name}`` with QoS 1, not retained."""
        self._client.publish(f"{self.base}/{name}", json.dumps(payload), qos=1)

    def _on_connect(
        self,
        client: Client,
        userdata: Any,
        flags: ConnectFlags,
        reason_code: ReasonCode,
        properties: Properties | None,
    ) -> None:
        with self._changed:
            self._connect_result = reason_code
            self._changed.notify_all()

    def _on_subscribe(
        self,
        client: Client,
        userdata: Any,
        mid: int,
        reason_codes: list[ReasonCode],
        properties: Properties | None,
    ) -> None:
        with self._changed:
            self._acked.add(mid)
            self._changed.notify_all()

    def _on_message(self, client: Client, userdata: Any, message: MQTTMessage) -> None:
        # Brokers may send retained messages of other topics (amqtt does); skip them.
        if not message.topic.startswith(self.base + "/"):
            return
        kind = message.topic.removeprefix(self.base + "/")
        if kind.startswith("result/"):
            kind = "result"
        elif kind not in REPORTS:
            return
        with self._changed:
            live = not message.retain or not self.retained_phase
            self.messages.append(
                Observed(
                    kind,
                    message.topic,
                    bytes(message.payload),
                    bool(message.retain),
                    live,
                    time.monotonic(),
                )
            )
            self._changed.notify_all()


# -- schema-derived arguments ------------------------------------------------------


def example_value(prop: dict[str, Any]) -> Any:
    """Return a valid example for a property: enum -> first, number -> minimum or 1."""
    if isinstance(prop.get("enum"), list) and prop["enum"]:
        return prop["enum"][0]
    kind = prop.get("type")
    if isinstance(kind, list):
        kind = next((item for item in kind if item != "null"), None)
    if kind in ("number", "integer"):
        value = prop.get("minimum", 1)
        if "maximum" in prop and value > prop["maximum"]:
            value = prop["maximum"]
        return math.ceil(value) if kind == "integer" else value
    if kind == "boolean":
        return True
    if kind == "object":
        return example_arguments(prop)
    if kind == "array":
        return []
    return "test"


def example_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """Return example values for the required properties of an object schema."""
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    required = schema.get("required")
    return {
        name: example_value(properties.get(name) or {})
        for name in (required if isinstance(required, list) else [])
        if isinstance(name, str)
    }


def skill_list(payload: Any) -> list[dict[str, Any]]:
    """Return the skills of a snapshot (object form or the compatible array form)."""
    skills = payload.get("skills") if isinstance(payload, dict) else payload
    if not isinstance(skills, list):
        return []
    return [skill for skill in skills if isinstance(skill, dict)]


def choose_invoke(skills: list[dict[str, Any]]) -> tuple[str, dict[str, Any]] | None:
    """Pick the skill to invoke: one without arguments, else the first one.

    The first skill gets example values for its required properties.
    """
    named = [s for s in skills if isinstance(s.get("name"), str) and s["name"]]
    for skill in named:
        schema = skill.get("input_schema")
        schema = schema if isinstance(schema, dict) else {}
        if not schema.get("properties") and not schema.get("required"):
            return skill["name"], {}
    if not named:
        return None
    schema = named[0].get("input_schema")
    return named[0]["name"], example_arguments(
        schema if isinstance(schema, dict) else {}
    )


# -- Soul's verdict ------------------------------------------------------------------


class _SoulLog(logging.Handler):
    """Collect the warnings Soul logs in the thread that made it."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []
        self._thread = threading.get_ident()

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread == self._thread:
            self.lines.append(record.getMessage())


@contextlib.contextmanager
def soul_log() -> Iterator[list[str]]:
    """Return, once the block ends, the warnings Soul logged in it (this thread)."""
    handler = _SoulLog()
    logger = logging.getLogger(SOUL_LOGGER)
    level = logger.level
    if not logger.isEnabledFor(logging.WARNING):
        logger.setLevel(logging.WARNING)
    logger.addHandler(handler)
    try:
        yield handler.lines
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


class SoulJudge:
    """Soul's own terminal registry, fed every message the checker sees, in order.

    What Soul logs about each message is what Soul would log, had it been
    subscribed instead: the same parsers, schema checks, catalog compiler and
    version rules (``core.registry.TerminalRegistry``), not a copy of them.
    """

    def __init__(self, terminal_id: str) -> None:
        """Judge the messages of ``terminal_id``."""
        self.terminal_id = terminal_id
        self._registry = TerminalRegistry()
        self._lines: list[list[str]] = []

    def lines(self, messages: list[Observed]) -> list[list[str]]:
        """Return Soul's log lines for each message (feeding the new ones first).

        ``messages`` must extend the list of the previous call (the observer's
        messages grow at the end).
        """
        for message in messages[len(self._lines) :]:
            if message.kind not in REPORTS:
                self._lines.append([])  # results are the invoker's business
                continue
            with soul_log() as logged:
                self._registry.handle_message(
                    Kind(message.kind), self.terminal_id, message.payload
                )
            self._lines.append(logged)
        return self._lines

    def lines_of(self, messages: list[Observed], message: Observed) -> list[str]:
        """Return Soul's log lines for ``message``, one of ``messages``."""
        lines = self.lines(messages)
        return next(
            (lines[index] for index, seen in enumerate(messages) if seen is message),
            [],
        )


def soul_skills(terminal_id: str, payload: bytes) -> SkillsSnapshot | None:
    """Return the skills Soul keeps of a ``skills`` payload, or None if it drops it."""
    prepared = TerminalRegistry.prepare(Kind.SKILLS, terminal_id, payload)
    snapshot = prepared.snapshot
    return snapshot if isinstance(snapshot, SkillsSnapshot) else None


def _skill_rows(snapshot: SkillsSnapshot, lines: list[str]) -> list[CheckResult]:
    """Return a row per skill: kept (and its entity) or left out (Soul's line)."""
    rows = [
        _pass(
            f"skill:{skill.name}",
            f"accepted; Home Assistant: {_ENTITIES[profile(skill)]}",
        )
        for skill in snapshot.skills
    ]
    unused = list(lines)
    for label, reason in snapshot.rejected:
        line = next((line for line in unused if line.endswith(f": {reason}")), reason)
        if line in unused:
            unused.remove(line)
        rows.append(_fail(f"skill:{label}", line))
    return rows


def _intent_rows(
    terminal_id: str, payload: Any, catalog_dropped: bool
) -> list[CheckResult]:
    """Return a row per catalog entry: what Soul's compiler says of it alone."""
    entries = payload.get("intent_catalog") if isinstance(payload, dict) else payload
    if not isinstance(entries, list):
        return []
    rows = []
    for index, entry in enumerate(entries):
        intent_id = entry.get("id") if isinstance(entry, dict) else None
        name = f"intent:{intent_id if isinstance(intent_id, str) else f'#{index}'}"
        alone: Prepared = TerminalRegistry.prepare(
            Kind.INTENT_CATALOG,
            terminal_id,
            json.dumps({"intent_catalog": [entry]}, ensure_ascii=False),
        )
        if alone.error is not None:
            rows.append(_fail(name, alone.error))
        elif catalog_dropped:
            rows.append(_pass(name, "valid alone; dropped with the catalog"))
        else:
            rows.append(_pass(name, "accepted"))
    return rows


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _last_retained(messages: list[Observed], kind: str) -> Observed | None:
    retained = [m for m in messages if m.kind == kind and not m.live]
    return retained[-1] if retained else None


def _check_online(message: Observed | None) -> CheckResult:
    name = "online_retained"
    if message is None:
        return _fail(name, "no retained 'online' (publish it retained; set the LWT)")
    value = message.text.strip().lower()
    if value in ONLINE_VALUES:
        return _pass(name, f"retained {message.text!r}")
    if value in OFFLINE_VALUES:
        return _fail(name, f"retained {message.text!r}: the terminal is offline")
    return _fail(name, f"unexpected payload {message.text!r}")


def _check_terminal_id(name: str, payload: Any, terminal_id: str) -> CheckResult:
    if not isinstance(payload, dict):
        return _fail(name, "payload is not a JSON object")
    found = payload.get("terminal_id")
    if found is None:
        return _fail(name, f"terminal_id missing (must be {terminal_id!r})")
    if found != terminal_id:
        return _fail(name, f"terminal_id {found!r} differs from the topic's")
    return _pass(name, repr(found))


def _check_skills(
    message: Observed | None, terminal_id: str, lines: list[str]
) -> list[CheckResult]:
    """Check the retained ``skills``; ``lines`` are what Soul logged about it."""
    if message is None:
        reason = "no skills snapshot"
        return [
            _fail("skills_retained", "no retained 'skills'"),
            _skip("skills_terminal_id", reason),
            _skip("skills_valid", reason),
            _skip("skill_version", reason),
        ]
    payload = message.json()
    results = [
        _pass("skills_retained", f"{len(message.payload)} bytes"),
        _check_terminal_id("skills_terminal_id", payload, terminal_id)
        if payload is not None
        else _fail("skills_terminal_id", "payload is not JSON"),
    ]
    snapshot = soul_skills(terminal_id, message.payload)
    rows = _skill_rows(snapshot, lines) if snapshot is not None else []
    rejected = [row for row in rows if row.status == "fail"]
    dropped = [line for line in lines if all(line != row.detail for row in rows)]
    if snapshot is None or dropped:
        results.append(_fail("skills_valid", "; ".join(dropped) or "dropped by Soul"))
    elif rejected:
        names = ", ".join(row.name.removeprefix("skill:") for row in rejected)
        results.append(
            _fail(
                "skills_valid",
                f"Soul leaves out {len(rejected)} of {len(rows)} skills: {names}",
            )
        )
    else:
        names = ", ".join(skill.name for skill in snapshot.skills)
        results.append(_pass("skills_valid", f"Soul keeps {len(rows)} skills: {names}"))
    results.extend(rows)
    if isinstance(payload, list):
        results.append(
            _fail(
                "skill_version",
                "the array form carries none (compatibility only); publish an object",
            )
        )
        return results
    version = payload.get("skill_version") if isinstance(payload, dict) else None
    if _positive_int(version):
        results.append(_pass("skill_version", str(version)))
    else:
        results.append(_fail("skill_version", f"must be > 0 (got {version!r})"))
    return results


def _check_catalog(
    message: Observed | None, terminal_id: str, lines: list[str]
) -> list[CheckResult]:
    """Check the retained ``intent_catalog``; ``lines`` are what Soul logged about it."""
    if message is None:
        reason = "no intent_catalog snapshot"
        return [
            _fail("intent_catalog_retained", "no retained 'intent_catalog'"),
            _skip("intent_catalog_terminal_id", reason),
            _skip("intent_catalog_valid", reason),
            _skip("catalog_version", reason),
        ]
    payload = message.json()
    results = [_pass("intent_catalog_retained", f"{len(message.payload)} bytes")]
    results.append(
        _check_terminal_id("intent_catalog_terminal_id", payload, terminal_id)
        if payload is not None
        else _fail("intent_catalog_terminal_id", "payload is not JSON")
    )
    prepared = TerminalRegistry.prepare(
        Kind.INTENT_CATALOG, terminal_id, message.payload
    )
    snapshot = prepared.snapshot
    if lines or not isinstance(snapshot, IntentCatalogSnapshot):
        results.append(
            _fail(
                "intent_catalog_valid",
                "; ".join(lines) or prepared.error or "dropped by Soul",
            )
        )
    else:
        results.append(
            _pass(
                "intent_catalog_valid",
                f"Soul keeps {len(snapshot.intents)} intents",
            )
        )
    results.extend(_intent_rows(terminal_id, payload, catalog_dropped=bool(lines)))
    version = payload.get("catalog_version") if isinstance(payload, dict) else None
    if _positive_int(version):
        results.append(_pass("catalog_version", str(version)))
    else:
        results.append(_fail("catalog_version", f"must be > 0 (got {version!r})"))
    return results


# -- live checks ---------------------------------------------------------------------


def _is_online(message: Observed) -> bool:
    return message.kind == "online" and message.text.strip().lower() in ONLINE_VALUES


def _check_reconnect(
    observer: _Observer,
    judge: SoulJudge,
    timeout: float,
    on_waiting: Callable[[], None] | None,
) -> list[CheckResult]:
    """Wait for the terminal's next connect and check what it reports, in order.

    What it re-publishes must also be kept by Soul (``judge``).
    """
    mark = len(observer.snapshot())
    if on_waiting is not None:
        on_waiting()

    def reconnected(messages: list[Observed]) -> int | None:
        for index, message in enumerate(messages[mark:], mark):
            if message.live and _is_online(message):
                return index
        return None

    if not observer.wait(lambda: reconnected(observer.messages) is not None, timeout):
        reason = f"the terminal did not reconnect within {timeout:g} s"
        return [
            _fail("report_order", reason),
            _fail("reannounce", reason),
            _skip("lwt_offline", reason),
        ]
    messages = observer.snapshot()
    online_index = reconnected(messages)
    assert online_index is not None
    deadline = messages[online_index].at + timeout

    def window(messages: list[Observed]) -> list[str]:
        """Return the kinds the new connection reported, in order.

        The broker may deliver the old connection's LWT after the new
        connection's first reports, so the window starts where the wait began
        and leaves out ``offline`` and the old connection's last heartbeats.
        """
        kinds = [
            m.kind
            for m in messages[mark:]
            if m.live
            and m.kind in REPORTS
            and not (m.kind == "online" and not _is_online(m))
        ]
        while kinds and kinds[0] == "heartbeat":
            kinds.pop(0)  # may still come from the old connection
        return kinds

    def complete() -> bool:
        return set(REPORTS) <= set(window(observer.messages))

    def beat_after_online() -> bool:
        return any(
            m.kind == "heartbeat" and m.live for m in observer.messages[online_index:]
        )

    observer.wait(
        lambda: complete() or beat_after_online(), deadline - time.monotonic()
    )
    observer.wait(complete, min(RECONNECT_GRACE, deadline - time.monotonic()))
    messages = observer.snapshot()
    sequence = window(messages)
    before = messages[mark:online_index]
    firsts = [sequence.index(kind) if kind in sequence else None for kind in REPORTS]
    seen = " -> ".join(dict.fromkeys(sequence)) or "nothing"
    results = []
    if None not in firsts and firsts == sorted(firsts):
        results.append(_pass("report_order", " -> ".join(REPORTS)))
    else:
        missing = [kind for kind, at in zip(REPORTS, firsts, strict=True) if at is None]
        detail = f"observed {seen}"
        if missing:
            detail += f"; missing {', '.join(missing)}"
        results.append(_fail("report_order", detail))
    missing = [kind for kind in ("skills", "intent_catalog") if kind not in sequence]
    lines = judge.lines(messages)
    dropped = [
        line
        for index in range(online_index, len(messages))
        if messages[index].kind in ("skills", "intent_catalog")
        for line in lines[index]
    ]
    if missing:
        results.append(
            _fail("reannounce", f"not re-published on reconnect: {', '.join(missing)}")
        )
    elif dropped:
        results.append(_fail("reannounce", "re-published, but " + "; ".join(dropped)))
    else:
        results.append(_pass("reannounce", "skills and intent_catalog re-published"))
    if any(m.kind == "online" and m.live and not _is_online(m) for m in before):
        results.append(_pass("lwt_offline", "'offline' published before reconnecting"))
    else:
        results.append(
            _skip(
                "lwt_offline",
                "no 'offline' seen before the reconnect (only an abnormal "
                "disconnect shows the LWT)",
            )
        )
    return results


def _check_monotonic(messages: list[Observed]) -> CheckResult:
    name = "skill_version_monotonic"
    versions = []
    for message in messages:
        payload = message.json() if message.kind == "skills" else None
        if isinstance(payload, dict) and "skill_version" in payload:
            versions.append(payload["skill_version"])
    if len(versions) < 2:
        return _skip(
            name, "fewer than two skills snapshots seen (use --wait-reconnect)"
        )
    for old, new in itertools.pairwise(versions):
        if not isinstance(new, int | float) or not isinstance(old, int | float):
            return _fail(name, f"non-numeric skill_version {old!r} -> {new!r}")
        if new < old:
            return _fail(name, f"skill_version went back from {old} to {new}")
    return _pass(name, " -> ".join(str(v) for v in versions))


def _check_heartbeat(
    observer: _Observer, started: float, deadline: float
) -> CheckResult:
    name = "heartbeat"

    def live() -> list[Observed]:
        return [m for m in observer.messages if m.kind == "heartbeat" and m.live]

    observer.wait(lambda: bool(live()), deadline - time.monotonic())
    messages = observer.snapshot()
    if any(m.kind == "heartbeat" and m.retain and not m.live for m in messages):
        return _fail(name, "heartbeat is retained (it must be Retain=false)")
    beats = [m for m in messages if m.kind == "heartbeat" and m.live]
    if not beats:
        return _fail(name, f"no heartbeat within {deadline - started:g} s")
    detail = f"first after {beats[0].at - started:.1f} s"
    if len(beats) > 1:
        detail += f", every {(beats[-1].at - beats[0].at) / (len(beats) - 1):.1f} s"
    if beats[0].text != "1":
        detail += f" (payload {beats[0].text!r}; '1' is recommended)"
    return _pass(name, detail)


def _evaluate_result(
    request_id: str, message: Observed | None, elapsed: float, invoke_timeout: float
) -> tuple[bool, str, Any]:
    """Return ``(well_formed, detail, ok)`` for the result of one invoke."""
    if message is None:
        return False, f"no result within {invoke_timeout:g} s", None
    payload = message.json()
    if not isinstance(payload, dict):
        return False, f"result is not a JSON object: {message.text[:80]!r}", None
    ok = payload.get("ok")
    if payload.get("request_id") != request_id:
        return (
            False,
            f"request_id {payload.get('request_id')!r} != {request_id!r}",
            ok,
        )
    if not isinstance(ok, bool):
        return False, f"'ok' must be a boolean (got {ok!r})", ok
    error = payload.get("error")
    if not ok and (not isinstance(error, str) or not error):
        return False, "ok=false without 'error'", ok
    detail = f"ok={str(ok).lower()} in {elapsed:.2f} s"
    if not ok:
        detail += f", error {error!r}"
    elif payload.get("output") is not None:
        detail += f", output {payload['output']!r}"
    return True, detail, ok


def _check_invoke(
    observer: _Observer,
    skills: list[dict[str, Any]],
    invoke_timeout: float,
    skill: str | None,
    arguments: dict[str, Any] | None,
) -> list[CheckResult]:
    """Invoke a real skill and an unknown one at once; check both results.

    ``skills`` are those to choose from when ``skill`` is not given.
    """
    choice = (skill, arguments or {}) if skill else choose_invoke(skills)
    requests: dict[str, tuple[str, str, dict[str, Any]]] = {}
    if choice is not None:
        requests["invoke_result"] = (f"body-check-{uuid.uuid4()}", *choice)
    requests["invoke_unknown_skill"] = (f"body-check-{uuid.uuid4()}", UNKNOWN_SKILL, {})
    sent = time.monotonic()
    for request_id, name, args in requests.values():
        observer.publish(
            f"invoke/{request_id}",
            {"request_id": request_id, "skill": name, "arguments": args},
        )

    def result_for(messages: list[Observed], request_id: str) -> Observed | None:
        topic = f"{observer.base}/result/{request_id}"
        return next((m for m in messages if m.topic == topic), None)

    observer.wait(
        lambda: all(
            result_for(observer.messages, rid) is not None
            for rid, _, _ in requests.values()
        ),
        invoke_timeout,
    )
    messages = observer.snapshot()
    results = []
    if choice is None:
        results.append(_skip("invoke_result", "no skill to invoke"))
    for check, (request_id, name, args) in requests.items():
        message = result_for(messages, request_id)
        elapsed = (message.at if message else time.monotonic()) - sent
        good, detail, ok = _evaluate_result(
            request_id, message, elapsed, invoke_timeout
        )
        if check == "invoke_unknown_skill" and good and ok:
            good, detail = False, f"ok=true for the unknown skill {UNKNOWN_SKILL!r}"
        if check == "invoke_result":
            detail = f"{name} {json.dumps(args, ensure_ascii=False)}: {detail}"
        results.append(CheckResult(check, "pass" if good else "fail", detail))
    return results


def run_checks(  # noqa: PLR0917  # the documented signature
    host: str,
    port: int,
    prefix: str = "soul",
    terminal_id: str = "terminal-001",
    timeout: float = 60.0,
    wait_reconnect: bool = False,
    *,
    invoke: bool = True,
    invoke_timeout: float = INVOKE_TIMEOUT,
    skill: str | None = None,
    arguments: dict[str, Any] | None = None,
    username: str | None = None,
    password: str | None = None,
    on_waiting: Callable[[], None] | None = None,
) -> list[CheckResult]:
    """Check the terminal ``{prefix}/terminal/{terminal_id}``; return every result.

    ``timeout`` bounds the wait for a heartbeat and, with ``wait_reconnect``, for
    the terminal's next connect (``on_waiting`` is called once the checker is
    ready for it). ``invoke=False`` skips the invoke checks; ``skill`` and
    ``arguments`` choose the skill invoked instead of the automatic choice.
    """
    base = f"{prefix}/terminal/{terminal_id}"
    observer = _Observer(host, port, base, username, password)
    try:
        observer.connect(CONNECT_TIMEOUT)
    except (OSError, TimeoutError, ConnectionError) as err:
        observer.close()
        return [_fail("broker", f"cannot use {host}:{port}: {err}")]
    results = [_pass("broker", f"connected to {host}:{port}")]
    try:
        started = time.monotonic()

        def have_snapshots() -> bool:
            kinds = {m.kind for m in observer.messages if not m.live}
            return {"online", "skills", "intent_catalog"} <= kinds

        observer.wait(have_snapshots, min(timeout, RETAINED_WAIT))
        observer.end_retained_phase()
        messages = observer.snapshot()
        judge = SoulJudge(terminal_id)
        skills = _last_retained(messages, "skills")
        catalog = _last_retained(messages, "intent_catalog")
        results.append(_check_online(_last_retained(messages, "online")))
        results.extend(
            _check_skills(
                skills,
                terminal_id,
                judge.lines_of(messages, skills) if skills else [],
            )
        )
        results.extend(
            _check_catalog(
                catalog,
                terminal_id,
                judge.lines_of(messages, catalog) if catalog else [],
            )
        )
        if wait_reconnect:
            results.extend(_check_reconnect(observer, judge, timeout, on_waiting))
        else:
            reason = "only observable on a live (re)connect; use --wait-reconnect"
            results.extend(
                [
                    _skip("report_order", reason),
                    _skip("reannounce", reason),
                    _skip("lwt_offline", reason),
                ]
            )
        if invoke:
            # Only a skill Soul keeps: Soul would never invoke the others.
            kept = soul_skills(terminal_id, skills.payload) if skills else None
            names = {s.name for s in kept.skills} if kept is not None else set()
            candidates = [
                s
                for s in skill_list(skills.json() if skills else None)
                if s.get("name") in names
            ]
            results.extend(
                _check_invoke(observer, candidates, invoke_timeout, skill, arguments)
            )
        else:
            results.extend(
                [
                    _skip("invoke_result", "--no-invoke"),
                    _skip("invoke_unknown_skill", "--no-invoke"),
                ]
            )
        results.append(_check_heartbeat(observer, started, started + timeout))
        results.append(_check_monotonic(observer.snapshot()))
        device_side = "terminal-side behaviour; not observable from the broker"
        results.append(_skip("intent_action", device_side))
        results.append(_skip("emotion_update", device_side))
    finally:
        observer.close()
    return sorted(results, key=_order)


def _order(result: CheckResult) -> tuple[int, int]:
    """Sort rows as CHECKS, each check's per-item rows (in their order) after it."""
    for prefix, check in ITEM_ROWS.items():
        if result.name.startswith(prefix):
            return CHECKS.index(check), 1
    return CHECKS.index(result.name), 0


def format_table(results: list[CheckResult]) -> str:
    """Return the results as a text table."""
    width = max(len("CHECK"), *(len(result.name) for result in results))
    lines = [f"{'CHECK':<{width}}  STATUS  DETAIL"]
    lines.extend(
        f"{result.name:<{width}}  {result.status.upper():<6}  {result.detail}"
        for result in results
    )
    counts = dict.fromkeys(("pass", "fail", "skip"), 0)
    for result in results:
        counts[result.status] += 1
    lines.append(
        f"{counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped"
    )
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """Return the command-line parser."""
    parser = argparse.ArgumentParser(
        prog="body-check",
        description="Check a Soul terminal against the Soul-Body protocol v2.",
    )
    add_broker_arguments(parser)
    parser.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        help="seconds to wait for a heartbeat and for a reconnect (default 60)",
    )
    parser.add_argument(
        "--wait-reconnect",
        action="store_true",
        help="wait for the terminal to (re)connect and check its report order",
    )
    parser.add_argument(
        "--no-invoke", action="store_true", help="do not invoke any skill"
    )
    parser.add_argument("--skill", help="the skill to invoke (default: automatic)")
    parser.add_argument(
        "--arguments", type=json.loads, help="JSON arguments for --skill"
    )
    parser.add_argument(
        "--invoke-timeout",
        type=float,
        default=INVOKE_TIMEOUT,
        help="seconds a result may take (default 5)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the checks, print the table and return the exit code."""
    args = build_parser().parse_args(argv)
    base = f"{args.prefix}/terminal/{args.terminal_id}"
    print(f"Checking {base} on {args.host}:{args.port}", flush=True)

    def waiting() -> None:
        print(
            f"Waiting up to {args.timeout:g} s for {args.terminal_id} to connect; "
            "restart or reconnect it now.",
            flush=True,
        )

    results = run_checks(
        args.host,
        args.port,
        args.prefix,
        args.terminal_id,
        timeout=args.timeout,
        wait_reconnect=args.wait_reconnect,
        invoke=not args.no_invoke,
        invoke_timeout=args.invoke_timeout,
        skill=args.skill,
        arguments=args.arguments,
        username=args.username,
        password=args.password,
        on_waiting=waiting,
    )
    print(format_table(results))
    return 1 if any(result.status == "fail" for result in results) else 0


if __name__ == "__main__":
    sys.exit(main())
