"""Parsing of body payloads: every malformed case is a ProtocolError with a reason."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from custom_components.soul.core import untrusted
from custom_components.soul.core.json_schema import MAX_SCHEMA_DEPTH
from custom_components.soul.core.protocol import (
    MAX_CATALOG_ENTRIES,
    MAX_PAYLOAD_BYTES,
    MAX_SKILLS,
    ProtocolError,
    decode_json,
    invoke_payload,
    parse_intent_catalog,
    parse_online,
    parse_result,
    parse_skills,
    status_payload,
)

from .spec_payloads import CATALOG, SKILLS, catalog, skills


@pytest.mark.parametrize(
    ("payload", "online"),
    [
        ("online", True), (b"true", True), ("1", True), (" ONLINE\n", True), ('"online"', True),
        ("offline", False), (b"false", False), ("0", False),
    ],
)  # fmt: skip
def test_online_values(payload: Any, online: bool) -> None:
    assert parse_online(payload) is online


@pytest.mark.parametrize("payload", ["", "yes", b"\xff\xfe", "2", "on line"])
def test_online_garbage(payload: Any) -> None:
    with pytest.raises(ProtocolError):
        parse_online(payload)


def test_decode_json_limits() -> None:
    assert decode_json(b'{"a": 1}') == {"a": 1}
    with pytest.raises(ProtocolError, match="not valid JSON"):
        decode_json(b"{nope")
    with pytest.raises(ProtocolError, match="not valid UTF-8"):
        decode_json(b"\xff\xfe")
    with pytest.raises(ProtocolError, match="larger than"):
        decode_json(b" " * (MAX_PAYLOAD_BYTES + 1))
    with pytest.raises(ProtocolError, match="more than 10000 objects and arrays"):
        decode_json("[" * 100_000 + "]" * 100_000)  # refused before it is built
    with pytest.raises(ProtocolError, match="deeper"):
        decode_json("[" * 5000 + "]" * 5000)
    with pytest.raises(ProtocolError, match="deeper than 32"):
        decode_json("[" * 33 + "]" * 33)
    assert decode_json("[" * 32 + "]" * 32)


@pytest.mark.parametrize(
    "payload",
    [
        b'{"soul_hint": "\\ud800"}',  # a lone surrogate as a JSON escape
        b'{"soul_hint": "\xed\xa0\x80"}',  # the same, encoded (CESU-8)
        b'{"a": ["\\udfff x"]}',
    ],
)
def test_lone_surrogates_never_enter(payload: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode_json(payload)


@pytest.mark.parametrize(
    "payload",
    [
        b'{"request_id": "r1", "ok": true, "ok": false}',
        b'{"a": [{"terminal_id": "t1", "terminal_id": "t2"}]}',
        b' {"a": 1, "a": 1} ',  # whitespace around: the decoder's other path
        '{"名": 1, "名": 2}'.encode(),
    ],
)
def test_a_name_that_comes_twice_is_refused(payload: bytes) -> None:
    with pytest.raises(ProtocolError, match="comes twice in one object"):
        decode_json(payload)


@pytest.mark.parametrize("payload", [b"NaN", b'{"a": [1, Infinity]}', b"-Infinity"])
def test_nan_and_infinity_are_not_json(payload: bytes) -> None:
    with pytest.raises(ProtocolError, match="is not a JSON number"):
        decode_json(payload)
    assert untrusted.loads(payload, max_bytes=64, repair=True) is not None


def test_repeated_names_when_nothing_may_be_refused() -> None:
    # A model's reply (``repair``): the last of the names wins, as in json.loads.
    assert untrusted.loads('{"a": 1, "a": 2}', max_bytes=64, repair=True) == {"a": 2}
    assert decode_json(b'{"a": {"a": 1}, "b": [{"a": 2}, {"a": 3}]}') == {
        "a": {"a": 1},
        "b": [{"a": 2}, {"a": 3}],
    }  # the same name in different objects is fine
    with pytest.raises(ProtocolError, match=r"'x{40}…' comes twice"):
        decode_json(json.dumps({"x" * 1000: 1})[:-1] + ', "' + "x" * 1000 + '": 2}')


def test_surrogate_pairs_are_text() -> None:
    assert decode_json(b'"\\ud83d\\ude00"') == "\U0001f600"


def test_spec_skills_snapshot() -> None:
    snapshot = parse_skills("terminal-001", SKILLS)
    assert snapshot.skill_version == 3
    assert snapshot.soul_hint == "friendly"
    assert [s.name for s in snapshot.skills] == [
        "control_light",
        "create_alarm",
        "set_head_motion",
    ]
    assert snapshot.rejected == ()
    light = snapshot.skill("control_light")
    assert light is not None
    assert light.required == ["mode"]
    assert light.argument_errors({"mode": "set_color", "color": "green"}) == []
    assert light.argument_errors({"mode": "blink"}) != []
    assert light.argument_errors({}) == ["(arguments): 'mode' is a required property"]
    alarm = snapshot.skill("create_alarm")
    assert alarm is not None
    assert alarm.argument_errors({"trigger_in_seconds": 0}) == [
        "trigger_in_seconds: 0 is less than the minimum of 1"
    ]


def test_legacy_bare_array() -> None:
    snapshot = parse_skills("terminal-001", SKILLS["skills"])
    assert snapshot.legacy
    assert snapshot.skill_version == 0
    assert snapshot.soul_hint is None
    assert len(snapshot.skills) == 3


def test_device_fields() -> None:
    snapshot = parse_skills(
        "t", skills(terminal_id="t", model="Desk bot", firmware=2.1, manufacturer=["x"])
    )
    assert (snapshot.model, snapshot.firmware, snapshot.manufacturer) == (
        "Desk bot",
        "2.1",
        None,
    )


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (skills(terminal_id="other"), "does not match"),
        ("text", "object or an array"),
        (42, "object or an array"),
        ({"skill_version": 1}, "no skills array"),
        (skills(skills={"a": 1}), "no skills array"),
        (skills(skill_version=-1), "whole number"),
        (skills(skill_version=1.5), "whole number"),
        (skills(skill_version=True), "whole number"),
        (skills(skills=[{"name": f"s{i}"} for i in range(MAX_SKILLS + 1)]), "exceed"),
    ],
)
def test_refused_snapshots(payload: Any, reason: str) -> None:
    with pytest.raises(ProtocolError, match=reason):
        parse_skills("terminal-001", payload)


def nested(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"x": schema}}
    return schema


@pytest.mark.parametrize(
    ("skill", "reason"),
    [
        ("not an object", "JSON object"),
        ({"description": "no name"}, "snake_case"),
        ({"name": "TurnOn"}, "snake_case"),
        ({"name": "turn on"}, "snake_case"),
        ({"name": "x" * 65}, "snake_case"),
        ({"name": "ok", "description": 3}, "description"),
        ({"name": "ok", "input_schema": []}, "JSON object"),
        ({"name": "ok", "input_schema": {"type": "string"}}, "describe an object"),
        ({"name": "ok", "input_schema": {"type": "object", "properties": {"a": {"type": "nope"}}}}, "invalid input_schema"),
        ({"name": "ok", "input_schema": {"type": "object", "required": "a"}}, "invalid input_schema"),
        ({"name": "ok", "input_schema": nested(MAX_SCHEMA_DEPTH)}, "nested deeper"),
    ],
)  # fmt: skip
def test_bad_skill_is_rejected_rest_kept(skill: Any, reason: str) -> None:
    payload = skills(skills=[*SKILLS["skills"], skill])
    snapshot = parse_skills("terminal-001", payload)
    assert len(snapshot.skills) == 3
    assert len(snapshot.rejected) == 1
    assert reason in snapshot.rejected[0][1]


def test_duplicate_names_keep_the_first() -> None:
    first = {"name": "beep", "description": "first"}
    snapshot = parse_skills(
        "t", skills(terminal_id="t", skills=[first, {"name": "beep"}])
    )
    assert [s.description for s in snapshot.skills] == ["first"]
    assert snapshot.rejected == (("beep", "duplicate skill name beep"),)


def test_skill_without_schema_takes_no_arguments() -> None:
    snapshot = parse_skills("t", skills(terminal_id="t", skills=[{"name": "beep"}]))
    beep = snapshot.skills[0]
    assert beep.required == []
    assert beep.argument_errors({}) == []
    assert beep.argument_errors([]) != []


def test_spec_catalog() -> None:
    snapshot = parse_intent_catalog("terminal-001", CATALOG)
    assert snapshot.catalog_version == 12
    assert [i["id"] for i in snapshot.intents] == [
        "intent_light_control",
        "intent_alarm_create",
        "intent_head_motion",
    ]
    assert parse_intent_catalog("t", []).intents == ()


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (catalog(terminal_id="other"), "does not match"),
        ("x", "object or an array"),
        ({"catalog_version": 1}, "no intent_catalog array"),
        (catalog(catalog_version="12"), "whole number"),
        (catalog(intent_catalog=[{"name": "no id"}]), "string id"),
        (catalog(intent_catalog=["x"]), "string id"),
        (catalog(intent_catalog=[{"id": "a"}, {"id": "a"}]), "duplicate"),
        (
            catalog(
                intent_catalog=[{"id": f"i{n}"} for n in range(MAX_CATALOG_ENTRIES + 1)]
            ),
            "exceed",
        ),
    ],
)
def test_refused_catalogs(payload: Any, reason: str) -> None:
    with pytest.raises(ProtocolError, match=reason):
        parse_intent_catalog("terminal-001", payload)


def test_results() -> None:
    ok = parse_result("r1", {"request_id": "r1", "ok": True, "output": "done"})
    assert (ok.ok, ok.output, ok.error) == (True, "done", None)
    failed = parse_result(
        "r1", {"request_id": "r1", "ok": False, "output": "x", "error": "bad"}
    )
    assert (failed.ok, failed.error) == (False, "bad")


def test_a_results_output_is_clean_text() -> None:
    # A body's output reaches the caller of soul.invoke_skill and the model:
    # control characters become U+FFFD at any depth, names too; the rest
    # (line feeds, tabs, numbers, the structure) is kept.
    result = parse_result(
        "r1",
        {
            "request_id": "r1",
            "ok": True,
            "output": {"a\x00": ["x\x07y", 1, None, {"k": "l1\nl2\tz\x1b"}]},
        },
    )
    assert result.output == {"a\ufffd": ["x\ufffdy", 1, None, {"k": "l1\nl2\tz\ufffd"}]}
    assert parse_result("r1", {"request_id": "r1", "ok": True}).output is None
    # Its error becomes an action's error message: one line, no override.
    failed = parse_result(
        "r1",
        {"request_id": "r1", "ok": False, "error": "bad\n2026 ERROR fake\u202e"},
    )
    assert failed.error == "bad\ufffd2026 ERROR fake\ufffd"


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        ({"ok": True}, "does not match"),
        ({"request_id": "r2", "ok": True}, "does not match"),
        ({"request_id": "r1", "ok": "yes"}, "boolean ok"),
        ({"request_id": "r1", "ok": False}, "must carry an error"),
        ({"request_id": "r1", "ok": False, "error": ""}, "must carry an error"),
        (["r1"], "JSON object"),
    ],
)
def test_bad_results(payload: Any, reason: str) -> None:
    with pytest.raises(ProtocolError, match=reason):
        parse_result("r1", payload)


def test_outgoing_payloads() -> None:
    assert json.loads(invoke_payload("r", "control_light", {"mode": "on"})) == {
        "request_id": "r",
        "skill": "control_light",
        "arguments": {"mode": "on"},
    }
    assert json.loads(
        status_payload("mem0_searching", "正在回顾", "s1", "2026-02-20T16:20:00Z")
    ) == {
        "status": "mem0_searching",
        "message": "正在回顾",
        "session_id": "s1",
        "ts": "2026-02-20T16:20:00Z",
    }
    assert "session_id" not in json.loads(status_payload("x", "y", None, "t"))


def pattern_skill(schema: dict[str, Any]) -> Any:
    payload = skills(skills=[{"name": "say", "input_schema": schema}])
    return parse_skills("terminal-001", payload)


def test_schema_patterns_are_bounded() -> None:
    """A body's hostile `pattern` cannot stall validation; ordinary ones work."""
    ok = pattern_skill(
        {
            "type": "object",
            "properties": {"code": {"type": "string", "pattern": "^[0-9]{4}$"}},
        }
    ).skills[0]
    assert ok.argument_errors({"code": "1234"}) == []
    assert ok.argument_errors({"code": "12a4"}) == [
        "code: '12a4' does not match '^[0-9]{4}$'"
    ]
    hostile = pattern_skill(
        {
            "type": "object",
            "properties": {"text": {"type": "string", "pattern": "(a|aa)+$"}},
        }
    ).skills[0]
    errors = hostile.argument_errors({"text": "a" * 40 + "b"})
    assert len(errors) == 1
    assert "unusable pattern" in errors[0]
    assert "took longer than" in errors[0]


def test_pattern_properties_are_refused() -> None:
    snapshot = pattern_skill(
        {"type": "object", "patternProperties": {"^x": {"type": "string"}}}
    )
    assert snapshot.skills == ()
    assert "patternProperties is not supported" in snapshot.rejected[0][1]


def _skill(schema: dict[str, Any]) -> dict[str, Any]:
    return {"name": "do_it", "description": "d", "input_schema": schema}


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        ({"type": "object", "properties": {"a": {"$ref": "#"}}}, "recursive"),
        (
            {"type": "object", "properties": {"a": {"$ref": "#/$defs/nope"}}},
            "names nothing",
        ),
        (
            {"type": "object", "properties": {"a": {"$ref": "https://x/s.json"}}},
            "not local",
        ),
        (
            {
                "type": "object",
                "$defs": {"n": {"type": "array", "items": {"$ref": "#/$defs/n"}}},
                "properties": {"a": {"$ref": "#/$defs/n"}},
            },
            "recursive",
        ),
        (
            {"type": "object", "properties": {"a": {"$dynamicRef": "#x"}}},
            "not supported",
        ),
        # A root $ref naming a string (found by mypy: it crashed parse_skill).
        ({"$ref": "#/$ref"}, "must name an object"),
        ({"$ref": "#/$defs/n", "$defs": {"n": [1]}}, "invalid input_schema"),
        (
            {
                "type": "object",
                "required": ["a"],
                "properties": {"a": {"$ref": "#/required"}},
            },
            "invalid input_schema",
        ),
        (
            {
                "type": "object",
                "properties": {
                    "a": {"type": "string", "pattern": "(?:(?:a{100}){100}){100}"}
                },
            },
            "unusable pattern",
        ),
        (
            {
                "type": "object",
                "properties": {
                    f"p{i}": {"type": "string", "description": "x" * 200}
                    for i in range(100)
                },
            },
            "larger than",
        ),
    ],
)
def test_schemas_soul_cannot_bound_are_refused(
    schema: dict[str, Any], reason: str
) -> None:
    snapshot = parse_skills("t1", {"skills": [_skill(schema)]})
    assert snapshot.skills == ()
    assert reason in snapshot.rejected[0][1]


def test_local_refs_are_inlined() -> None:
    """A schema with $defs works, and the model is offered it self-contained."""
    schema = {
        "type": "object",
        "$defs": {"level": {"type": "integer", "minimum": 0, "maximum": 100}},
        "properties": {
            "brightness": {"$ref": "#/$defs/level", "description": "how bright"}
        },
        "required": ["brightness"],
    }
    skill = parse_skills("t1", {"skills": [_skill(schema)]}).skills[0]
    assert "$ref" not in json.dumps(skill.input_schema)
    assert "$defs" not in skill.input_schema
    assert skill.argument_errors({"brightness": 50}) == []
    assert skill.argument_errors({"brightness": 500})


def test_a_chain_of_bounded_repeats_in_a_schema_pattern_is_bounded() -> None:
    """Issue 13: six a{0,64} then b froze the loop 14 s in soul.invoke_skill."""
    schema = {
        "type": "object",
        "properties": {"s": {"type": "string", "pattern": "a{0,64}" * 6 + "b"}},
    }
    skill = parse_skills("t1", {"skills": [_skill(schema)]}).skills[0]
    started = time.perf_counter()
    errors = skill.argument_errors({"s": "a" * 80})
    assert (
        time.perf_counter() - started < 1.0
    )  # a hang detector (it froze 14 s); timings live in benchmarks/
    assert errors
