"""Regular expressions from untrusted sources (bodies' catalogs and schemas).

A body can send a pattern with catastrophic backtracking, and matches run in
Home Assistant's event loop. So every untrusted pattern:

- is at most ``MAX_PATTERN_LENGTH`` characters of Python ``re`` syntax;
- unrolls to at most ``MAX_EXPANSION`` atoms: the ``regex`` module expands
  fixed repeats when it compiles (``((a{100}){100}){100}`` takes 0.4 s, one
  level more exhausts the memory), so the minimum counts of nested repeats
  are multiplied out from Python's own parse tree before anything compiles;
- runs on the ``regex`` module (pure C, with musllinux wheels) with a hard
  ``timeout`` — never on ``re``, whose matches cannot be stopped — and, on
  an event loop's thread, keeps the GIL while it matches; the one exception
  is a choice among literals searched in a short text (``regex_choice``):
  its steps are counted from the pattern beforehand, at most
  ``MAX_CHOICE_STEPS`` a search, and it runs on ``re``;
- shares the time of one input with every other pattern run on that input:
  inside ``with budget(seconds):`` each match's timeout is cut to what is
  left, and once it is spent ``RegexBudgetError`` says so.
"""

from __future__ import annotations

from asyncio import _get_running_loop
from collections.abc import Callable
from contextvars import ContextVar, Token
import functools
import re

# typeshed has no stubs for re's private parser modules (only for the deprecated
# sre_* aliases): the parse tree is walked untyped.
from re import _constants as sre_constants, _parser as sre_parse  # type: ignore[attr-defined]
import threading
import time
from typing import Any

import regex

from .regex_chars import (
    ATOMIC_GROUP,
    MAX_TREE_DEPTH,
    REPEATS,
    first_chars,
    firsts_of,
    needed_chars,
    read_apart,
)
from .regex_choice import MAX_CHOICE_STEPS, choice_steps

MAX_PATTERN_LENGTH = 512
MAX_EXPANSION = 4096  # atoms a compiled pattern may unroll to
# Repeats nested in repeats: ``regex`` compiles deep nests of small counted
# repeats in time that grows about threefold a level, holding the GIL (11
# levels of ``(?:…){2}``, 80 characters within MAX_EXPANSION: 210 ms). Three
# levels ("((?:[0-9]+(?:\.[0-9]+)?h)+)") compile within 8 ms at worst.
MAX_REPEAT_DEPTH = 3
DEFAULT_TIMEOUT = 0.02  # seconds one match may take
_LITERAL = sre_constants.LITERAL
_deadline: ContextVar[float | None] = ContextVar("soul_regex_deadline", default=None)
# First-use compiles of checked patterns one input may make outside its budget:
# a catalog's first command pays them (a command usually needs a few).
FREE_COMPILE_SECONDS = 0.003
_free: ContextVar[float] = ContextVar(
    "soul_regex_free_compile", default=FREE_COMPILE_SECONDS
)


class UnsafeRegexError(ValueError):
    """A pattern that is too long, invalid, or too slow; ``pattern`` names it."""

    def __init__(self, message: str, pattern: str) -> None:
        """Keep the offending pattern for the report."""
        super().__init__(message)
        self.pattern = pattern


class RegexTimeoutError(UnsafeRegexError):
    """A match took longer than its own time bound: the pattern is too slow."""


class RegexBudgetError(UnsafeRegexError):
    """The time for all patterns of one input is spent (not this pattern's fault)."""


def _expansion(items: sre_parse.SubPattern | list[tuple[Any, Any]], limit: int) -> int:
    """Return how many atoms ``items`` unroll to (stopping past ``limit``)."""
    total = 0
    for op, arg in getattr(items, "data", items):  # a SubPattern iterates slowly
        if op is _LITERAL:  # the most common item, tested first
            total += 1
        elif op in REPEATS:
            low, _high, body = arg
            total += max(1, low) * _expansion(body, limit)
        elif op is sre_constants.SUBPATTERN:
            total += _expansion(arg[-1], limit)
        elif op is sre_constants.BRANCH:
            total += sum(_expansion(branch, limit) for branch in arg[1])
        elif op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
            total += _expansion(arg[1], limit)
        elif op is ATOMIC_GROUP:
            total += _expansion(arg, limit)
        elif op is sre_constants.GROUPREF_EXISTS:
            total += sum(_expansion(part, limit) for part in arg[1:] if part)
        else:
            total += 1
        if total > limit:
            return total
    return total


def _repeat_depth(items: sre_parse.SubPattern | list[tuple[Any, Any]]) -> int:
    """Return how deep repeats nest in ``items`` (``a+`` 1, ``(?:a+)*`` 2)."""
    deepest = 0
    for op, arg in getattr(items, "data", items):
        if op in REPEATS:
            depth = 1 + _repeat_depth(arg[2])
        elif op is sre_constants.SUBPATTERN:
            depth = _repeat_depth(arg[-1])
        elif op is sre_constants.BRANCH:
            depth = max(map(_repeat_depth, arg[1]), default=0)
        elif op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
            depth = _repeat_depth(arg[1])
        elif op is ATOMIC_GROUP:
            depth = _repeat_depth(arg)
        elif op is sre_constants.GROUPREF_EXISTS:
            depth = max((_repeat_depth(part) for part in arg[1:] if part), default=0)
        else:
            continue
        deepest = max(deepest, depth)
    return deepest


# Patterns whose ``regex`` compile may wait for their first use: short, and
# only syntax that ``regex`` (VERSION0) reads as ``re`` does and always
# compiles once ``re`` has parsed it (tests/core/test_safe_regex.py checks
# this on generated patterns). Anything else compiles when it is checked.
MAX_DEFERRED_LENGTH = 160
# Escapes both modules read alike; any other (\1, \x, \N, \g …) compiles now.
_PLAIN_ESCAPE = frozenset("dDwWsSbBAZntrfv")
_ESCAPES = re.compile(r"\\(.)", re.DOTALL)
_PLAIN_OPS = frozenset(
    {
        sre_constants.LITERAL,
        sre_constants.NOT_LITERAL,
        sre_constants.ANY,
        sre_constants.AT,
    }
)
_SET_ITEMS = frozenset(
    {
        sre_constants.LITERAL,
        sre_constants.RANGE,
        sre_constants.CATEGORY,
        sre_constants.NEGATE,
    }
)
# Character pairs that are set operations in ``regex`` (VERSION1), or a nested set.
_SET_OPERATORS = ("&&", "--", "||", "~~", "[[")
_SET_OPERATOR = re.compile("|".join(map(re.escape, _SET_OPERATORS)))


def _plain_tree(items: Any, depth: int) -> bool:
    """Whether ``items`` holds only syntax ``regex`` is known to compile."""
    if depth > MAX_TREE_DEPTH:
        return False
    for op, arg in getattr(items, "data", items):
        if op in _PLAIN_OPS:
            continue
        if op is sre_constants.IN:
            if any(kind not in _SET_ITEMS for kind, _value in arg):
                return False
        elif op is sre_constants.SUBPATTERN:
            if arg[1] or arg[2] or not _plain_tree(arg[-1], depth + 1):
                return False  # inline flags: compiled now
        elif op is sre_constants.BRANCH:
            if not all(_plain_tree(branch, depth + 1) for branch in arg[1]):
                return False
        elif op in REPEATS:
            if not _plain_tree(arg[2], depth + 1):
                return False
        elif op is ATOMIC_GROUP:
            if not _plain_tree(arg, depth + 1):
                return False
        elif op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
            if not _plain_tree(arg[1], depth + 1):
                return False
        else:  # backreferences, conditionals
            return False
    return True


def _deferrable(pattern: str, tree: Any, read_apart: bool) -> bool:
    """Whether ``pattern`` (parsed by ``re`` as ``tree``) may compile on first use."""
    if (
        len(pattern) > MAX_DEFERRED_LENGTH
        or read_apart
        or _SET_OPERATOR.search(pattern) is not None
        or tree.state.flags != sre_constants.SRE_FLAG_UNICODE
        or any(
            not name.isascii() or not name.isidentifier()
            for name in tree.state.groupdict
        )
    ):
        return False
    for escaped in _ESCAPES.findall(pattern):
        if escaped.isalnum() and escaped not in _PLAIN_ESCAPE:
            return False
    try:
        return _plain_tree(tree, 0)
    except RecursionError:
        return False


def _compile(pattern: str) -> regex.Pattern[str]:
    try:
        return regex.compile(pattern, regex.VERSION0)
    except (regex.error, TypeError, OverflowError, RecursionError) as err:
        raise UnsafeRegexError(f"invalid pattern {pattern!r}: {err}", pattern) from None


class UntrustedPattern:
    """An untrusted pattern that passed every check; ``regex`` compiles it when needed.

    ``groups`` and ``groupindex`` are the compiled pattern's, ``firsts`` is
    ``first_chars(pattern)``: all read from the one parse the checks made.
    ``choice`` is ``regex_choice.choice_steps`` of a pattern that is only a
    choice among literals (else None): such a pattern runs on ``re`` where
    the text is short enough (``search``), compiled there on first use.
    """

    __slots__ = (
        "_choice",
        "_compiled",
        "choice",
        "firsts",
        "groupindex",
        "groups",
        "needs",
        "pattern",
    )

    def __init__(
        self,
        pattern: str,
        groups: int,
        groupindex: dict[str, int],
        firsts: frozenset[str] | None,
        compiled: regex.Pattern[str] | None,
        *,
        choice: int | None = None,
    ) -> None:
        """Keep what the checks found (``compiled`` None: not compiled yet)."""
        self.pattern = pattern
        self.groups = groups
        self.groupindex = groupindex
        self.firsts = firsts
        self._compiled = compiled
        self.choice = choice
        self._choice: re.Pattern[str] | None = None
        # ``needed_chars``: read when the pattern compiles (None until then).
        self.needs: frozenset[str] | None = None

    @property
    def is_compiled(self) -> bool:
        """Whether the pattern was compiled yet (by ``regex``, or as a choice by ``re``)."""
        return self._compiled is not None or self._choice is not None

    def cannot_match(self, text: str) -> bool:
        """Whether ``text`` holds no character a match begins with, or none every match holds."""
        return ((firsts := self.firsts) is not None and firsts.isdisjoint(text)) or (
            (needs := self.needs) is not None and needs.isdisjoint(text)
        )

    def compiled(self) -> regex.Pattern[str]:
        """Return the pattern compiled by ``regex`` (compiling it the first time)."""
        if (compiled := self._compiled) is None:
            compiled = _compile(self.pattern)
            self.needs = needed_chars(self.pattern)
            self._compiled = compiled
        return compiled

    def compiled_choice(self) -> re.Pattern[str]:
        """Return the literal choice compiled by ``re`` (compiling it the first time)."""
        if (compiled := self._choice) is None:
            compiled = re.compile(self.pattern)
            if self.needs is None:
                self.needs = needed_chars(self.pattern)
            self._choice = compiled
        return compiled


@functools.lru_cache(maxsize=4096)
def check_untrusted(pattern: str) -> UntrustedPattern:
    """Check a pattern from an untrusted source, or raise ``UnsafeRegexError``.

    Every check ``compile_untrusted`` makes, with the same errors; a pattern
    ``regex`` is known to compile (``_deferrable``) is compiled on first use,
    any other now. Cached by text, so catalogs holding the same pattern share it.
    """
    if not isinstance(pattern, str):
        raise UnsafeRegexError("a pattern must be a string", repr(pattern)[:80])
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise UnsafeRegexError(
            f"pattern longer than {MAX_PATTERN_LENGTH} characters", pattern[:80]
        )
    try:
        tree = sre_parse.parse(pattern)
    except (sre_constants.error, RecursionError, OverflowError, TypeError) as err:
        raise UnsafeRegexError(
            f"invalid pattern {pattern!r} (Python re syntax): {err}", pattern
        ) from None
    if _expansion(tree, MAX_EXPANSION) > MAX_EXPANSION:
        raise UnsafeRegexError(
            f"pattern {pattern!r} repeats too much (over {MAX_EXPANSION} "
            "atoms when unrolled)",
            pattern,
        )
    if _repeat_depth(tree) > MAX_REPEAT_DEPTH:
        raise UnsafeRegexError(
            f"pattern {pattern!r} nests repeats more than {MAX_REPEAT_DEPTH} deep",
            pattern,
        )
    apart = read_apart(pattern)
    firsts = firsts_of(pattern, tree, apart)
    if _deferrable(pattern, tree, apart):
        return UntrustedPattern(
            pattern,
            tree.state.groups - 1,
            dict(tree.state.groupdict),
            firsts,
            None,
            choice=choice_steps(tree),
        )
    compiled = _compile(pattern)
    checked = UntrustedPattern(
        pattern, compiled.groups, dict(compiled.groupindex), firsts, compiled
    )
    checked.needs = needed_chars(pattern, tree)
    return checked


def compile_untrusted(pattern: str) -> regex.Pattern[str]:
    """Compile a pattern from an untrusted source, or raise ``UnsafeRegexError``."""
    return check_untrusted(pattern).compiled()


class budget:  # noqa: N801 - used as ``with budget(seconds):``, like a function
    """Let every match inside share ``seconds`` (nested budgets keep the tighter).

    A class rather than a ``@contextmanager`` generator: it is entered once per
    filtered command, and a generator costs several times as much.
    """

    __slots__ = ("_free_token", "_seconds", "_token")

    def __init__(self, seconds: float) -> None:
        """Prepare a budget of ``seconds``; the clock starts on entering it."""
        self._seconds = seconds
        self._token: Token[float | None] | None = None
        self._free_token: Token[float] | None = None

    def __enter__(self) -> None:
        """Start the budget."""
        deadline = time.perf_counter() + self._seconds
        outer = _deadline.get()
        self._token = _deadline.set(deadline if outer is None else min(outer, deadline))
        if outer is None:  # the input's own first-use compiles
            self._free_token = _free.set(FREE_COMPILE_SECONDS)

    def __exit__(self, *_exc: object) -> None:
        """End the budget: the outer one (if any) applies again."""
        if self._token is not None:
            _deadline.reset(self._token)
            self._token = None
        if self._free_token is not None:
            _free.reset(self._free_token)
            self._free_token = None


def deferred_compile_seconds() -> float:
    """Return how long first-use compiles took in this thread, in all, unbudgeted.

    That time is not the input's: ``search`` moves the budget's deadline by
    it, and the intent filter its own (a command's decisions must not depend
    on whether an earlier command already compiled its catalog's patterns).
    Up to ``FREE_COMPILE_SECONDS`` an input: beyond, a compile is the input's
    time like any other (the event loop is held for a bounded time).
    """
    return _deferred.seconds


class _Deferred(threading.local):
    seconds = 0.0


_deferred = _Deferred()


def _compile_now[P: (regex.Pattern[str], re.Pattern[str])](
    compile_: Callable[[], P],
) -> P:
    """Compile a checked pattern on its first use, outside the time of the input.

    ``compile_`` is the pattern's ``compiled`` or ``compiled_choice``. Up to
    what is left of ``FREE_COMPILE_SECONDS`` for the input; the rest counts
    against its budget.
    """
    started = time.perf_counter()
    try:
        return compile_()
    finally:
        spent = time.perf_counter() - started
        free = _free.get()
        if (excused := min(spent, free)) > 0:
            _free.set(free - excused)
            _deferred.seconds += excused
            if (deadline := _deadline.get()) is not None:
                _deadline.set(deadline + excused)


def search(
    pattern: str | regex.Pattern[str] | UntrustedPattern,
    text: str,
    *,
    timeout: float = DEFAULT_TIMEOUT,
) -> regex.Match[str] | None:
    """Search ``text`` like ``re.search``, giving up after ``timeout`` seconds.

    ``pattern`` is a pattern's text, what ``compile_untrusted`` made of it, or
    what ``check_untrusted`` did (callers that run many patterns keep them
    checked; such a pattern is compiled on its first search that may match,
    and that compile does not count against the timeout or the budget). Raises
    ``UnsafeRegexError`` for a pattern that cannot be used,
    ``RegexTimeoutError`` when the match took ``timeout``, and
    ``RegexBudgetError`` when the surrounding ``budget`` ran out first.
    """
    if isinstance(pattern, UntrustedPattern):
        source = pattern.pattern
    elif isinstance(pattern, str):
        source = pattern
    else:
        source = pattern.pattern
    limit, by_budget = timeout, False
    if (deadline := _deadline.get()) is not None:
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            raise RegexBudgetError("no time is left for patterns on this input", source)
        if remaining < limit:
            limit, by_budget = remaining, True
    if isinstance(pattern, UntrustedPattern):
        if pattern.cannot_match(text):
            return None
        if (steps := pattern.choice) is not None and (
            len(text) + 1
        ) * steps <= MAX_CHOICE_STEPS:
            # A choice among literals on a short text: its steps are bounded.
            choice = pattern._choice  # noqa: SLF001 - the hot path: no call
            if choice is None:
                choice = _compile_now(pattern.compiled_choice)
            return choice.search(text)  # type: ignore[return-value]
        compiled = pattern._compiled  # noqa: SLF001 - the hot path: no call
        if compiled is None:
            compiled = _compile_now(pattern.compiled)
            if (deadline := _deadline.get()) is not None:  # what the compile left
                remaining = deadline - time.perf_counter()
                if remaining <= 0:
                    raise RegexBudgetError(
                        "no time is left for patterns on this input", source
                    )
                if remaining < limit:
                    limit, by_budget = remaining, True
    else:
        compiled = compile_untrusted(pattern) if isinstance(pattern, str) else pattern
        if (firsts := first_chars(source)) is not None and firsts.isdisjoint(text):
            return None  # no character a match could begin with: it cannot match
    try:
        # The regex module lets go of the GIL for a whole match. On an event
        # loop's thread that hands the interpreter to any busy thread, and the
        # loop waits for it back, up to the switch interval (5 ms) twice: with
        # a thread computing, 8 % of searches waited over 1 ms. There the
        # match keeps the GIL (at most ``limit``); in a worker thread it lets
        # go, so that the loop runs meanwhile.
        return compiled.search(
            text,
            timeout=limit,
            concurrent=None if _get_running_loop() is None else False,
        )
    except TimeoutError:
        if by_budget:
            raise RegexBudgetError(
                "no time is left for patterns on this input", source
            ) from None
        raise RegexTimeoutError(
            f"pattern {source!r} took longer than {timeout * 1000:g} ms", source
        ) from None
