"""Hostile model replies and settings: bounded time, documented errors only.

Found by fuzzing: a fenced reply of spaces backtracked a regex for seconds; a
long inner voice made streaming quadratic; a 400-digit number in a psyche
delta or a stored profile overflowed a float; an MCP URL with a bad IPv6
address or port raised ValueError.
"""

from __future__ import annotations

import re

import pytest

from custom_components.soul.core.cognition import journal_codec
from custom_components.soul.core.cognition.driver import (
    ReplyField,
    parse_driver_reply,
    unfence,
)
from custom_components.soul.core.cognition.navigator import MAX_DELTA, parse_advice
from custom_components.soul.core.cognition.profiles import ProfileStore
from custom_components.soul.core.mcp.config import McpConfigError, parse_config

# The pattern unfence used to be; it agrees with it wherever it finished.
_OLD_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*(?:```)?\s*$", re.DOTALL)
HUGE = 10**400


def _old_unfence(text: str) -> str:
    fenced = _OLD_FENCE.match(text)
    return fenced.group(1) if fenced else text.strip()


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "```",
        "``````",
        "```json",
        '```json\n{"reply": "hi"}\n```',
        '```\n{"reply": "hi"}\n```  \n',
        '  ```json {"reply": "hi"}',
        '```jsonx{"a": 1}```',
        '```json {"a": "```"} ``` trailing',
        '{"reply": "plain"}',
        "just words ```",
        "``` \t\n ```",
        "```\u3000{}\u3000```",
    ],
)
def test_unfence_agrees_with_the_old_pattern(text: str) -> None:
    assert unfence(text) == _old_unfence(text)


@pytest.mark.timeout(5)  # a hang guard, not a timing goal: it was 30 s
def test_a_fence_and_spaces_are_read_at_once() -> None:
    """The old pattern took about 10 s for this reply (it grew as n³)."""
    reply = "```{" + " " * 2000 + "}"
    assert unfence(reply) == "{" + " " * 2000 + "}"
    assert parse_driver_reply(reply, 100).reply  # the whole text, as a reply
    assert parse_advice(reply) is not None


def test_streaming_keeps_little_before_the_reply() -> None:
    """Seeking the reply keeps a bounded tail, however long the inner voice."""
    answer = '{"inner_voice": "' + "a" * 20_000 + '", "reply": "hi"}'
    field = ReplyField()
    out = []
    for start in range(0, len(answer), 4):
        out.append(field.feed(answer[start : start + 4]))
        assert len(field._buffer) <= ReplyField._KEY_SPAN + 4
    assert "".join(out) == "hi"


@pytest.mark.parametrize("cut", [1, 3, 7, 50])
def test_a_key_cut_anywhere_is_found(cut: int) -> None:
    answer = '{"inner_voice": "' + "x" * 300 + '", "reply" :  "hé\\nllo"}'
    field = ReplyField()
    out = "".join(
        field.feed(answer[start : start + cut]) for start in range(0, len(answer), cut)
    )
    assert out == "hé\nllo"


def test_a_fenced_answer_streams_its_reply() -> None:
    field = ReplyField()
    pieces = ["  ", "`", "``json\n", '{"reply": "', "fenced", '"}', "\n```"]
    assert "".join(field.feed(piece) for piece in pieces) == "fenced"


def test_plain_answers_pass_through() -> None:
    field = ReplyField()
    assert field.feed("  ") == ""
    assert field.feed("`a") == "`a"
    assert field.feed(" then") == " then"


def test_a_huge_number_in_a_psyche_delta_is_clamped() -> None:
    advice = parse_advice(
        '{"psyche_delta": {"p": ' + str(HUGE) + ', "a": -' + str(HUGE) + "}}"
    )
    assert advice is not None
    assert advice.psyche_delta == {"p": MAX_DELTA, "a": -MAX_DELTA}
    # Not numbers, or not finite: left out, as before.
    advice = parse_advice('{"psyche_delta": {"p": Infinity, "a": NaN, "d": "1"}}')
    assert advice is not None and advice.psyche_delta == {}


def test_odd_stored_numbers_read_as_none() -> None:
    store = ProfileStore(clock=lambda: 0.0, on_dirty=lambda: None)
    store.load(
        {
            "user_profiles": {"u": {"name": "Ann", "updated": HUGE}},
            "system_states": {
                "a": {"boot_count": HUGE, "first_boot": HUGE, "last_boot": "x"},
                "b": {"boot_count": "3", "first_boot": float("nan")},
            },
        }
    )
    assert store.users["u"].name == "Ann" and store.users["u"].updated == 0.0
    assert store.systems["a"].boot_count == 2**53
    assert (store.systems["a"].first_boot, store.systems["a"].last_boot) == (0.0, 0.0)
    assert (store.systems["b"].boot_count, store.systems["b"].first_boot) == (0, 0.0)
    assert journal_codec._finite_timestamp(HUGE, lambda: 42.0) == 42.0


@pytest.mark.parametrize(
    "url",
    [
        "http://[::1",
        "http://[zz]/",
        "http://a\u2100b/",
        "http://a:99999/",
        "http://a:abc/",
        "ftp://a/",
        "http:///nohost",
    ],
)
def test_a_bad_mcp_url_is_refused_with_its_error(url: str) -> None:
    with pytest.raises(McpConfigError, match="url"):
        parse_config({"mcpServers": {"s": {"url": url}}})


def test_a_good_mcp_url_still_reads_and_redacts() -> None:
    servers = parse_config(
        {"mcpServers": {"s": {"url": "https://u:p@[::1]:8443/mcp?token=x"}}}
    )
    assert servers["s"].redacted()["url"] == (
        "https://**REDACTED**@[::1]:8443/mcp?**REDACTED**"
    )
