"""Payloads of the Soul-Body protocol v2, parsed once at the edge into dataclasses.

Everything a body sends is untrusted: each parser either returns a snapshot the
rest of Soul can trust or raises ``ProtocolError`` with a reason fit for a log
line. Spec: ``soul-body-protocol-v2.md`` §3.3 to §3.10.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from fractions import Fraction
import functools
import json
import re
import time
from typing import Any

from jsonschema import exceptions as jsonschema_exceptions, validators

from . import safe_regex, untrusted
from .shared import Shared, content_key

# Limits on what one message may carry (docs/security.md lists them all).
MAX_PAYLOAD_BYTES = 256 * 1024
MAX_JSON_DEPTH = 32
MAX_SKILLS = 64
MAX_CATALOG_ENTRIES = 256
MAX_SCHEMA_DEPTH = 12
MAX_SCHEMA_BYTES = 16 * 1024  # one skill's input_schema, its $refs inlined
MAX_TEXT_LENGTH = 1024
MAX_HINT_LENGTH = 64
MAX_INTENT_ID_LENGTH = 128
MAX_ONLINE_BYTES = 64
PATTERN_TIMEOUT = 0.01  # seconds one schema pattern may take on one string
PATTERN_BUDGET = 0.015  # seconds all schema patterns may take on one set of arguments
ARGUMENTS_BUDGET = 0.02  # seconds of CPU one check of a set of arguments may take
SKILL_NAME_RE = re.compile(r"[a-z][a-z0-9_]{0,63}")
EMPTY_OBJECT_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


class ProtocolError(ValueError):
    """A message that breaks the protocol; the text says why."""


def decode_json(payload: bytes | str) -> Any:
    """Decode a JSON payload: UTF-8, within the size and depth limits."""
    try:
        return untrusted.loads(
            payload, max_bytes=MAX_PAYLOAD_BYTES, max_depth=MAX_JSON_DEPTH
        )
    except untrusted.UntrustedInputError as err:
        raise ProtocolError(str(err)) from None


def is_empty(payload: bytes | str) -> bool:
    """Return whether a payload is empty (a cleared retained message)."""
    return len(payload) == 0


def parse_online(payload: bytes | str) -> bool:
    """Return True for online, False for offline (§3.4: online/offline, true/false, 1/0)."""
    if len(payload) > MAX_ONLINE_BYTES:
        raise ProtocolError(f"online payload longer than {MAX_ONLINE_BYTES} bytes")
    text = payload.decode(errors="replace") if isinstance(payload, bytes) else payload
    value = text.strip().strip('"').lower()
    if value in ("online", "true", "1"):
        return True
    if value in ("offline", "false", "0"):
        return False
    raise ProtocolError(
        f"online payload {text[:40]!r} is none of online/offline/true/false/1/0"
    )


def _depth(value: Any, limit: int) -> int:
    """Return the nesting depth of a JSON value, stopping past ``limit``."""
    if limit < 0:
        return 1
    if isinstance(value, Mapping):
        return 1 + max((_depth(v, limit - 1) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v, limit - 1) for v in value), default=0)
    return 0


def _version(data: Mapping[str, Any], key: str) -> int:
    value = data.get(key, 0)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ProtocolError(f"{key} must be a whole number >= 0, not {value!r}")
    return value


def _check_terminal_id(data: Mapping[str, Any], terminal_id: str) -> None:
    claimed = data.get("terminal_id")
    if claimed is not None and claimed != terminal_id:
        raise ProtocolError(
            f"terminal_id {claimed!r} in the payload does not match the topic's {terminal_id!r}"
        )


def _envelope(
    terminal_id: str, data: Any, key: str, limit: int
) -> tuple[Mapping[str, Any], list[Any]]:
    """Return a snapshot's envelope and its ``key`` array (a bare array is legacy)."""
    if isinstance(data, list):
        envelope: Mapping[str, Any] = {key: data}
    elif isinstance(data, Mapping):
        envelope = data
        _check_terminal_id(envelope, terminal_id)
    else:
        raise ProtocolError(f"{key} payload must be an object or an array")
    items = envelope.get(key)
    if not isinstance(items, list):
        raise ProtocolError(f"{key} payload has no {key} array")
    if len(items) > limit:
        raise ProtocolError(f"{len(items)} {key} entries exceed the limit of {limit}")
    return envelope, items


def _optional_text(data: Mapping[str, Any], key: str) -> str | None:
    """Return a descriptive field (model, firmware) as one clean line, or None."""
    value = data.get(key)
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return untrusted.clean(str(value).strip(), 128, multiline=False) or None
    return None


@dataclass(frozen=True, slots=True)
class Skill:
    """One skill of a body: a tool with a JSON-Schema for its arguments."""

    name: str
    description: str
    input_schema: dict[str, Any]
    validator: Any = field(compare=False, repr=False)

    @property
    def required(self) -> list[str]:
        """Return the names of the required arguments."""
        required = self.input_schema.get("required", [])
        return (
            [r for r in required if isinstance(r, str)]
            if isinstance(required, list)
            else []
        )

    @property
    def properties(self) -> dict[str, dict[str, Any]]:
        """Return the argument schemas by name."""
        props = self.input_schema.get("properties", {})
        return (
            {k: v for k, v in props.items() if isinstance(v, dict)}
            if isinstance(props, dict)
            else {}
        )

    def argument_errors(self, arguments: Any) -> list[str]:
        """Return why ``arguments`` do not fit the schema (empty when they do).

        Every ``pattern`` of one check shares ``PATTERN_BUDGET`` seconds, and
        the whole check ``ARGUMENTS_BUDGET`` seconds of CPU (long arrays under
        ``anyOf`` took seconds): past it the arguments are reported invalid.
        Nothing is raised: should jsonschema fail on some input no schema
        check foresaw, the arguments are reported invalid with the reason.
        """
        deadline = _arguments_deadline.set(time.thread_time() + ARGUMENTS_BUDGET)
        try:
            with safe_regex.budget(PATTERN_BUDGET):
                return sorted(
                    f"{'/'.join(map(str, error.absolute_path)) or '(arguments)'}: "
                    f"{error.message[:200]}"
                    for error in self.validator.iter_errors(arguments)
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


def parse_skill(raw: Any) -> Skill:
    """Check one entry of ``skills[]`` and return it as a ``Skill``."""
    if not isinstance(raw, Mapping):
        raise ProtocolError("a skill must be a JSON object")
    name = raw.get("name")
    if not isinstance(name, str) or not SKILL_NAME_RE.fullmatch(name):
        raise ProtocolError(
            f"skill name {name!r} is not snake_case (a-z, 0-9, _; up to 64)"
        )
    description = raw.get("description", "")
    if not isinstance(description, str):
        raise ProtocolError(f"skill {name}: description must be a string")
    try:
        schema, validator = parse_input_schema(raw.get("input_schema"))
    except ProtocolError as err:
        raise ProtocolError(f"skill {name}: {err}") from None
    skill = Skill(
        name, untrusted.clean(description, MAX_TEXT_LENGTH), schema, validator
    )
    key = content_key((skill.name, skill.description, skill.input_schema))
    return skill if key is None else _shared_skills.keep(key, skill)


# Bodies of one model announce the same skills: one ``Skill`` serves them all.
_shared_skills: Shared[Skill] = Shared(256)


def parse_input_schema(schema: Any) -> tuple[dict[str, Any], Any]:
    """Check a tool's argument schema; return it self-contained and its validator.

    Shared by the bodies' skills and the MCP servers' tools: bounded in size
    and depth, local ``$ref`` inlined, an object schema, valid against its
    meta-schema, every ``pattern`` compiled safely. Raise ``ProtocolError``.

    The draft is the root's ``$schema``: draft-04, -06, -07, 2019-09 or
    2020-12 (the default), named by the URI of its meta-schema (with or
    without the empty fragment ``#``). Draft-03 is refused: its meta-schema
    lets any type name through, which validation then cannot handle. A
    ``$schema`` in a subschema must name one of those drafts too; it changes
    nothing, the whole schema is checked and validated as the root's draft.
    """
    if schema is None:
        schema = EMPTY_OBJECT_SCHEMA
    if not isinstance(schema, Mapping):
        raise ProtocolError("input_schema must be a JSON object")
    try:
        untrusted.check_json(
            schema,
            max_bytes=MAX_PAYLOAD_BYTES,
            max_depth=MAX_JSON_DEPTH,
            what="input_schema",
        )
        schema = inline_refs(dict(schema))
    except (SchemaRefError, untrusted.UntrustedInputError) as err:
        raise ProtocolError(str(err)) from None
    if _depth(schema, MAX_SCHEMA_DEPTH) > MAX_SCHEMA_DEPTH:
        raise ProtocolError(f"input_schema is nested deeper than {MAX_SCHEMA_DEPTH}")
    if schema.get("type", "object") != "object":
        raise ProtocolError("input_schema must describe an object")
    canonical = json.dumps(schema, sort_keys=True)
    if len(canonical) > MAX_SCHEMA_BYTES:
        raise ProtocolError(f"input_schema is larger than {MAX_SCHEMA_BYTES} bytes")
    validator = _compile_schema(canonical)
    if isinstance(validator, str):
        raise ProtocolError(f"invalid input_schema: {validator}")
    return schema, validator


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
# (with and without the empty fragment). Draft-03 is left out: its meta-schema
# accepts any type name, and validating with an unknown one raises.
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
_DRAFT_NAMES = "draft-04, -06, -07, 2019-09 or 2020-12"

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
            if not isinstance(value, str) or value not in _DRAFTS:
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
    shown = repr(value)[:80]
    return f"$schema {shown} is not one of the drafts Soul validates ({_DRAFT_NAMES})"


# The CPU time (time.thread_time) past which the running check gives up.
_arguments_deadline: ContextVar[float | None] = ContextVar(
    "soul_arguments_deadline", default=None
)


class _TooSlowError(Exception):
    """A check of arguments ran past ``ARGUMENTS_BUDGET``."""


KeywordCheck = Callable[[Any, Any, Any, Any], Any]


def _timed(check: KeywordCheck) -> KeywordCheck:
    """Return a keyword's check that first makes sure time is left."""

    def timed(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        deadline = _arguments_deadline.get()
        if deadline is not None and time.thread_time() > deadline:
            raise _TooSlowError
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
    draft = schema.get("$schema", validators.Draft202012Validator.META_SCHEMA["$id"])
    cls = _DRAFTS.get(draft) if isinstance(draft, str) else None
    if cls is None:
        return _draft_error(draft)
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


@dataclass(frozen=True, slots=True)
class SkillsSnapshot:
    """What a body can do (§3.3)."""

    terminal_id: str
    skill_version: int
    skills: tuple[Skill, ...]
    soul_hint: str | None = None
    # (name or index, reason) of the skills left out of this snapshot.
    rejected: tuple[tuple[str, str], ...] = ()
    legacy: bool = False
    model: str | None = None
    manufacturer: str | None = None
    firmware: str | None = None

    def skill(self, name: str) -> Skill | None:
        """Return the skill called ``name``."""
        return next((s for s in self.skills if s.name == name), None)


def parse_skills(terminal_id: str, data: Any) -> SkillsSnapshot:
    """Parse a ``skills`` payload (object form, or the legacy bare array).

    A bad skill is left out with its reason in ``rejected``; the rest of the
    snapshot is kept. The whole snapshot is refused when the envelope is wrong
    (not an object or array, mismatched ``terminal_id``, bad ``skill_version``,
    ``skills`` missing or too long).
    """
    envelope, raw_skills = _envelope(terminal_id, data, "skills", MAX_SKILLS)
    skills: list[Skill] = []
    rejected: list[tuple[str, str]] = []
    for index, raw in enumerate(raw_skills):
        label = raw.get("name") if isinstance(raw, Mapping) else None
        label = label if isinstance(label, str) else f"#{index}"
        try:
            skill = parse_skill(raw)
        except ProtocolError as err:
            rejected.append((label[:64], str(err)))
            continue
        if any(s.name == skill.name for s in skills):
            rejected.append((skill.name, f"duplicate skill name {skill.name}"))
            continue
        skills.append(skill)
    soul_hint = envelope.get("soul_hint")
    if soul_hint is not None and not untrusted.is_text(soul_hint, MAX_HINT_LENGTH):
        raise ProtocolError(
            f"soul_hint must be one line of at most {MAX_HINT_LENGTH} characters"
        )
    return SkillsSnapshot(
        terminal_id=terminal_id,
        skill_version=_version(envelope, "skill_version"),
        skills=tuple(skills),
        soul_hint=soul_hint.strip() or None if soul_hint else None,
        rejected=tuple(rejected),
        legacy=isinstance(data, list),
        model=_optional_text(envelope, "model"),
        manufacturer=_optional_text(envelope, "manufacturer"),
        firmware=_optional_text(envelope, "firmware"),
    )


@dataclass(frozen=True, slots=True)
class IntentCatalogSnapshot:
    """The intents a body can handle directly (§3.10); the intent filter reads them."""

    terminal_id: str
    catalog_version: int
    intents: tuple[dict[str, Any], ...]
    # The intent filter's compiled form, made when the snapshot is parsed
    # (off the event loop), so no chat turn ever compiles a catalog.
    compiled: Any = field(default=None, compare=False, repr=False)


def parse_intent_catalog(terminal_id: str, data: Any) -> IntentCatalogSnapshot:
    """Parse an ``intent_catalog`` payload (object form, or a bare array).

    Entries need a unique string ``id``; their match and slot rules are checked
    by the intent filter when it compiles the catalog.
    """
    envelope, entries = _envelope(
        terminal_id, data, "intent_catalog", MAX_CATALOG_ENTRIES
    )
    seen: set[str] = set()
    for entry in entries:
        if not isinstance(entry, Mapping) or not untrusted.is_text(
            entry.get("id"), MAX_INTENT_ID_LENGTH
        ):
            raise ProtocolError(
                "every intent_catalog entry needs a string id (one line of at "
                f"most {MAX_INTENT_ID_LENGTH} characters)"
            )
        if entry["id"] in seen:
            raise ProtocolError(f"duplicate intent id {entry['id']!r}")
        seen.add(entry["id"])
    return IntentCatalogSnapshot(
        terminal_id=terminal_id,
        catalog_version=_version(envelope, "catalog_version"),
        intents=tuple(dict(e) for e in entries),
    )


@dataclass(frozen=True, slots=True)
class InvokeResult:
    """The outcome of one invocation (§3.6); Soul makes failed ones for timeouts."""

    request_id: str
    ok: bool
    output: Any = None
    error: str | None = None


def parse_result(request_id: str, data: Any) -> InvokeResult:
    """Parse a ``result/{request_id}`` payload."""
    if not isinstance(data, Mapping):
        raise ProtocolError("result payload must be a JSON object")
    if data.get("request_id") != request_id:
        raise ProtocolError(
            f"result request_id {data.get('request_id')!r} does not match the topic's {request_id!r}"
        )
    ok = data.get("ok")
    if not isinstance(ok, bool):
        raise ProtocolError("result needs a boolean ok")
    error = data.get("error")
    if not ok and (not isinstance(error, str) or not error):
        raise ProtocolError("a result with ok=false must carry an error")
    return InvokeResult(
        request_id=request_id,
        ok=ok,
        output=data.get("output"),
        error=untrusted.clean(error, MAX_TEXT_LENGTH)
        if isinstance(error, str) and error
        else None,
    )


def invoke_payload(request_id: str, skill: str, arguments: Mapping[str, Any]) -> str:
    """Return the JSON of an ``invoke`` message."""
    return json.dumps(
        {"request_id": request_id, "skill": skill, "arguments": dict(arguments)},
        ensure_ascii=False,
    )


def status_payload(status: str, message: str, session_id: str | None, ts: str) -> str:
    """Return the JSON of a ``status`` message (§3.7)."""
    body: dict[str, Any] = {"status": status, "message": message, "ts": ts}
    if session_id is not None:
        body["session_id"] = session_id
    return json.dumps(body, ensure_ascii=False)


SYSTEM_DECAY_TICK = "system_decay_tick"


def utc_ts(epoch: float) -> str:
    """Return the protocol's ``ts`` for an epoch time: UTC to the second."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def emotion_update_payload(
    *,
    session_id: str,
    terminal_id: str,
    soul_id: str,
    user_emotion: Mapping[str, Any],
    soul_emotion: Mapping[str, float],
    exec_probability: float,
    exec_mode: str,
    ts: str,
) -> dict[str, Any]:
    """Return the body of an ``emotion_update`` message (§3.8)."""
    return {
        "session_id": session_id,
        "terminal_id": terminal_id,
        "soul_id": soul_id,
        "user_emotion": dict(user_emotion),
        "soul_emotion": dict(soul_emotion),
        "exec_probability": exec_probability,
        "exec_mode": exec_mode,
        "ts": ts,
    }


def intent_action_payload(
    *,
    request_id: str,
    session_id: str,
    terminal_id: str,
    soul_id: str,
    intents: list[dict[str, Any]],
    exec_probability: float,
    ts: str,
) -> dict[str, Any]:
    """Return the body of an ``intent_action`` message (§3.9)."""
    return {
        "request_id": request_id,
        "session_id": session_id,
        "terminal_id": terminal_id,
        "soul_id": soul_id,
        "intents": intents,
        "exec_probability": exec_probability,
        "ts": ts,
    }
