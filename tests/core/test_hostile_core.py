"""Properties of the core's entry points under hostile input (no Home Assistant).

Each parser either accepts an input (and then what it returns serialises and
holds no lone surrogate) or refuses it with its own documented error; none
lets another exception escape. Catalogs, skill schemas, patterns, chat
requests and Star frames are covered; ``tests/test_hostile_*.py`` drive the
same inputs through Home Assistant.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from hypothesis import HealthCheck, given, settings, strategies as st
import orjson
import pytest

from custom_components.soul.core import markdown, untrusted
from custom_components.soul.core.chat_phrases import normalize_reply
from custom_components.soul.core.chat_request import ChatError, parse_chat_request
from custom_components.soul.core.intent_filter import (
    IntentFilterError,
    compile_catalog,
    filter_intents,
)
from custom_components.soul.core.protocol import ProtocolError, parse_skills
from custom_components.soul.core.safe_regex import (
    UnsafeRegexError,
    compile_untrusted,
    search,
)
from custom_components.soul.core.star.hub import Identity, StarHub
from custom_components.soul.core.transcript import ReplyStream

from ..hostile import hostile_text, json_values, mutated, raw_payloads
from .spec_payloads import CATALOG, SKILLS

PROPERTY = settings(
    max_examples=150,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)


def serialises(value: Any) -> None:
    """``value`` is plain JSON that UTF-8 can carry and Home Assistant can write.

    What every store needs; orjson (Home Assistant's writer) refuses integers
    outside 64 bits, and JSON has no NaN or Infinity.
    """
    json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
    orjson.dumps(value)


@PROPERTY
@given(raw_payloads)
def test_loads_accepts_clean_json_or_refuses(raw: bytes) -> None:
    try:
        value = untrusted.loads(raw, max_bytes=1 << 20)
    except untrusted.UntrustedInputError:
        return
    serialises(value)
    untrusted.check_json(value, max_bytes=1 << 21)


@pytest.mark.parametrize(
    ("raw", "refused", "repaired"),
    [
        (b'{"n": 18446744073709551616}', "an integer outside 64 bits", {"n": 2.0**64}),
        (b"[-9223372036854775809, 1]", "an integer outside 64 bits", [-(2.0**63), 1]),
        (b'{"a": [1, {"b": 1e999}]}', "a number too large for a float", None),
        (b"[-1" + b"0" * 400 + b".5]", "a number too large for a float", None),
    ],
)
def test_numbers_home_assistant_cannot_write_are_refused(
    raw: bytes, refused: str, repaired: Any
) -> None:
    """A body's result holding 2**64 made every answer carrying it a 500."""
    with pytest.raises(untrusted.UntrustedInputError, match=refused):
        untrusted.loads(raw, max_bytes=1000)
    value = untrusted.loads(raw, max_bytes=1000, repair=True)
    if repaired is not None:  # an integer becomes the nearest float
        assert value == repaired
    with pytest.raises(untrusted.UntrustedInputError, match="64 bits"):
        untrusted.check_json({"n": 2**64}, max_bytes=1000)


@pytest.mark.parametrize(
    "raw",
    [
        b"[18446744073709551615, -9223372036854775808, 1.7976931348623157e308]",
        b'["null", "nu\\u006cl", null, 1e-400]',  # more nulls written: no odd number
    ],
)
def test_numbers_at_the_bounds_are_kept(raw: bytes) -> None:
    assert untrusted.loads(raw, max_bytes=1000) == json.loads(raw)


@PROPERTY
@given(hostile_text, st.booleans())
def test_text_accepts_only_storable_text(value: str, multiline: bool) -> None:
    try:
        accepted = untrusted.text(value, "f", max_length=100, multiline=multiline)
    except untrusted.UntrustedInputError:
        accepted = None
    if accepted is not None:
        accepted.encode("utf-8")
        assert len(accepted) <= 100
    cleaned = untrusted.clean(value, 50)
    cleaned.encode("utf-8")
    assert len(cleaned) <= 50


CATALOG_ENTRY = CATALOG["intent_catalog"][0]
catalogs = st.one_of(
    json_values,
    st.lists(mutated(CATALOG_ENTRY), min_size=1, max_size=4),
    st.lists(
        st.builds(
            lambda rule, values: {**CATALOG_ENTRY, "match": {rule: values}},
            st.sampled_from(["regex_any", "regex_all", "keywords_any", "examples"]),
            st.lists(hostile_text, min_size=1, max_size=3),
        ),
        min_size=1,
        max_size=3,
    ),
)


@PROPERTY
@given(catalogs, hostile_text)
def test_catalogs_compile_or_are_refused(entries: Any, command: str) -> None:
    try:
        compile_catalog(entries)
    except IntentFilterError:
        return
    try:
        response = filter_intents({"command": command, "intent_catalog": entries})
    except IntentFilterError:
        return  # e.g. an empty or overlong command
    serialises(response)


skill_entries = st.one_of(
    mutated(SKILLS["skills"][0]),
    st.builds(
        lambda schema: {"name": "do_it", "input_schema": schema},
        st.one_of(
            json_values,
            st.builds(
                lambda prop: {"type": "object", "properties": {"a": prop}},
                st.dictionaries(
                    st.sampled_from(
                        ["type", "pattern", "$ref", "enum", "minimum", "items"]
                    ),
                    json_values,
                    max_size=3,
                ),
            ),
            # Local refs, at the root too, naming any part of the schema.
            st.builds(
                lambda ref, rest: {**rest, "$ref": ref},
                st.sampled_from(
                    [
                        "#",
                        "#/$ref",
                        "#/$defs/a",
                        "#/type",
                        "#/required",
                        "#/properties/a",
                    ]
                ),
                st.one_of(
                    st.just({}),
                    st.dictionaries(
                        st.sampled_from(["$defs", "type", "properties", "required"]),
                        json_values,
                        max_size=3,
                    ),
                ),
            ),
        ),
    ),
)


@PROPERTY
@given(st.lists(skill_entries, max_size=3), json_values)
def test_skills_parse_and_validate_or_are_refused(
    entries: list[Any], arguments: Any
) -> None:
    try:
        snapshot = parse_skills("t1", {"skills": entries})
    except ProtocolError:
        return
    for skill in snapshot.skills:
        serialises(skill.input_schema)
        errors = skill.argument_errors(arguments)  # never raises
        assert all(isinstance(e, str) for e in errors)


@PROPERTY
@given(hostile_text, hostile_text)
def test_patterns_compile_and_match_or_are_refused(pattern: str, text: str) -> None:
    try:
        compile_untrusted(pattern)
        search(pattern, text, timeout=0.005)
    except UnsafeRegexError:
        pass


@PROPERTY
@given(
    st.one_of(
        json_values,
        mutated(
            {
                "session_id": "s",
                "terminal_id": "t1",
                "user_id": "u",
                "soul_id": "x",
                "inputs": [{"type": "keyboard_text", "text": "开灯"}],
            }
        ),
    )
)
def test_chat_requests_parse_or_are_refused(body: Any) -> None:
    try:
        request = parse_chat_request(body)
    except ChatError:
        return
    serialises([request.session_id, request.terminal_id, request.text])
    serialises(list(request.context))


class _Peer:
    def __init__(self) -> None:
        self.texts: list[str] = []
        self.closes: list[tuple[int, str]] = []

    def send(self, text: str) -> bool:
        self.texts.append(text)
        return True

    def close(self, code: int, reason: str) -> None:
        self.closes.append((code, reason))


frames = st.one_of(
    raw_payloads,
    raw_payloads.map(lambda raw: raw.decode("utf-8", "replace")),
    mutated(
        {
            "type": "message",
            "sender": {"id": "agent_1", "type": "agent"},
            "recipient": {"id": "world_1", "type": "environment"},
            "payload": {"type": "action", "action": "chat", "parameters": {}},
            "message_id": "m1",
        }
    ).map(lambda envelope: json.dumps(envelope).encode()),
)


@PROPERTY
@given(st.lists(frames, min_size=1, max_size=5))
def test_star_frames_are_routed_or_answered(batch: list[Any]) -> None:
    hub = StarHub()
    env_peer, agent_peer = _Peer(), _Peer()
    hub.connect(
        Identity("environment", "world_1", "world_1"), env_peer.send, env_peer.close
    )
    agent = hub.connect(
        Identity("agent", "agent_1", "world_1"), agent_peer.send, agent_peer.close
    )
    for frame in batch:
        hub.receive(agent, frame)  # never raises
    for text in [*env_peer.texts, *agent_peer.texts]:
        text.encode("utf-8")  # what the hub sends is sendable
        assert isinstance(json.loads(text), dict)


_JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
_WRAPPED = st.tuples(
    st.sampled_from(["", " ", "\t\n", "\ufeff", "x", "\u3000"]),
    _JSON_VALUES.map(json.dumps),
    st.sampled_from(["", " ", "\r\n ", "x", ",1", "}", "\u00a0", " 2"]),
).map("".join)


_BROKEN = st.sampled_from(
    [
        '{"a": 1, "a": 2}', ' {"b": [{"a": 1, "b": 2, "a": 3}]} ', '{"a" 1}', "[1,]", '{"a":}', '"\\x"', "[1 2]", '{"a":1', '"abc', "nul",
        "tru", "-", "1e", "1.", "[", "{", '{"a":1,}', "[NaN, -Infinity]",
        '{"\\ud800": 1}', "0123", '"\t"', "[" * 40 + "]" * 40,
    ]
)  # fmt: skip


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(_WRAPPED | _BROKEN | st.text(max_size=40), st.booleans())
def test_the_json_decoder_answers_as_json_loads(text: str, repair: bool) -> None:
    """``untrusted`` decodes with json's scanner alone: the same values and errors.

    The strict decoder is ``json.loads`` refusing an object whose names repeat,
    NaN and Infinity.
    """
    strict: dict[str, Any] = {
        "object_pairs_hook": untrusted._one_each,
        "parse_constant": untrusted._no_constant,
    }
    try:
        expected: Any = json.loads(text, **({} if repair else strict))
    except (ValueError, RecursionError) as err:
        expected = (type(err), str(err))
    try:
        got: Any = untrusted._decode(text, repair=repair)
    except (ValueError, RecursionError) as err:
        got = (type(err), str(err))
    # NaN is not equal to itself: compare the JSON of both.
    assert json.dumps(got, default=repr) == json.dumps(expected, default=repr)


@pytest.mark.parametrize("char", ["\u200c", "\u200d", "\ufe0f", "\U000e0100"])
def test_a_line_keeps_the_joiners_and_selectors_words_need(char: str) -> None:
    """Persian and Indic words, emoji sequences and ideograph variants need them."""
    assert untrusted.is_text(f"a{char}b", 64)


@pytest.mark.parametrize(
    "char",
    [
        "\x85", "\u2028", "\u2029", "\u202a", "\u202e", "\u2066", "\u2069", "\ufeff",
        # invisible: two names that look the same ("fr\u200biendly", black box)
        "\xad", "\u034f", "\u061c", "\u115f", "\u180e", "\u200b", "\u200e", "\u200f",
        "\u2060", "\u2064", "\u3164", "\uffa0", "\ufff9", "\U0001bca0", "\U000e0041",
    ],
)  # fmt: skip
def test_a_line_holds_no_invisible_formatting(char: str) -> None:
    """A name reads as what it is: a right-to-left override named a soul (black box)."""
    with pytest.raises(untrusted.UntrustedInputError, match=f"U\\+{ord(char):04X}"):
        untrusted.text(f"a{char}b", "name", max_length=64)
    assert not untrusted.is_text(f"a{char}b", 64)
    assert untrusted.clean(f"a{char}b", 64, multiline=False) == "a\ufffdb"
    # Free text keeps them (a chat message may quote right-to-left text).
    assert untrusted.text(f"a{char}b", "text", max_length=64, multiline=True)
    # Right-to-left text itself is a line like any other.
    assert untrusted.is_text("שלום עולם", 64) and untrusted.is_text("مرحبا", 64)


@pytest.mark.parametrize(
    "char", ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067",
             "\u2068", "\u2069"]
)  # fmt: skip
def test_shown_free_text_loses_what_reorders_it(char: str) -> None:
    """A model's "\u202egnp.exe" showed as "exe.png" in Assist and the panel (black box).

    Free text Soul cannot refuse but shows (``clean``) loses the embeddings,
    overrides and isolates; a user's own text (``text``) keeps them.
    """
    assert untrusted.clean(f"see {char}gnp.exe", 64) == "see \ufffdgnp.exe"
    assert untrusted.text(f"a{char}b", "text", max_length=64, multiline=True)


@pytest.mark.parametrize("char", ["\u200e", "\u200f", "\u061c", "\t", "\n"])
def test_shown_free_text_keeps_the_marks_and_lines(char: str) -> None:
    """The marks reorder nothing; right-to-left words are text like any other."""
    assert untrusted.clean(f"שלום{char}עולם", 64) == f"שלום{char}עולם"


@pytest.mark.parametrize(
    ("said", "shown"),
    [
        ("![m](http://e.example/a.png)", "!［m](http://e.example/a.png)"),
        ("<img src=x onerror=alert(1)>", "＜img src=x onerror=alert(1)>"),
        ("</p><script>x</script>", "＜/p>＜script>x＜/script>"),
        ("<!-- hidden -->", "＜!-- hidden -->"),
        ("[a link](http://a.example) stays", "[a link](http://a.example) stays"),
        ("1 < 2, a<-b, 3 > 2!", "1 < 2, a<-b, 3 > 2!"),
        # An autolink to a web or mail address is a link: its "<" stays.
        ("see <https://a.example/x?y=1>.", "see <https://a.example/x?y=1>."),
        (
            "<HTTP://A.EXAMPLE> <mailto:a@b.example>",
            "<HTTP://A.EXAMPLE> <mailto:a@b.example>",
        ),
        ("<javascript:alert(1)>", "＜javascript:alert(1)>"),
        ("<https://a.example/ onclick=x>", "＜https://a.example/ onclick=x>"),
        ("<httpſ://a.example>", "＜httpſ://a.example>"),  # ſ folds to s, but not ASCII
        pytest.param(
            "<https://" + "a" * 2048 + ">",
            "<https://" + "a" * 2048 + ">",
            id="an-address-at-its-bound",
        ),
        pytest.param(
            "<https://" + "a" * 2049 + ">",
            "＜https://" + "a" * 2049 + ">",
            id="an-address-past-its-bound",
        ),
    ],
)
def test_a_models_markdown_makes_no_image_nor_tag(said: str, shown: str) -> None:
    assert markdown.markdown_tame(said) == shown


def _streamed(pieces: list[str], limit: int = 10_000) -> list[str]:
    """Return what a ``ReplyStream`` of ``limit`` characters sends for ``pieces``."""
    sent: list[str] = []

    class Sink:
        async def text(self, piece: str) -> None:
            sent.append(piece)

    async def run() -> None:
        stream = ReplyStream(Sink(), limit)  # type: ignore[arg-type]
        for piece in pieces:
            await stream.add(piece)
        await stream.end()

    asyncio.run(run())
    return sent


_MARKDOWN_BITS = [*"!<[> a/:h", "ttp", "s://", "HTTPS://"]


@given(
    st.lists(st.sampled_from(_MARKDOWN_BITS), max_size=16).map("".join)
    | st.sampled_from(["NO_REPLY", "<NO_REPLY>", " [NO_REPLY] "]),
    st.data(),
)
def test_a_streamed_reply_is_tamed_as_the_whole(text: str, data: st.DataObject) -> None:
    """Wherever the stream cuts the reply, the pieces sent are the whole reply tamed."""
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=6)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    sent = _streamed(pieces)
    if normalize_reply(text):
        # From its first character that is not a space, as the whole is stripped.
        assert "".join(sent) == markdown.markdown_tame(text.lstrip())
    else:  # an empty reply, or a form of NO_REPLY: nothing of it is streamed
        assert sent == []


@pytest.mark.parametrize("address", [2047, 2048, 2049, 3000])
def test_a_streamed_autolink_waits_for_its_end_within_its_bound(address: int) -> None:
    """An address streamed a character at a time is decided as the whole reply is."""
    text = "go <https://" + "a" * address + "> now"
    sent = _streamed(list(text))
    assert "".join(sent) == markdown.markdown_tame(text)
    # Nothing waits longer than the bound: what was sent before the ">"
    # arrived is at most the address's bound behind.
    assert max(map(len, sent)) <= len("<https://") + markdown.AUTOLINK_MAX + 1


@pytest.mark.parametrize("spaces", [0, 3])
def test_a_streamed_reply_is_cut_before_it_is_tamed(spaces: int) -> None:
    """The whole reply is stripped, cut, then tamed; so is the stream."""
    text = " " * spaces + "<https://a.example>"
    assert "".join(_streamed([text[:8], text[8:]], limit=12)) == (
        markdown.markdown_tame(normalize_reply(text)[:12])
    )


def test_a_reply_of_spaces_and_no_reply_streams_nothing_at_the_limit() -> None:
    """Cut before its spaces were stripped, it streamed 4,096 characters of them."""
    text = " " * 4090 + "NO_REPLY"
    pieces = [text[i : i + 7] for i in range(0, len(text), 7)]
    assert _streamed(pieces, limit=4096) == []


_BIDI_OPENERS = "\u202a\u202b\u202d\u202e\u2066\u2067\u2068"


def _runs_balanced(text: str) -> bool:
    """Whether every bidi run of ``text`` closes what it opened, in its paragraph."""
    runs: list[str] = []
    for char in text:
        if char in _BIDI_OPENERS:
            runs.append(char)
        elif char == "\u202c":
            if not runs or runs.pop() in "\u2066\u2067\u2068":
                return False
        elif char == "\u2069":  # closes its isolate and the runs inside it
            if not any(run in "\u2066\u2067\u2068" for run in runs):
                return False
            while runs.pop() not in "\u2066\u2067\u2068":
                pass
        elif char in "\n\r\x1c\x1d\x1e\x85\u2029" and runs:
            return False
    return not runs


def test_a_stray_closer_in_a_users_words_cannot_leave_the_page_s_isolate() -> None:
    """A stray U+2069 in "AAAA\u2069\u202eBBBB" left the panel's isolate (black box)."""
    request = parse_chat_request(
        {
            "session_id": "s",
            "terminal_id": "t",
            "inputs": [{"type": "keyboard_text", "text": "AAAA\u2069\u202eBBBB"}],
        }
    )
    assert request.text == "AAAA\u202eBBBB\u202c"
    # What the user opened and closed is kept as it was.
    quoted = "quote: \u2067שלום\u2069 and \u202bرلم\u202c."
    assert untrusted.bidi_balanced(quoted) == quoted
    # A run left open ends with its line, as it would on its own.
    assert untrusted.bidi_balanced("a\u202eb\nc") == "a\u202eb\u202c\nc"
    assert untrusted.clean("a\u202eb", 100, users_own=True) == "a\u202eb\u202c"


@settings(max_examples=400, deadline=None)
@given(
    st.text(
        alphabet=st.sampled_from(
            "ab\n\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
        )
    )
)
def test_a_users_bidi_runs_are_balanced_and_the_rest_kept(text: str) -> None:
    balanced = untrusted.bidi_balanced(text)
    assert _runs_balanced(balanced)
    assert untrusted.bidi_balanced(balanced) == balanced
    # Only bidi controls are dropped or added; the words stay in order.
    assert [c for c in balanced if c in "ab\n"] == [c for c in text if c in "ab\n"]
    assert len(balanced) <= len(text) + untrusted.MAX_BIDI_RUNS
    # Within a length, the text is cut to make room for the closers.
    cut = untrusted.bidi_balanced(text, 20)
    assert len(cut) <= 20
    assert _runs_balanced(cut)
    assert untrusted.bidi_balanced(cut, 20) == cut
