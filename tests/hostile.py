"""Hostile inputs for the property-based tests of every entry point (issue 13).

Strategies mix what ``hypothesis`` invents with what attackers actually send:
lone UTF-16 surrogates (as characters and as JSON escapes), control
characters, deep nesting, bombs for regular expressions, path-like time
zones, wrong types and sizes just over each limit. ``run_property`` drives
an async check from hypothesis (which is synchronous) against a running Home
Assistant; ``assert_stores_serialise`` proves Home Assistant's registries,
its states and every Soul store still serialise afterwards.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
import json
from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.helpers import device_registry as dr, entity_registry as er
from homeassistant.helpers.json import json_bytes
from hypothesis import HealthCheck, given, settings, strategies as st

NASTY_TEXT = [
    "\ud800",
    "a\udfffb",
    "\x00",
    "\x1b[31mred",
    "line\nbreak",
    "\u202eevil",
    "a{0,64}" * 6 + "b",
    "(a|aa)+$",
    "((a{100}){100}){100}",
    "/etc/passwd",
    "../x",
    "Asia/Shanghai/",
    "x" * 5000,
    "把灯调成红色",
    "turn on the light",
    "",
    " ",
    "soul_x",
    "home",
]

_chars = st.one_of(
    st.characters(),
    st.integers(0xD800, 0xDFFF).map(chr),  # hypothesis never makes these itself
    st.sampled_from("\x00\x07\x1b\x7f\u202e\ufeff灯"),
)
hostile_text = st.one_of(
    st.lists(_chars, max_size=40).map("".join),
    st.sampled_from(NASTY_TEXT),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    hostile_text,
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(hostile_text, inner, max_size=4)
    ),
    max_leaves=20,
)


def _dumps(value: Any) -> bytes:
    """JSON with ``ensure_ascii``: lone surrogates become JSON escapes."""
    return json.dumps(value).encode()


def deep(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


raw_payloads = st.one_of(
    st.binary(max_size=200),
    json_values.map(_dumps),
    st.sampled_from(
        [
            deep(100_000),
            deep(33),
            b"\xed\xa0\x80",
            b'"\\ud800"',
            b"{nope",
            b"null",
            b"[]",
            b'{"a": "\xff"}',
            b'{"n": 18446744073709551616}',  # 2**64: Home Assistant cannot write it
            b"[-9223372036854775809]",
            b"[1e999]",  # infinite: Home Assistant writes null, json.dumps Infinity
        ]
    ),
)


def mutated(valid: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Return ``valid`` with each field kept, dropped or made hostile."""
    return st.fixed_dictionaries(
        {},
        optional={
            key: st.one_of(st.just(value), json_values, hostile_text)
            for key, value in valid.items()
        },
    ).flatmap(
        lambda chosen: st.one_of(
            st.just(chosen), st.just({**valid, **chosen}), st.just(valid)
        )
    )


def run_property(
    loop: asyncio.AbstractEventLoop,
    strategy: st.SearchStrategy[Any],
    check: Callable[[Any], Awaitable[None]],
    *,
    max_examples: int = 60,
) -> None:
    """Run ``check`` on examples of ``strategy`` in ``loop`` (call from a thread)."""

    @settings(
        max_examples=max_examples,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def property_holds(example: Any) -> None:
        asyncio.run_coroutine_threadsafe(check(example), loop).result(timeout=60)

    property_holds()


async def check_property(
    hass: HomeAssistant,
    strategy: st.SearchStrategy[Any],
    check: Callable[[Any], Awaitable[None]],
    *,
    max_examples: int = 60,
) -> None:
    """Run a property against Home Assistant (hypothesis in a worker thread)."""
    await hass.async_add_executor_job(
        lambda: run_property(hass.loop, strategy, check, max_examples=max_examples)
    )


def assert_stores_serialise(hass: HomeAssistant, entry: Any | None = None) -> None:
    """Home Assistant's registries, its states and Soul's stores serialise."""
    json_bytes(dr.async_get(hass)._data_to_save())
    json_bytes(er.async_get(hass)._data_to_save())
    json_bytes(hass.config_entries._data_to_save())
    json_bytes([state.as_dict() for state in hass.states.async_all()])
    if entry is not None:
        runtime = entry.runtime_data
        for store in (
            runtime.store,
            runtime.sessions_store,
            runtime.memory_store,
            runtime.star_store,
        ):
            json_bytes(store.dump())
