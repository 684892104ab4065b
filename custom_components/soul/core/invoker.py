"""Skill invocation: ``invoke/{request_id}`` out, ``result/{request_id}`` back (§3.6)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from . import untrusted
from .body_stats import InvokeStats
from .logs import trace_logger
from .protocol import (
    InvokeResult,
    ProtocolError,
    decode_json,
    invoke_payload,
    parse_result,
)
from .random_ids import uuid4_hex
from .registry import TerminalRegistry
from .sent import SentSkill, SentSkills
from .terminal import Terminal
from .topics import QOS_RETAIN, Kind, Publish, Topics

_LOGGER = trace_logger(__name__)

DEFAULT_TIMEOUT = 8.0
TIMEOUT_ERROR = "timeout"
# The body answered, but not with a result of §3.6 (the log says why).
INVALID_RESULT_ERROR = "invalid_result"
MAX_ARGUMENTS_BYTES = 64 * 1024


class InvokeError(Exception):
    """An invocation that could not be sent; ``key`` names the reason."""

    key = "invoke_failed"

    def __init__(self, message: str, **placeholders: str) -> None:
        """Keep the placeholders for a translated message."""
        super().__init__(message)
        self.placeholders = placeholders


class UnknownTerminalError(InvokeError):
    """No such terminal."""

    key = "unknown_terminal"


class TerminalOfflineError(InvokeError):
    """The terminal is offline or stale."""

    key = "terminal_offline"


class UnknownSkillError(InvokeError):
    """The terminal has no such skill."""

    key = "unknown_skill"


class InvalidArgumentsError(InvokeError):
    """The arguments do not fit the skill's input_schema."""

    key = "invalid_arguments"


class PublishFailedError(InvokeError):
    """The invocation could not be published (the broker is unreachable)."""

    key = "publish_failed"


class Invoker:
    """Sends invocations and pairs them with their results."""

    def __init__(
        self,
        registry: TerminalRegistry,
        topics: Topics,
        publish: Publish,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        new_request_id: Callable[[], str] = uuid4_hex,
        run_blocking: Callable[..., Awaitable[Any]] | None = None,
        sent: SentSkills | None = None,
    ) -> None:
        """Invoke skills of ``registry``'s terminals through ``publish``.

        Arguments are checked against the schema with ``run_blocking`` (Home
        Assistant's executor): a hostile schema or argument set never holds
        the event loop. Every invocation that succeeds is announced on
        ``sent`` (``core.sent``), where other senders announce theirs too.
        """
        self.sent = sent if sent is not None else SentSkills()
        self._run_blocking = run_blocking or asyncio.to_thread
        self._registry = registry
        self._topics = topics
        self._publish = publish
        self.timeout = timeout
        self._new_request_id = new_request_id
        self._pending: dict[tuple[str, str], asyncio.Future[InvokeResult]] = {}
        # Per terminal: invocations, failures, latency (the panel's Bodies tab).
        self.stats = InvokeStats()

    @property
    def pending(self) -> int:
        """Return how many invocations await their result."""
        return len(self._pending)

    def reachable(self, terminal_id: str) -> Terminal:
        """Return the terminal if Soul may make it act now, else raise.

        The one rule for ``invoke`` and ``intent_action`` alike: the body has
        announced its skills and is online and heard within the heartbeat TTL.
        Raises ``UnknownTerminalError`` or ``TerminalOfflineError``.
        """
        terminal = self._registry.get(terminal_id)
        if terminal is None or terminal.skills is None:
            raise UnknownTerminalError(
                f"unknown terminal {terminal_id}", terminal=terminal_id
            )
        if not terminal.available:
            raise TerminalOfflineError(
                f"terminal {terminal_id} is offline", terminal=terminal_id
            )
        return terminal

    async def invoke(
        self,
        terminal_id: str,
        skill_name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
    ) -> InvokeResult:
        """Validate, publish and await the result; a timeout gives a failed result.

        Raises ``InvokeError`` subclasses before anything is published.
        """
        arguments = {} if arguments is None else arguments
        terminal = self.reachable(terminal_id)
        assert terminal.skills is not None  # noqa: S101 - reachable() checked it
        skill = terminal.skills.skill(skill_name)
        if skill is None:
            raise UnknownSkillError(
                f"terminal {terminal_id} has no skill {skill_name}",
                terminal=terminal_id,
                skill=skill_name,
            )
        try:
            untrusted.check_json(
                arguments, max_bytes=MAX_ARGUMENTS_BYTES, what="the arguments"
            )
        except untrusted.UntrustedInputError as err:
            raise InvalidArgumentsError(
                str(err), skill=skill_name, errors=str(err)
            ) from None
        errors = await self._run_blocking(skill.argument_errors, dict(arguments))
        if errors:
            raise InvalidArgumentsError(
                f"invalid arguments for {skill_name}: {'; '.join(errors)}",
                skill=skill_name,
                errors="; ".join(errors),
            )
        request_id = self._new_request_id()
        key = (terminal_id, request_id)
        future: asyncio.Future[InvokeResult] = (
            asyncio.get_running_loop().create_future()
        )
        self._pending[key] = future
        started = asyncio.get_running_loop().time()
        try:
            qos, retain = QOS_RETAIN[Kind.INVOKE]
            try:
                await self._publish(
                    self._topics.topic(terminal_id, Kind.INVOKE, request_id),
                    invoke_payload(request_id, skill_name, arguments),
                    qos,
                    retain,
                )
            except Exception as err:  # noqa: BLE001 - whatever the transport raised
                _LOGGER.warning("Could not publish invoke to %s: %s", terminal_id, err)
                self.stats.record(
                    terminal_id, skill_name, ok=False, elapsed=None, error="publish"
                )
                raise PublishFailedError(
                    f"could not reach terminal {terminal_id}: {err}",
                    terminal=terminal_id,
                ) from None
            async with asyncio.timeout(self.timeout if timeout is None else timeout):
                result = await future
        except TimeoutError:
            _LOGGER.warning(
                "Terminal %s did not answer %s (%s) in time",
                terminal_id,
                skill_name,
                request_id,
            )
            self.stats.record(
                terminal_id, skill_name, ok=False, elapsed=None,
                error=TIMEOUT_ERROR, timed_out=True,
            )  # fmt: skip
            return InvokeResult(request_id, ok=False, error=TIMEOUT_ERROR, by_soul=True)
        finally:
            self._pending.pop(key, None)
        self.stats.record(
            terminal_id,
            skill_name,
            ok=result.ok,
            elapsed=asyncio.get_running_loop().time() - started,
            error=None if result.ok else str(result.error)[:200],
        )
        if result.ok:  # a failure or a timeout claims nothing
            self.sent.announce(
                SentSkill(terminal_id, skill_name, dict(arguments), Kind.INVOKE)
            )
        return result

    def awaits(self, terminal_id: str, request_id: str) -> bool:
        """Return whether an invocation waits for this result."""
        future = self._pending.get((terminal_id, request_id))
        return future is not None and not future.done()

    def handle_result(
        self, terminal_id: str, request_id: str, payload: bytes | str
    ) -> None:
        """Resolve the invocation a ``result`` answers; log and drop anything else."""
        if not self.awaits(terminal_id, request_id):
            _LOGGER.info(
                "Dropped result %s of terminal %s: no invocation waits for it",
                request_id,
                terminal_id,
            )
            return
        self._resolve(terminal_id, request_id, _parse(request_id, payload))

    async def async_handle_result(
        self,
        terminal_id: str,
        request_id: str,
        payload: bytes | str,
        run_blocking: Callable[..., Awaitable[Any]],
    ) -> None:
        """Like ``handle_result``, decoding a large payload with ``run_blocking``."""
        parsed = await run_blocking(_parse, request_id, payload)
        if self.awaits(terminal_id, request_id):
            self._resolve(terminal_id, request_id, parsed)

    def _resolve(
        self, terminal_id: str, request_id: str, parsed: InvokeResult | str
    ) -> None:
        """Answer the waiting invocation; an invalid result fails it at once.

        The topic names the request, so the body did answer: waiting out the
        timeout would only hide its mistake (a firmware's result without
        ``ok``) behind a "did not answer in time".
        """
        if isinstance(parsed, str):
            _LOGGER.warning(
                "Terminal %s answered %s with an invalid result: %s",
                terminal_id,
                request_id,
                parsed,
            )
            parsed = InvokeResult(
                request_id, ok=False, error=INVALID_RESULT_ERROR, by_soul=True
            )
        self._pending[(terminal_id, request_id)].set_result(parsed)


def _parse(request_id: str, payload: bytes | str) -> InvokeResult | str:
    """Return the parsed result, or why it is invalid (thread-safe)."""
    try:
        return parse_result(request_id, decode_json(payload))
    except ProtocolError as err:
        return str(err)
