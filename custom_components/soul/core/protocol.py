"""Payloads of the Soul-Body protocol v2, parsed once at the edge into dataclasses.

Everything a body sends is untrusted: each parser either returns a snapshot the
rest of Soul can trust or raises ``ProtocolError`` with a reason fit for a log
line. Spec: ``soul-body-protocol-v2.md`` §3.3 to §3.10.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
import json
import re
from typing import Any

from . import json_schema, untrusted
from .shared import Shared, content_key

# Limits on what one message may carry (docs/security.md lists them all).
MAX_PAYLOAD_BYTES = 256 * 1024
MAX_JSON_DEPTH = 32
MAX_SKILLS = 64
MAX_CATALOG_ENTRIES = 256
MAX_TEXT_LENGTH = 1024
MAX_HINT_LENGTH = 64
MAX_INTENT_ID_LENGTH = 128
MAX_ONLINE_BYTES = 64
SKILL_NAME_RE = re.compile(r"[a-z][a-z0-9_]{0,63}")


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

        Bounded and never raising: ``json_schema.argument_errors``.
        """
        return json_schema.argument_errors(self.validator, arguments)


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

    Shared by the bodies' skills and the MCP servers' tools: within a
    message's size and depth, then ``json_schema.compile_input_schema`` (local
    ``$ref`` inlined, bounded, an object schema, valid against its draft's
    meta-schema, every ``pattern`` compiled safely). Raise ``ProtocolError``.
    """
    if schema is None:
        schema = json_schema.EMPTY_OBJECT_SCHEMA
    if not isinstance(schema, Mapping):
        raise ProtocolError("input_schema must be a JSON object")
    try:
        untrusted.check_json(
            schema,
            max_bytes=MAX_PAYLOAD_BYTES,
            max_depth=MAX_JSON_DEPTH,
            what="input_schema",
        )
        return json_schema.compile_input_schema(schema)
    except (json_schema.InvalidSchemaError, untrusted.UntrustedInputError) as err:
        raise ProtocolError(str(err)) from None


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
    # Made by Soul (a timeout, an invalid answer), not sent by the body: a
    # body's own {"error": "timeout"} is the body's words.
    by_soul: bool = False


def parse_result(request_id: str, data: Any) -> InvokeResult:
    """Parse a ``result/{request_id}`` payload."""
    if not isinstance(data, Mapping):
        raise ProtocolError("result payload must be a JSON object")
    if (answered := data.get("request_id")) != request_id:
        # The body's value, short: it goes into a log line.
        shown = repr(answered[:64]) if isinstance(answered, str) else "no string"
        raise ProtocolError(
            f"result request_id {shown} does not match the topic's {request_id!r}"
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
        output=untrusted.clean_json(data.get("output")),
        # One line: it becomes an action's error message, which Home
        # Assistant logs and shows (a line feed would forge a log line).
        error=untrusted.clean(error, MAX_TEXT_LENGTH, multiline=False)
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
