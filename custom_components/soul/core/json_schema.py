"""A tool's argument schema (JSON Schema): checked, self-contained, bounded.

The bodies' skills and the MCP servers' tools carry one each, untrusted.
``compile_input_schema`` inlines its local ``$ref``s, bounds its size and
depth, checks it against its draft's meta-schema and compiles every
``pattern`` safely; ``argument_errors`` checks a model's arguments against it
under a CPU budget, with Soul's own bounded ``pattern``, ``uniqueItems`` and
``multipleOf``. ``protocol`` turns ``InvalidSchemaError`` into its
``ProtocolError``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from fractions import Fraction
import functools
import json
import time
from typing import Any

from jsonschema import exceptions as jsonschema_exceptions, validators

from . import safe_regex

MAX_SCHEMA_DEPTH = 12
MAX_SCHEMA_BYTES = 16 * 1024  # one skill's input_schema, its $refs inlined
PATTERN_TIMEOUT = 0.01  # seconds one schema pattern may take on one string
PATTERN_BUDGET = 0.015  # seconds all schema patterns may take on one set of arguments
ARGUMENTS_BUDGET = 0.02  # seconds of CPU one check of a set of arguments may take
EMPTY_OBJECT_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


class InvalidSchemaError(ValueError):
    """An argument schema Soul cannot use; ``str()`` says why."""


def compile_input_schema(schema: Mapping[str, Any]) -> tuple[dict[str, Any], Any]:
    """Return ``schema`` self-contained and its validator; raise ``InvalidSchemaError``.

    The draft is the root's ``$schema``: draft-04, -06, -07, 2019-09 or
    2020-12, named by the URI of its meta-schema (with or without the empty
    fragment ``#``); any other string, or none, means 2020-12, as jsonschema
    itself reads it (draft-03 included: its meta-schema let any type name
    through, which validation then could not handle). A ``$schema`` that is
    not a string is refused, at the root or in a subschema; in a subschema it
    changes nothing, the whole schema is checked and validated as the root's
    draft.
    """
    try:
        inlined = inline_refs(dict(schema))
    except SchemaRefError as err:
        raise InvalidSchemaError(str(err)) from None
    if _depth(inlined, MAX_SCHEMA_DEPTH) > MAX_SCHEMA_DEPTH:
        raise InvalidSchemaError(
            f"input_schema is nested deeper than {MAX_SCHEMA_DEPTH}"
        )
    if inlined.get("type", "object") != "object":
        raise InvalidSchemaError("input_schema must describe an object")
    canonical = json.dumps(inlined, sort_keys=True)
    if len(canonical) > MAX_SCHEMA_BYTES:
        raise InvalidSchemaError(
            f"input_schema is larger than {MAX_SCHEMA_BYTES} bytes"
        )
    validator = _compile_schema(canonical)
    if isinstance(validator, str):
        raise InvalidSchemaError(f"invalid input_schema: {validator}")
    return inlined, validator


def argument_errors(validator: Any, arguments: Any) -> list[str]:
    """Return why ``arguments`` do not fit ``validator``'s schema (empty when they do).

    Every ``pattern`` of one check shares ``PATTERN_BUDGET`` seconds, and
    the whole check ``ARGUMENTS_BUDGET`` seconds of CPU (long arrays under
    ``anyOf`` took seconds): past it the arguments are reported invalid.
    Nothing is raised: should jsonschema fail on some input no schema check
    foresaw, the arguments are reported invalid with the reason.
    """
    deadline = _arguments_deadline.set(_CpuDeadline(ARGUMENTS_BUDGET))
    try:
        with safe_regex.budget(PATTERN_BUDGET):
            return sorted(
                f"{'/'.join(map(str, error.absolute_path)) or '(arguments)'}: "
                f"{error.message[:200]}"
                for error in validator.iter_errors(arguments)
            )
    except _TooSlowError:
        return [
            "(arguments): took longer than "
            f"{ARGUMENTS_BUDGET * 1000:.0f} ms to check against the schema"
        ]
    except Exception as err:  # noqa: BLE001 - the last line of defence
        return [
            "(arguments): could not be checked against the schema "
            f"({type(err).__name__})"
        ]
    finally:
        _arguments_deadline.reset(deadline)


def _depth(value: Any, limit: int) -> int:
    """Return the nesting depth of a JSON value, stopping past ``limit``."""
    if limit < 0:
        return 1
    if isinstance(value, Mapping):
        return 1 + max((_depth(v, limit - 1) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v, limit - 1) for v in value), default=0)
    return 0


class SchemaRefError(ValueError):
    """A ``$ref`` Soul cannot inline: remote, dangling or recursive."""


MAX_SCHEMA_NODES = 2000  # objects in one schema once its $refs are inlined
_INDEX_DIGITS = 9  # an array index in a $ref: no schema array is longer


def _pointer(root: Mapping[str, Any], ref: str) -> Any:
    """Return what a local JSON pointer (``#/$defs/x``) names in ``root``."""
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        raise SchemaRefError(f"$ref {ref[:80]!r} is not local (only #/... refs)")
    node: Any = root
    for raw_part in ref[2:].split("/"):
        part = raw_part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif (
            isinstance(node, list)
            and part.isascii()
            and part.isdigit()
            and len(part) <= _INDEX_DIGITS
            and int(part) < len(node)
        ):
            node = node[int(part)]
        else:
            raise SchemaRefError(f"$ref {ref[:80]!r} names nothing in the schema")
    return node


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """Return ``schema`` with every local ``$ref`` replaced by what it names.

    The result is self-contained (language models and validators need no
    resolver, and nothing recurses at validation time). Remote, dangling and
    recursive refs raise ``SchemaRefError``, as do ``$dynamicRef`` and
    ``$recursiveRef`` and a result of more than ``MAX_SCHEMA_NODES`` objects
    or of more than ``MAX_SCHEMA_BYTES`` (counted as it grows, every value and
    key, so a small schema whose refs multiply a long array or string is
    refused before it is built). ``$defs``/``definitions`` are dropped once
    inlined. A root made of a ``$ref`` alone becomes what it names, which
    must be an object too.
    """
    nodes = 0
    size = 0  # never more than the length of the result's canonical JSON

    def grow(amount: int) -> None:
        nonlocal size
        size += amount
        if size > MAX_SCHEMA_BYTES:
            raise SchemaRefError(
                f"input_schema is larger than {MAX_SCHEMA_BYTES} bytes with its $refs inlined"
            )

    def walk(node: Any, expanding: tuple[str, ...]) -> Any:
        nonlocal nodes
        if isinstance(node, list):
            grow(1 + len(node))  # brackets and separators
            return [walk(item, expanding) for item in node]
        if not isinstance(node, Mapping):
            grow(len(node) + 2 if isinstance(node, str) else 1)
            return node
        nodes += 1
        if nodes > MAX_SCHEMA_NODES:
            raise SchemaRefError(
                f"input_schema has more than {MAX_SCHEMA_NODES} objects with its $refs inlined"
            )
        for dynamic in ("$dynamicRef", "$recursiveRef"):
            if dynamic in node:
                raise SchemaRefError(f"{dynamic} is not supported")
        ref = node.get("$ref")
        if ref is not None:
            if not isinstance(ref, str):
                raise SchemaRefError("$ref must be a string")
            if ref in expanding:
                raise SchemaRefError(f"$ref {ref[:80]!r} is recursive")
            target = walk(_pointer(schema, ref), (*expanding, ref))
            kept = [key for key in node if key != "$ref"]
            if kept:
                grow(2 + sum(len(key) + 4 for key in kept))  # braces, keys, ": "
            rest = {key: walk(node[key], expanding) for key in kept}
            return {"allOf": [target, rest]} if rest else target
        kept = [key for key in node if key not in ("$defs", "definitions") or expanding]
        grow(2 + sum(len(key) + 4 for key in kept))  # braces, keys, ": "
        return {key: walk(node[key], expanding) for key in kept}

    inlined = walk(schema, ())
    if not isinstance(inlined, dict):
        raise SchemaRefError("the root $ref must name an object")
    return inlined


# The drafts a schema may name in ``$schema``, by their meta-schema's URI
# (with and without the empty fragment); any other URI is read as 2020-12.
# Draft-03 is left out: its meta-schema accepts any type name, and validating
# with an unknown one raises.
_DRAFTS: dict[str, Any] = {
    uri: cls
    for cls in (
        validators.Draft4Validator,
        validators.Draft6Validator,
        validators.Draft7Validator,
        validators.Draft201909Validator,
        validators.Draft202012Validator,
    )
    for base in [str(cls.ID_OF(cls.META_SCHEMA)).rstrip("#")]
    for uri in (base, f"{base}#")
}

# Keywords whose value is a subschema, a list of them, or a map to them.
_SUBSCHEMA = frozenset(
    {
        "additionalItems",
        "additionalProperties",
        "contains",
        "contentSchema",
        "else",
        "if",
        "items",
        "not",
        "propertyNames",
        "then",
        "unevaluatedItems",
        "unevaluatedProperties",
    }
)
_SUBSCHEMA_LIST = frozenset({"allOf", "anyOf", "oneOf", "prefixItems", "items"})
_SUBSCHEMA_MAP = frozenset(
    {
        "$defs",
        "definitions",
        "dependencies",
        "dependentSchemas",
        "patternProperties",
        "properties",
    }
)


def _one_draft(node: Any, bad: list[Any], root: bool = True) -> Any:
    """Return ``node`` without the ``$schema`` of its subschemas; note bad ones.

    jsonschema would switch to that draft's own validator class inside such a
    subschema, leaving Soul's bounded keywords behind, and with a draft the
    meta-schema check never saw. Data (``enum``, ``const``, ``default``...) and
    property names are left alone: only keywords that hold schemas are walked.
    """
    if not isinstance(node, Mapping):
        return node
    result: dict[str, Any] = {}
    for key, value in node.items():
        if key == "$schema" and not root:
            if not isinstance(value, str):
                bad.append(value)
            continue
        if key in _SUBSCHEMA and isinstance(value, Mapping):
            result[key] = _one_draft(value, bad, False)
        elif key in _SUBSCHEMA_LIST and isinstance(value, list):
            result[key] = [_one_draft(item, bad, False) for item in value]
        elif key in _SUBSCHEMA_MAP and isinstance(value, Mapping):
            result[key] = {k: _one_draft(v, bad, False) for k, v in value.items()}
        else:
            result[key] = value
    return result


def _draft_error(value: Any) -> str:
    return f"$schema {repr(value)[:80]} must be the URI of a draft, a string"


class _TooSlowError(Exception):
    """A check of arguments ran past ``ARGUMENTS_BUDGET``."""


class _CpuDeadline:
    """A budget of CPU time (``time.thread_time``) read mostly from the wall clock.

    ``thread_time`` is a system call (``perf_counter`` is not): on a busy
    machine each one is a chance for the kernel to run another process first,
    and a turn's check made eight of them between its two messages. A
    thread's CPU time grows no faster than the wall clock, so the CPU clock is
    read only once the wall clock says the budget could be spent: the check
    gives up exactly when it did before, with one system call for a check
    that fits (docs/performance.md, "The arguments' CPU clock").
    """

    __slots__ = ("_cpu", "_wall")

    def __init__(self, seconds: float) -> None:
        """Start a budget of ``seconds`` of this thread's CPU time."""
        self._cpu = time.thread_time() + seconds
        self._wall = time.perf_counter() + seconds

    def check(self) -> None:
        """Raise ``_TooSlowError`` once the budget's CPU time is spent."""
        if time.perf_counter() <= self._wall:
            return
        cpu = time.thread_time()
        if cpu > self._cpu:
            raise _TooSlowError
        # Preempted meanwhile: what is left of the CPU time, on the wall clock.
        self._wall = time.perf_counter() + (self._cpu - cpu)


# The budget of the running check of arguments, if any.
_arguments_deadline: ContextVar[_CpuDeadline | None] = ContextVar(
    "soul_arguments_deadline", default=None
)


KeywordCheck = Callable[[Any, Any, Any, Any], Any]


def _timed(check: KeywordCheck) -> KeywordCheck:
    """Return a keyword's check that first makes sure time is left."""

    def timed(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        if (deadline := _arguments_deadline.get()) is not None:
            deadline.check()
        return check(validator, value, instance, schema)

    return timed


@functools.cache
def _bounded_class(cls: Any) -> Any:
    """Return ``cls`` with Soul's bounded keywords, each one under the deadline.

    ``pattern``, ``uniqueItems`` and ``multipleOf`` are Soul's own; every
    keyword checks the deadline of ``Skill.argument_errors`` before it runs.
    """
    keywords: dict[str, KeywordCheck] = dict(cls.VALIDATORS)
    keywords.update(
        {
            "pattern": _bounded_pattern,
            "uniqueItems": _unique_items,
            "multipleOf": _multiple_of,
        }
    )
    # types-jsonschema leaves extend() unannotated; it returns a validator class.
    return validators.extend(  # type: ignore[no-untyped-call]
        cls, {keyword: _timed(check) for keyword, check in keywords.items()}
    )


@functools.lru_cache(maxsize=1024)
def _compile_schema(canonical: str) -> Any:
    """Return a validator for a schema (given as JSON text), or why it is invalid.

    Checking a schema against its meta-schema costs milliseconds; bodies of one
    model announce the same schemas, and failures are remembered too, so a flood
    of snapshots costs little.
    """
    schema = json.loads(canonical)
    if '"patternProperties"' in canonical:
        # jsonschema matches those keys with `re`, beyond any time bound.
        return "patternProperties is not supported"
    # Never validator_for: it hashes and URL-parses whatever $schema holds.
    draft = schema.get("$schema", "")
    if not isinstance(draft, str):
        return _draft_error(draft)
    cls = _DRAFTS.get(draft, validators.Draft202012Validator)
    bad: list[Any] = []
    validated = _one_draft(schema, bad)
    if bad:
        return _draft_error(bad[0])
    # Compile every pattern now (parsing runs off the event loop), so none
    # compiles during a call and a hostile one refuses the skill. Before the
    # meta-schema check, which compiles them with `re` (recursive, unbounded).
    try:
        for pattern in _patterns(schema):
            safe_regex.compile_untrusted(pattern)
    except safe_regex.UnsafeRegexError as err:
        return f"unusable pattern: {err}"
    try:
        cls.check_schema(schema)
    except jsonschema_exceptions.SchemaError as err:
        return err.message
    except RecursionError:  # pragma: no cover - the depth limits come first
        return "the schema is too deeply nested to check"
    return _bounded_class(cls)(validated)


def _patterns(node: Any) -> Iterator[str]:
    """Yield the ``pattern`` keywords of a schema."""
    if isinstance(node, Mapping):
        if isinstance(pattern := node.get("pattern"), str):
            yield pattern
        for value in node.values():
            yield from _patterns(value)
    elif isinstance(node, list):
        for item in node:
            yield from _patterns(item)


def _bounded_pattern(
    validator: Any, pattern: str, instance: Any, schema: Mapping[str, Any]
) -> Iterator[jsonschema_exceptions.ValidationError]:
    """Replace jsonschema's ``pattern`` keyword: same rule, bounded in time."""
    if not validator.is_type(instance, "string"):
        return
    try:
        matched = safe_regex.search(pattern, instance, timeout=PATTERN_TIMEOUT)
    except safe_regex.UnsafeRegexError as err:
        yield jsonschema_exceptions.ValidationError(f"unusable pattern: {err}")
        return
    if matched is None:
        yield jsonschema_exceptions.ValidationError(
            f"{instance!r} does not match {pattern!r}"
        )


def _multiple_of(
    validator: Any, divisor: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[jsonschema_exceptions.ValidationError]:
    """Replace jsonschema's ``multipleOf``: same rule, exact where floats overflow.

    jsonschema divides before it guards against overflow, so an integer beyond
    the float range (JSON allows them) raised ``OverflowError``.
    """
    if not validator.is_type(instance, "number"):
        return
    try:
        if isinstance(divisor, float):
            quotient = instance / divisor
            failed = int(quotient) != quotient
        else:
            failed = bool(instance % divisor)
    except OverflowError:
        failed = (Fraction(instance) / Fraction(divisor)).denominator != 1
    if failed:
        yield jsonschema_exceptions.ValidationError(
            f"{instance!r} is not a multiple of {divisor}"
        )


class _NotJsonError(Exception):
    """A value that is not plain JSON (only Python callers pass those)."""


def _json_key(value: Any) -> Any:
    """Return a hashable key equal for values JSON Schema calls equal.

    1 and 1.0 are equal; true is not 1; arrays compare item by item, objects
    key by key.
    """
    if value is None or value is True or value is False:
        return (value,)
    if isinstance(value, str):
        return ("s", value)
    if isinstance(value, int | float):
        return ("n", value)
    if isinstance(value, list):
        return ("a", tuple(map(_json_key, value)))
    if isinstance(value, Mapping):
        return ("o", frozenset((k, _json_key(v)) for k, v in value.items()))
    raise _NotJsonError


def _unique_items(
    validator: Any, unique: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[jsonschema_exceptions.ValidationError]:
    """Replace jsonschema's ``uniqueItems``: same rule, in linear time.

    jsonschema compares every pair when the items do not sort (a string among
    numbers): seconds for a few thousand items. Hashing a key per item gives
    the same answer (JSON equality) at once.
    """
    if not unique or not validator.is_type(instance, "array"):
        return
    try:
        keys = [_json_key(item) for item in instance]
    except _NotJsonError:
        # Not from JSON: jsonschema's own rule (quadratic, but no body sends it).
        yield from validators.Draft202012Validator.VALIDATORS["uniqueItems"](
            validator, unique, instance, schema
        )
        return
    if len(set(keys)) != len(keys):
        yield jsonschema_exceptions.ValidationError(
            f"{instance!r} has non-unique elements"
        )
