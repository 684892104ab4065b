"""The chat pipeline (§2, §4.2): an utterance becomes emotion, intent, action and a reply.

``ChatPipeline.chat(body)`` validates a §4.2.1 request (``chat_request``),
records the user turn in its ``Session`` (``session``), moves the soul's
emotion (``SoulHub.user_turn``, which publishes ``emotion_update``), runs the
intent filter on the terminal's catalog and routes on ``decision.action``
only:

- ``execute_intents`` — ``intent_route.IntentRoute``: the intents' arguments
  are checked against their skills' schemas, and one ``intent_action``
  (§3.9) goes to the body, or the soul asks first or declines, by its
  execution mode.
- ``no_action`` — an empty reply.
- ``fallback_reasoning`` — the model (``reasoning.Reasoner``).

A turn's messages leave before its bookkeeping: after its ``emotion_update``
and after its ``intent_action`` the turn awaits ``flush`` (the transport
sends them), and the listeners of the soul and of the decision (Home
Assistant's entities) hear of the turn once the ``intent_action`` has left,
or before the model is asked, or at the turn's end.

The reply ``<NO_REPLY>`` / ``NO_REPLY`` / ``[NO_REPLY]`` becomes ``""``;
``context_summary`` is the session so far (``Session.rolling_summary``). The
sessions, their storage and idle summaries are ``sessions.Sessions``. Home
Assistant's ways in (Assist, Star) may speak to a soul without a body
(``soul_only``): it answers with the model and the caller's tools.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import untrusted
from .access import SYSTEM, Principal
from .chat_phrases import CONFIRM_YES, normalize_reply
from .chat_request import (
    NO_SOUL_ERROR,
    ChatError,
    ChatRequest,
    SessionOwnerError,
    SoulMismatchError,
    UnknownSoulIdError,
    UnknownTerminalIdError,
    parse_chat_request,
    refuse_private_soul,
)
from .chat_tools import ChatModel, ExtraTools
from .cognition.events import EventBus
from .cognition.navigator import Navigator
from .cognition.notices import notice
from .cognition.trace import TurnTrace
from .emotion.habituation import source_of
from .intent_filter import IntentFilterError
from .intent_filter.request import MAX_COMMAND_LENGTH
from .intent_route import IntentRoute
from .invoker import Invoker
from .logs import trace_logger, traced
from .markdown import markdown_tame
from .memory.manager import MemoryManager
from .reasoning import DEFAULT_MAX_ROUNDS, MAX_REPLY, Reasoner
from .registry import TerminalRegistry
from .session import Session
from .sessions import Sessions
from .soul import NoSoulError, Soul
from .souls import SoulHub
from .topics import Flush, Publish, Topics, sent_at_once
from .transcript import Transcript
from .turn import MEDIA_TYPES, Turn, tell_held

_LOGGER = trace_logger(__name__)


# Channels whose session ids Soul makes itself ("panel-<user>-<soul>",
# "star-<client type>-<user>-<client id>"): no other way in may use them.
CHANNEL_SESSIONS = frozenset({"panel", "star"})


class ChatPipeline:
    """Runs chat turns against the registry, the souls and an optional model."""

    def __init__(
        self,
        registry: TerminalRegistry,
        souls: SoulHub,
        invoker: Invoker,
        topics: Topics,
        publish: Publish,
        *,
        clock: Callable[[], float],
        model: ChatModel | None = None,
        default_timezone: Callable[[], str] = lambda: "UTC",
        max_rounds: int = DEFAULT_MAX_ROUNDS,
        follow_up: bool = False,
        on_dirty: Callable[[], None] = lambda: None,
        on_no_model: Callable[[], None] = lambda: None,
        on_auth_failed: Callable[[], None] = lambda: None,
        apply_hint: Callable[[str, str, Principal], str | None] = (
            lambda _t, _h, _c: None
        ),
        events: EventBus | None = None,
        flush: Flush = sent_at_once,
    ) -> None:
        """Wire the pipeline to its collaborators (all injectable for tests)."""
        self._registry = registry
        self._souls = souls
        self._flush = flush
        self._clock = clock
        self.intents = IntentRoute(
            registry, invoker, topics, publish, clock=clock, flush=flush
        )
        self.reasoner = Reasoner(
            registry,
            souls,
            invoker,
            topics,
            publish,
            clock=clock,
            model=model,
            max_rounds=max_rounds,
            follow_up=follow_up,
            on_no_model=on_no_model,
            on_auth_failed=on_auth_failed,
        )
        self._timezone = default_timezone
        # The event journal's bus (XingChen-V §2): every turn's events go there.
        self.events = events
        # The S-brain (XingChen-V §3.2), set by the glue when there is a model.
        self._navigator: Navigator | None = None
        self.sessions = Sessions(clock=clock, on_dirty=on_dirty)
        self.last_route: str | None = None
        # A chat request's soul_hint, applied as a body's (the glue may create
        # a soul for an administrator).
        self._apply_hint = apply_hint

    # The model's settings live with the reasoner; these are its handles.
    @property
    def model(self) -> ChatModel | None:
        """Return the language model (None: the soul says it cannot think)."""
        return self.reasoner.model

    @model.setter
    def model(self, model: ChatModel | None) -> None:
        self.reasoner.model = model
        self.reasoner.sees_images = None

    @property
    def memory(self) -> MemoryManager | None:
        """Return long-term memory (docs/memory.md), if any."""
        return self.reasoner.memory

    @memory.setter
    def memory(self, memory: MemoryManager | None) -> None:
        self.reasoner.memory = memory

    @property
    def follow_up(self) -> bool:
        """Return whether the model answers again after the skills ran."""
        return self.reasoner.follow_up

    @follow_up.setter
    def follow_up(self, follow_up: bool) -> None:
        self.reasoner.follow_up = follow_up

    @property
    def max_rounds(self) -> int:
        """Return the most model calls of a turn with follow-up rounds."""
        return self.reasoner.max_rounds

    @max_rounds.setter
    def max_rounds(self, rounds: int) -> None:
        self.reasoner.max_rounds = max(1, rounds)

    @property
    def navigator(self) -> Navigator | None:
        """Return the S-brain, if any; its suggestions reach the model's prompt."""
        return self._navigator

    @navigator.setter
    def navigator(self, navigator: Navigator | None) -> None:
        self._navigator = navigator
        self.reasoner.suggestion = (
            navigator.suggestion_for if navigator is not None else lambda _s: None
        )

    @property
    def usage(self) -> dict[str, int]:
        """Return the tokens the model used so far."""
        return self.reasoner.usage

    async def summarize_idle(self) -> list[Session]:
        """Summarise the idle sessions with this pipeline's model and memory.

        Each summary is a ``system_notification`` in the journal.
        """
        navigator = self.navigator
        done = await self.sessions.summarize_idle(
            self.model,
            self.memory,
            (lambda s: navigator.run(s, "idle")) if navigator is not None else None,
        )
        for session in done:
            self._summarised(session)
        return done

    async def archive(self, session: Session) -> None:
        """Summarise a session now and queue it for memory (the navigator asks)."""
        await self.sessions.summarize(session, self.model, self.memory)
        self._summarised(session)

    def _summarised(self, session: Session) -> None:
        notice(
            self.events,
            self._clock,
            "session summarised"
            + (" and queued for memory" if self.memory is not None else ""),
            souls=self._souls,
            soul_id=session.soul_id,
            session_id=session.session_id,
            terminal_id=session.terminal_id or None,
            user_id=session.user_id,
            event="session_summarised",
            summary=session.summary,
        )

    # -- the turn ---------------------------------------------------------------

    def check_session(
        self, session_id: str, user_id: str | None, channel: str = "http"
    ) -> None:
        """Refuse another channel's session id (``ChatError``) or another user's (403)."""
        prefix = session_id.partition("-")[0]
        if prefix in CHANNEL_SESSIONS and prefix != channel:
            # The panel's and Star's session ids follow from their users: a
            # user who took one first locked its owner out (black box).
            raise ChatError(
                f"session ids beginning with {prefix!r}- belong to the {prefix} "
                "channel; choose another session_id"
            )
        existing = self.sessions.get(session_id)
        if existing is not None and existing.user_id != user_id:
            raise SessionOwnerError(f"session {session_id!r} belongs to another user")

    async def chat(
        self,
        body: Any,
        *,
        extra_tools: ExtraTools | None = None,
        transcript: Transcript | None = None,
        soul_only: bool = False,
        caller: Principal = SYSTEM,
        channel: str = "http",
    ) -> dict[str, Any]:
        """Answer one §4.2.1 request with a §4.2.2 response; raise ``ChatError``.

        ``extra_tools`` are offered to the model next to the body's skills.
        With a ``transcript`` the model's messages come from it, the model
        streams, and every step of the turn goes to it (``core.transcript``).
        With ``soul_only`` a request may name a soul and no terminal.
        ``caller`` (Home Assistant's user) decides which souls a request may
        name and bind (``_soul_for``). The turn's events (``user_input``,
        ``psyche_update``, ``driver_response``) share one ``trace_id``, which
        the response carries; ``channel`` names the way in.
        """
        request = parse_chat_request(body, soul_only=soul_only)
        self.check_session(request.session_id, request.user_id, channel)
        soul = self._soul_for(request, caller)
        session = self.sessions.open(
            request.session_id, request.terminal_id, soul.soul_id, request.user_id
        )
        session.add_turn("user", request.text)
        session.context.extend(request.context)
        session.last_user_at = self._clock()
        for item in request.context:
            if item.get("type") in MEDIA_TYPES:
                _LOGGER.info(
                    "Soul %s received an input of type %s in session %s; "
                    "the model gets it described",
                    soul.soul_id, item["type"], request.session_id,
                )  # fmt: skip
        trace = TurnTrace(
            self.events,
            self._clock,
            soul.soul_id,
            request.session_id,
            request.terminal_id or None,
            user_id=request.user_id,
        )
        with traced(trace.trace_id):
            return await self._turn(
                request,
                soul,
                session,
                trace,
                # Habituation counts who is calling, not whom an administrator
                # names: a new name is no new source.
                source=source_of(
                    caller.user_id or request.user_id, request.terminal_id
                ),
                channel=channel,
                extra_tools=extra_tools,
                transcript=transcript,
            )

    async def _turn(
        self,
        request: ChatRequest,
        soul: Soul,
        session: Session,
        trace: TurnTrace,
        *,
        source: str,
        channel: str,
        extra_tools: ExtraTools | None,
        transcript: Transcript | None,
    ) -> dict[str, Any]:
        """Answer the turn ``chat`` opened, its events under ``trace``.

        ``source`` is who spoke, for the soul's habituation.
        """
        before = self._souls.snapshot(soul.soul_id)
        trace.user_input(
            request.text,
            channel=channel,
            user_id=request.user_id,
            inputs=[str(item.get("type")) for item in request.context],
            snapshot=before,
        )
        held: list[Callable[[], None]] = []
        try:
            try:
                user_emotion, snapshot = await self._souls.user_turn(
                    request.terminal_id,
                    request.text,
                    request.session_id,
                    soul_id=soul.soul_id,
                    trace_id=trace.trace_id,
                    user_id=request.user_id,
                    source=source,
                    held=held,
                )
            except NoSoulError as err:
                raise ChatError(NO_SOUL_ERROR) from err
            if request.terminal_id:
                await self._flush()  # the emotion_update leaves first
            trace.psyche_update(
                before, snapshot, "user_emotion", user_emotion=user_emotion
            )
            turn = Turn(
                request,
                session,
                snapshot.exec_mode,
                snapshot.exec_probability,
                extra_tools,
                transcript,
            )
            turn.user_emotion = user_emotion
            turn.trace = trace
            turn.held = held
            if session.pending and CONFIRM_YES.match(request.text):
                intents, session.pending = session.pending, []
                await self.intents.confirmed(turn, intents)
            else:
                session.pending = []
                await self._route(turn)
        finally:
            tell_held(held)
        if turn.driver_emotion is not None:
            moved_from = self._souls.snapshot(soul.soul_id)
            if moved := self._souls.express(soul.soul_id, turn.driver_emotion):
                trace.psyche_update(
                    moved_from, moved, "driver_emotion", emotion=turn.driver_emotion
                )
        # A model's Markdown shows no image or tag (``markdown_tame``), as
        # its streamed pieces did; Soul's own phrases are inert already.
        reply = markdown_tame(untrusted.clean(normalize_reply(turn.reply), MAX_REPLY))
        if reply:
            session.add_turn("assistant", reply)
        if transcript is not None:
            if reply and not turn.streamed:
                await transcript.reply(reply)
            elif turn.closing:
                await transcript.settle(reply)
        self.last_route = turn.route
        after = self._souls.snapshot(soul.soul_id)
        trace.driver_response(
            reply,
            inner_voice=turn.inner_voice,
            snapshot=after,
            intent_decision=turn.decision,
            executed_skills=list(turn.executed),
            route=turn.route,
        )
        if self.navigator is not None and after is not None:
            self.navigator.after_turn(session, before, after)
        return {
            "session_id": request.session_id,
            "terminal_id": request.terminal_id,
            "soul_id": soul.soul_id,
            "reply": reply,
            "executed_skills": turn.executed,
            "context_summary": session.rolling_summary(),
            "intent_decision": turn.decision,
            "exec_mode": snapshot.exec_mode.value,
            "exec_probability": snapshot.exec_probability,
            "trace_id": trace.trace_id,
        }

    def _soul_for(self, request: ChatRequest, caller: Principal) -> Soul:
        """Return the terminal's soul; bind one on first contact (§4.2.1).

        ``soul_id`` binds an unbound terminal and must match a bound one;
        ``soul_hint`` acts as a body's own hint (the terminal's first contact
        only). Without either, an unbound terminal is refused: an unknown one
        says so, a known one gets §4.3's ``NO_SOUL_ERROR``. A caller names
        only souls it may see, and only an administrator binds a terminal
        that never connected (as ``/souls/select``). A terminal bound to
        another user's private soul is no way in to it (403).
        """
        terminal_id = request.terminal_id
        wanted = None
        if request.soul_id is not None:
            wanted = self._souls.soul(request.soul_id)
            if wanted is None or not caller.sees(wanted.user_id):
                raise UnknownSoulIdError(f"unknown soul_id {request.soul_id!r}")
        if not terminal_id:  # a soul spoken to without a body (soul_only)
            assert wanted is not None  # noqa: S101 - parse_chat_request checked it
            return wanted
        soul = self._souls.soul_of(terminal_id)
        known = caller.is_admin or self._registry.get(terminal_id) is not None
        if wanted is not None and soul is not None and soul.soul_id != wanted.soul_id:
            bound = (
                f"soul {soul.soul_id!r} ({soul.name})"
                if caller.sees(soul.user_id)
                else "another soul"
            )
            raise SoulMismatchError(
                f"terminal {terminal_id!r} is bound to {bound}, not "
                f"{request.soul_id!r}; an administrator rebinds it with "
                "POST /api/soul/v1/souls/select"
            )
        if soul is not None:
            refuse_private_soul(caller, terminal_id, soul.user_id)
            return soul
        if wanted is not None and known:
            self._souls.bind(terminal_id, wanted.soul_id)
            return wanted
        note = ""
        if request.soul_hint is not None:
            if (
                known
                and (
                    soul_id := self._apply_hint(terminal_id, request.soul_hint, caller)
                )
                and (hinted := self._souls.soul(soul_id)) is not None
            ):
                return hinted
            note = (
                f"; its soul_hint {request.soul_hint!r} was not applied (a hint "
                "counts on a terminal's first contact only, names a soul you may "
                "use, and creates one only for an administrator, at most once a "
                "minute)"
            )
        if self._registry.get(terminal_id) is None:
            raise UnknownTerminalIdError(
                f"unknown terminal_id {terminal_id!r}: no body with this id has "
                "connected and no soul is bound to it"
                + ("" if caller.is_admin else " (only an administrator may bind it)")
                + note
            )
        raise ChatError(NO_SOUL_ERROR + note)

    async def _route(self, turn: Turn) -> None:
        terminal = self._registry.get(turn.request.terminal_id)
        response: dict[str, Any] | None = None
        if (
            terminal is not None
            and terminal.catalog
            and terminal.catalog.intents
            # A text too long to be a command is for the model (no log line).
            and len(turn.request.text) <= MAX_COMMAND_LENGTH
        ):
            try:
                response = self._registry.filter_command(
                    turn.request.terminal_id,
                    {
                        "command": turn.request.text,
                        "session_id": turn.request.session_id,
                    },
                    default_timezone=self._timezone(),
                    held=turn.held,
                )
            except IntentFilterError as err:
                _LOGGER.warning(
                    "Intent filter failed for %s: %s", turn.request.terminal_id, err
                )
        action = response["decision"]["action"] if response else "fallback_reasoning"
        turn.decision = action
        if action == "execute_intents" and response is not None:
            await self.intents.execute(turn, response)
            return
        tell_held(turn.held)  # the model may take seconds
        if action == "no_action":
            # §4.4.3: a feeling or an exclamation, nothing to run; the soul may
            # still answer in words (情绪回应) when it has a model.
            if self.reasoner.model is not None:
                await self.reasoner.reason(turn, act=False)
            turn.route = "no_action"
        else:
            await self.reasoner.reason(turn)
