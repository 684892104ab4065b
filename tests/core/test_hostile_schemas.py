"""Hostile tool schemas and arguments: a documented error or a normal answer.

Each case here was found by fuzzing (/tmp/fuzz/report.md, F1-F5, T3, T4) and
raised an unexpected exception or took seconds. Slow cases assert the outcome
with inputs large enough that the old code took many seconds; the pytest
timeout on them is a hang detector, not a benchmark.
"""

from __future__ import annotations

from fractions import Fraction
import gc
import json
from typing import Any

from jsonschema import validators
from mcp import types
import pytest

from custom_components.soul.core import json_schema, protocol, untrusted
from custom_components.soul.core.json_schema import MAX_SCHEMA_BYTES
from custom_components.soul.core.mcp.tools import parse_tools
from custom_components.soul.core.protocol import (
    ProtocolError,
    Skill,
    parse_skill,
    parse_skills,
)
from custom_components.soul.core.registry import TerminalRegistry
from custom_components.soul.core.skill_profiles import (
    Brightness,
    LightProfile,
    Profile,
    brightness_range,
    light_profile,
    profile,
)
from custom_components.soul.core.topics import Kind

DRAFT_03 = "http://json-schema.org/draft-03/schema#"
DRAFT_07 = "http://json-schema.org/draft-07/schema#"
NOT_A_DRAFT = "must be the URI of a draft, a string"


def rejected(schema: Any) -> str:
    """Return why the skill with this schema was left out of its snapshot."""
    snapshot = parse_skills(
        "t1",
        {"skills": [{"name": "a", "input_schema": schema}, {"name": "beep"}]},
    )
    assert [s.name for s in snapshot.skills] == ["beep"]  # the rest is kept
    assert len(snapshot.rejected) == 1
    return snapshot.rejected[0][1]


def accepted(schema: dict[str, Any]) -> Skill:
    return parse_skill({"name": "a", "input_schema": schema})


def args(raw: str) -> Any:
    """Decode tool arguments as the invoker does: untrusted JSON."""
    return untrusted.loads(raw, max_bytes=65536, max_depth=16)


# F1: $schema is not a URI string, or one jsonschema cannot read.


@pytest.mark.parametrize("bad", [{}, [1], 5, None, True])
def test_a_root_schema_uri_that_is_no_string_is_refused(bad: Any) -> None:
    assert NOT_A_DRAFT in rejected({"$schema": bad})


@pytest.mark.parametrize("bad", [{}, [1], 5])
def test_a_nested_schema_uri_that_is_no_string_is_refused(bad: Any) -> None:
    schema = {"type": "object", "properties": {"x": {"$schema": bad}}}
    assert NOT_A_DRAFT in rejected(schema)
    items = {"type": "object", "properties": {"x": {"items": [{"$schema": bad}]}}}
    assert NOT_A_DRAFT in rejected(items)


@pytest.mark.parametrize(
    "uri", ["http://[", "", "http://json-schema.org/schema#", "urn:vendor:x", DRAFT_03]
)
def test_an_unknown_schema_uri_is_read_as_2020_12(uri: str) -> None:
    """As jsonschema reads it; "http://[" raised ValueError (Invalid IPv6 URL)."""
    items = {"type": "array", "prefixItems": [{"type": "integer"}]}
    for schema in (
        {"$schema": uri, "type": "object", "properties": {"x": items}},
        {"type": "object", "properties": {"x": {**items, "$schema": uri}}},
    ):
        skill = parse_skill({"name": "a", "input_schema": schema})
        assert skill.argument_errors({"x": [1, "two"]}) == []
        assert skill.argument_errors({"x": ["one"]}) == [
            "x/0: 'one' is not of type 'integer'"
        ]


def test_an_mcp_tool_with_a_bad_schema_uri_is_skipped() -> None:
    listed = [
        types.Tool.model_construct(
            name="t", inputSchema={"type": "object", "$schema": {}}
        ),
        types.Tool.model_construct(name="ok", inputSchema={"type": "object"}),
    ]
    tools, skipped = parse_tools("srv", listed)
    assert [t.name for t in tools] == ["srv__ok"]
    assert NOT_A_DRAFT in skipped[0]


@pytest.mark.parametrize(
    "uri",
    [
        "http://json-schema.org/draft-04/schema#",
        "http://json-schema.org/draft-06/schema#",
        DRAFT_07,
        "http://json-schema.org/draft-07/schema",
        "https://json-schema.org/draft/2019-09/schema",
        "https://json-schema.org/draft/2020-12/schema",
        "https://json-schema.org/draft/2020-12/schema#",
    ],
)
def test_the_drafts_soul_validates(uri: str) -> None:
    skill = accepted(
        {"$schema": uri, "type": "object", "properties": {"n": {"type": "integer"}}}
    )
    assert skill.argument_errors({"n": 1}) == []
    assert skill.argument_errors({"n": "1"}) == ["n: '1' is not of type 'integer'"]


def test_a_draft_07_root_is_still_validated_as_draft_07() -> None:
    """Items as a list is a tuple in draft-07 (prefixItems in 2020-12)."""
    skill = accepted(
        {
            "$schema": DRAFT_07,
            "type": "object",
            "properties": {"pair": {"type": "array", "items": [{"type": "integer"}]}},
        }
    )
    assert skill.argument_errors({"pair": ["x"]}) == [
        "pair/0: 'x' is not of type 'integer'"
    ]


def test_a_generated_schema_with_a_root_ref_and_a_draft_is_accepted() -> None:
    """zod-to-json-schema's shape: the root's $schema ends up nested after inlining."""
    skill = accepted(
        {
            "$schema": DRAFT_07,
            "$ref": "#/definitions/Args",
            "definitions": {
                "Args": {
                    "type": "object",
                    "properties": {"q": {"type": "string", "pattern": "^a"}},
                    "required": ["q"],
                }
            },
        }
    )
    assert skill.argument_errors({"q": "abc"}) == []
    assert skill.argument_errors({"q": "b"}) == ["q: 'b' does not match '^a'"]


def test_a_nested_schema_uri_keeps_the_bounded_pattern() -> None:
    """A nested $schema made jsonschema validate that subschema with `re`, unbounded."""
    skill = accepted(
        {
            "type": "object",
            "properties": {
                "x": {"$schema": DRAFT_07, "type": "string", "pattern": "(a|aa)+$"}
            },
        }
    )
    errors = skill.argument_errors({"x": "a" * 32 + "b"})
    assert len(errors) == 1
    assert "took longer than" in errors[0]


def test_schema_as_a_property_name_or_in_data_is_not_a_draft() -> None:
    skill = accepted(
        {
            "type": "object",
            "properties": {
                "$schema": {"type": "string"},
                "v": {"enum": [{"$schema": 5}], "default": {"$schema": []}},
            },
        }
    )
    assert skill.argument_errors({"$schema": "x", "v": {"$schema": 5}}) == []
    assert skill.argument_errors({"$schema": 1}) == [
        "$schema: 1 is not of type 'string'"
    ]


# F2: $ref pointer segments with digits that are not ASCII.


@pytest.mark.parametrize("segment", ["²", "١", "９", "9" * 5000])
def test_a_ref_index_that_is_not_an_ascii_number_names_nothing(segment: str) -> None:
    schema = {
        "$defs": {"a": [{"type": "string"}]},
        "properties": {"x": {"$ref": f"#/$defs/a/{segment}"}},
    }
    assert "names nothing" in rejected(schema)


def test_a_ref_index_still_names_an_item() -> None:
    skill = accepted(
        {
            "$defs": {"a": [{"type": "string"}]},
            "properties": {"x": {"$ref": "#/$defs/a/0"}},
        }
    )
    assert skill.argument_errors({"x": 1}) == ["x: 1 is not of type 'string'"]


# F3: a pattern nested past Python's recursion limit.


def test_a_deeply_nested_pattern_is_refused_before_the_meta_schema_check() -> None:
    pattern = "(" * 500 + ")" * 500
    reason = rejected({"properties": {"x": {"type": "string", "pattern": pattern}}})
    assert "unusable pattern" in reason


# F4: integers beyond the float range.


def light_payload(brightness: dict[str, Any]) -> bytes:
    return json.dumps(
        {
            "skills": [
                {
                    "name": "light",
                    "input_schema": {
                        "type": "object",
                        "properties": {
                            "mode": {"type": "string", "enum": ["on", "off"]},
                            "brightness": brightness,
                        },
                        "required": ["mode"],
                    },
                }
            ]
        }
    ).encode()


def test_a_light_with_a_huge_brightness_bound_has_no_brightness() -> None:
    # An integer past 64 bits refuses the snapshot: Home Assistant cannot
    # write it (the panel shows a body's skills).
    raw = light_payload({"type": "integer", "maximum": 10**400})
    prepared = TerminalRegistry.prepare(Kind.SKILLS, "t1", raw)
    assert prepared.error is not None
    assert "an integer outside 64 bits" in prepared.error
    raw = light_payload({"type": "number", "minimum": -1e308, "maximum": 1e308})
    registry = TerminalRegistry()
    registry.handle_message(Kind.SKILLS, "t1", raw)
    prepared = TerminalRegistry.prepare(Kind.SKILLS, "t1", raw)
    assert prepared.error is None
    assert prepared.snapshot is not None
    light = prepared.snapshot.skills[0]
    assert profile(light) == Profile.LIGHT
    found = light_profile(light)
    assert found is not None
    assert found.brightness is None


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "integer", "maximum": 10**400},
        {"type": "integer", "minimum": -(10**400)},
        {"type": "number", "exclusiveMinimum": 10**400},
        {"type": "number", "minimum": -1e308, "maximum": 1e308},  # the span overflows
    ],
)
def test_brightness_bounds_beyond_floats_are_not_honoured(schema: Any) -> None:
    assert brightness_range(schema) is None


def test_a_huge_brightness_argument_reads_as_none() -> None:
    lamp = LightProfile(brightness=Brightness(1, 100, integer=True))
    state = lamp.state_of({"mode": "on", "brightness": 10**400})
    assert (state.on, state.brightness) == (True, None)


def test_a_schema_number_past_64_bits_is_refused() -> None:
    assert "integers within 64 bits" in rejected(
        {"type": "object", "properties": {"n": {"multipleOf": 10**400}}}
    )


@pytest.mark.parametrize(
    ("divisor", "value", "fits"),
    [
        (0.5, 10**400, True),
        (0.5, 10**400 + 1, True),
        (0.3, 10**400, (Fraction(10**400) / Fraction(0.3)).denominator == 1),
        (1e300, 1.5, False),
        (1e300, 1e301, True),
        (3, 10**400, False),
        (0.5, 1.5, True),
        (0.5, 1.25, False),
        (1e-300, 1e300, (Fraction(1e300) / Fraction(1e-300)).denominator == 1),
    ],
)
def test_multiple_of_with_numbers_beyond_floats(
    divisor: Any, value: Any, fits: bool
) -> None:
    skill = accepted({"type": "object", "properties": {"n": {"multipleOf": divisor}}})
    # The numbers themselves: a model's arguments past 64 bits are refused
    # when decoded (untrusted.loads), and so is a schema holding one.
    errors = skill.argument_errors({"n": value})
    assert (errors == []) is fits
    if not fits:
        assert len(errors) == 1
        assert errors[0].startswith("n: ")  # the message is cut at 200 characters


# F5: draft-03 let any type name through, then validation raised UnknownType.


def test_draft_03_type_names_are_refused_as_2020_12_refuses_them() -> None:
    schema = {
        "$schema": DRAFT_03,
        "type": "object",
        "properties": {"a": {"type": "Object"}},
    }
    assert "invalid input_schema" in rejected(schema)


def test_an_unknown_type_name_is_refused_by_the_other_drafts() -> None:
    for uri in (
        "http://json-schema.org/draft-04/schema#",
        DRAFT_07,
        "https://json-schema.org/draft/2020-12/schema",
    ):
        schema = {"$schema": uri, "properties": {"a": {"type": "Object"}}}
        assert "invalid input_schema" in rejected(schema)


# T3: refs that multiply a long array or string.


def multiplied(value: dict[str, Any]) -> dict[str, Any]:
    return {
        "$defs": {"a": value, "b": {"allOf": [{"$ref": "#/$defs/a"}] * 40}},
        "properties": {f"p{i}": {"$ref": "#/$defs/b"} for i in range(40)},
    }


@pytest.mark.timeout(5)
def test_refs_multiplying_a_long_enum_are_refused_at_once() -> None:
    """131 KB took 5.5 s before the rejection (list items were not counted)."""
    schema = multiplied({"enum": list(range(36000))})  # the old code took ~10 s
    raw = json.dumps({"skills": [{"name": "a", "input_schema": schema}]}).encode()
    assert len(raw) < protocol.MAX_PAYLOAD_BYTES
    prepared = TerminalRegistry.prepare(Kind.SKILLS, "t1", raw)
    assert prepared.snapshot is not None
    ((name, reason),) = prepared.snapshot.rejected
    assert name == "a"
    assert f"larger than {MAX_SCHEMA_BYTES} bytes" in reason


@pytest.mark.timeout(5)
def test_refs_multiplying_a_long_string_are_refused_before_it_is_built() -> None:
    schema = multiplied({"description": "x" * 100_000})  # 160 MB once inlined
    assert f"larger than {MAX_SCHEMA_BYTES} bytes" in rejected(schema)


def test_a_schema_just_under_the_size_limit_is_still_accepted() -> None:
    """The running count never exceeds the canonical JSON: no new refusals."""
    enum = [f"v{i:04d}" for i in range(1500)]
    schema = {
        "$defs": {"e": {"type": "string", "enum": enum}},
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/e"}},
    }
    skill = accepted(schema)
    assert len(json.dumps(skill.input_schema, sort_keys=True)) <= MAX_SCHEMA_BYTES
    assert skill.argument_errors({"a": "v1499"}) == []


# T4: uniqueItems compared every pair of items that do not sort.

UNIQUE = {"type": "object", "properties": {"a": {"type": "array", "uniqueItems": True}}}


@pytest.mark.timeout(5)
def test_unique_items_on_a_long_array_that_does_not_sort() -> None:
    """4.6 s for 4,000 items; ~10,000 fit in 64 KB of arguments (~30 s before).

    Each check takes 6-12 ms of the 20 ms budget here. The collector is held
    off during them: in a full run of the newest lane (2026-11-29) one went
    past the budget, most likely a collection of the run's large heap.
    """
    skill = accepted(UNIQUE)
    items: list[Any] = ["x", *range(10_500)]
    raw = json.dumps({"a": items})
    assert len(raw) < 65536
    unique, repeated = args(raw), args(json.dumps({"a": [*items, 10_499.0]}))
    gc.collect()
    gc.disable()
    try:
        assert skill.argument_errors(unique) == []
        errors = skill.argument_errors(repeated)
    finally:
        gc.enable()
    assert len(errors) == 1
    assert errors[0].startswith("a: ['x', 0, 1")  # non-unique; cut at 200 characters


@pytest.mark.parametrize(
    "items",
    [
        [1, 1.0],
        [1, True],
        [0, False],
        [None, False, 0, "", [], {}],
        [0, -0.0],
        ["1", 1],
        [[1], [1.0]],
        [[1], [True]],
        [[1, 2], [2, 1]],
        [{"a": 1}, {"a": 1.0}],
        [{"a": 1}, {"a": True}],
        [{"a": 1, "b": 2}, {"b": 2, "a": 1}],
        [{"a": [1, {"b": None}]}, {"a": [1.0, {"b": None}]}],
        [{"a": [1, {"b": None}]}, {"a": [1.0, {"b": False}]}],
        ["x", 1, 2, "x"],
        [10**400, 10**400],
        [10**400, 1e308],
    ],
)
def test_unique_items_gives_jsonschemas_answer(items: list[Any]) -> None:
    expected = validators.Draft202012Validator({"uniqueItems": True}).is_valid(items)
    assert (accepted(UNIQUE).argument_errors({"a": items}) == []) is expected


# argument_errors never raises.


def test_argument_errors_reports_what_jsonschema_could_not_check() -> None:
    skill = accepted({"type": "object", "properties": {"n": {"multipleOf": 0.5}}})
    # Not from JSON (no body sends infinity), yet jsonschema raised OverflowError.
    assert skill.argument_errors({"n": float("inf")}) == [
        "(arguments): could not be checked against the schema (OverflowError)"
    ]


def test_argument_errors_is_the_last_line_of_defence() -> None:
    class Broken:
        def iter_errors(self, instance: Any) -> Any:
            raise RuntimeError("jsonschema bug")

    skill = Skill("a", "", {"type": "object"}, Broken())
    assert skill.argument_errors({}) == [
        "(arguments): could not be checked against the schema (RuntimeError)"
    ]


def test_every_finding_raises_only_protocol_errors() -> None:
    """The fuzzer's reproducers through parse_skill: ProtocolError or a Skill."""
    for schema in (
        {"$schema": {}},
        {"$defs": {"a": [{}]}, "properties": {"x": {"$ref": "#/$defs/a/²"}}},
        {"properties": {"x": {"pattern": "(" * 500 + ")" * 500}}},
    ):
        with pytest.raises(ProtocolError):
            parse_skill({"name": "a", "input_schema": schema})


@pytest.mark.timeout(5)
def test_a_check_of_arguments_past_its_cpu_budget_reports_them_invalid() -> None:
    """Found while fixing T4: 300 anyOf branches on 10,000 items took 22 s."""
    # 64 branches: 10,000 items took ~5 s before; 10 items take under 1 ms.
    skill = accepted(
        {
            "type": "object",
            "properties": {
                "a": {
                    "type": "array",
                    "items": {"anyOf": [{"const": i} for i in range(64)]},
                }
            },
        }
    )
    assert skill.argument_errors({"a": [63] * 10}) == []
    assert skill.argument_errors(args(json.dumps({"a": [63] * 10_000}))) == [
        "(arguments): took longer than 20 ms to check against the schema"
    ]


class _Clocks:
    """Stand-in ``time`` for ``json_schema``: a wall clock and a CPU clock, set by hand."""

    def __init__(self) -> None:
        self.wall = 0.0
        self.cpu = 0.0
        self.cpu_reads = 0

    def perf_counter(self) -> float:
        return self.wall

    def thread_time(self) -> float:
        self.cpu_reads += 1
        return self.cpu


def test_a_check_that_fits_reads_the_cpu_clock_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``thread_time`` is a system call: a turn's check made one per keyword.

    On a busy machine each system call between a turn's two messages let the
    kernel run another process first (the check took 0.3-0.4 ms in Home
    Assistant). The CPU clock is read when the check starts and again only
    when the wall clock says the budget could be spent.
    """
    clocks = _Clocks()
    monkeypatch.setattr(json_schema, "time", clocks)
    skill = accepted(
        {
            "type": "object",
            "properties": {
                "mode": {"type": "string", "enum": ["on", "off"]},
                "level": {"type": "integer", "minimum": 0, "maximum": 100},
            },
            "required": ["mode"],
        }
    )
    assert skill.argument_errors({"mode": "on", "level": 3}) == []
    assert clocks.cpu_reads == 1


def test_a_check_preempted_past_its_budget_keeps_its_cpu_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Wall time past the budget is not CPU time: the check goes on until the CPU's is spent."""
    clocks = _Clocks()
    monkeypatch.setattr(json_schema, "time", clocks)
    deadline = json_schema._CpuDeadline(0.02)
    clocks.wall = 0.5  # preempted for half a second, 5 ms of CPU
    clocks.cpu = 0.005
    deadline.check()  # 15 ms of CPU are left
    assert clocks.cpu_reads == 2
    clocks.wall = 0.514  # 14 ms later on the wall: no need to read the CPU clock
    deadline.check()
    assert clocks.cpu_reads == 2
    clocks.wall = 0.516
    clocks.cpu = 0.0201  # the CPU's 20 ms are spent
    with pytest.raises(json_schema._TooSlowError):
        deadline.check()
