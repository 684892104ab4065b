"""The warm path's shortcuts answer as the code they stand in for.

- ``catalog.cached_catalog`` keys a catalog by its orjson bytes, checked
  against the content they stand for, and never confuses two catalogs that
  orjson writes alike (tuples and lists, NaN and null, enums and strings).
"""

from __future__ import annotations

import enum
import json
import marshal
from pathlib import Path
import random
import re
from typing import Any
import uuid
from zoneinfo import ZoneInfo, available_timezones

import pytest

from benchmarks.intent_filter import big_catalog
from custom_components.soul.core.intent_filter import (
    IntentFilterError,
    cached_catalog,
    clear_compile_cache,
    compile_catalog,
    filter_intents,
    reading,
    request as request_module,
    slots,
)
from custom_components.soul.core.intent_filter.entries import SLOT_AFFINITY, Slot
from custom_components.soul.core.intent_filter.reading import Context, read_clause
from custom_components.soul.core.intent_filter.request import parse_request
from custom_components.soul.core.intent_filter.segmenter import segment
from custom_components.soul.core.intent_filter.text import make_clause

from ..text_corpus import corpus

ROOT = Path(__file__).resolve().parents[3]


LIGHT: list[dict[str, Any]] = [
    {
        "id": "light",
        "match": {"keywords_any": ["灯", "lamp"]},
        "slots": [{"name": "mode", "regex": "(开|关)", "default": "on"}],
    }
]


def _outcome(entries: Any) -> Any:
    """What compiling ``entries`` afresh gives (as marshal's key did): intents or error."""
    try:
        marshal.dumps(entries, 2)
    except (TypeError, ValueError):
        return ("error", "intent_catalog must be plain JSON")
    try:
        compiled = compile_catalog(entries)
    except IntentFilterError as err:
        return ("error", str(err))
    return [
        (i.id, i.keywords_any, i.priority, i.min_confidence, i.hint_score)
        for i in compiled.intents
    ]


def _cached_outcome(entries: Any) -> Any:
    try:
        compiled, cached = cached_catalog(entries)
    except IntentFilterError as err:
        return ("error", str(err)), False
    return [
        (i.id, i.keywords_any, i.priority, i.min_confidence, i.hint_score)
        for i in compiled.intents
    ], cached


class _Colour(enum.Enum):
    LAMP = "lamp"


def _variants() -> list[tuple[Any, Any]]:
    """Pairs of catalogs that orjson writes alike (or nearly) but that differ."""
    tuple_keywords = json.loads(json.dumps(LIGHT))
    tuple_keywords[0]["match"]["keywords_any"] = ("灯", "lamp")
    pairs: list[tuple[Any, Any]] = [(LIGHT, tuple_keywords), (LIGHT, tuple(LIGHT))]
    for field, values in (
        ("priority", [1, 1.0, True, None, float("nan"), float("inf")]),
        ("min_confidence", [0.5, None, float("nan"), 0, False, -0.0, 0.0]),
        ("hint_score", [0.1, None, float("nan"), 1, True]),
    ):
        for a in values:
            for b in values:
                if a is b:
                    continue
                first = json.loads(json.dumps(LIGHT))
                second = json.loads(json.dumps(LIGHT))
                first[0][field] = a
                second[0][field] = b
                pairs.append((first, second))
    enum_keyword = json.loads(json.dumps(LIGHT))
    enum_keyword[0]["match"]["keywords_any"] = ["灯", _Colour.LAMP]
    uuid_id = json.loads(json.dumps(LIGHT))
    uuid_id[0]["id"] = uuid.UUID(int=1)
    plain_uuid = json.loads(json.dumps(LIGHT))
    plain_uuid[0]["id"] = str(uuid.UUID(int=1))
    pairs += [(LIGHT, enum_keyword), (plain_uuid, uuid_id)]
    return pairs


@pytest.mark.parametrize("pair", range(len(_variants())))
def test_catalogs_orjson_writes_alike_are_never_confused(pair: int) -> None:
    first, second = _variants()[pair]
    for a, b in ((first, second), (second, first)):
        clear_compile_cache()
        assert _cached_outcome(a)[0] == _outcome(a)
        outcome, cached = _cached_outcome(b)
        assert outcome == _outcome(b)
        if cached:  # only ever from a catalog of exactly the same content
            assert json.dumps(a, default=repr) == json.dumps(b, default=repr)
            assert type(a) is type(b)
        # Each is still found (or refused) as itself afterwards.
        assert _cached_outcome(a)[0] == _outcome(a)
        assert _cached_outcome(b)[0] == _outcome(b)


def test_catalog_key_is_the_content_not_the_object() -> None:
    clear_compile_cache()
    entries = json.loads(json.dumps(LIGHT))
    first, cached = cached_catalog(entries)
    assert cached is False
    assert cached_catalog(json.loads(json.dumps(LIGHT))) == (first, True)
    # Changed in place: the same object is a new catalog.
    entries[0]["match"]["keywords_any"].append("light")
    changed, cached = cached_catalog(entries)
    assert cached is False
    assert "light" in changed.intents[0].keywords_any
    # The same keys in another order are another catalog, as with marshal.
    reordered = [
        {"match": LIGHT[0]["match"], "slots": LIGHT[0]["slots"], "id": "light"}
    ]
    assert cached_catalog(reordered)[1] is False
    # Tuples are keyed exactly too, and found again.
    as_tuple = tuple(json.loads(json.dumps(LIGHT)))
    assert cached_catalog(as_tuple)[1] is False
    assert cached_catalog(tuple(json.loads(json.dumps(LIGHT))))[1] is True


def test_not_plain_json_is_refused_even_when_equal_content_is_cached() -> None:
    clear_compile_cache()
    cached_catalog(json.loads(json.dumps(LIGHT)))

    class Text(str):
        __slots__ = ()

    odd = json.loads(json.dumps(LIGHT))
    odd[0]["id"] = Text("light")
    for entries in (odd, [{**LIGHT[0], "id": uuid.UUID(int=1)}]):
        with pytest.raises(IntentFilterError, match="plain JSON"):
            cached_catalog(entries)
    surrogate = json.loads(json.dumps(LIGHT))
    surrogate[0]["match"]["keywords_any"] = ["灯\ud800"]  # orjson refuses; marshal not
    assert _cached_outcome(surrogate)[0] == _outcome(surrogate)
    big = json.loads(json.dumps(LIGHT))
    big[0]["priority"] = 2**70
    assert _cached_outcome(big)[0] == _outcome(big)


def test_filter_answers_alike_whatever_the_key() -> None:
    request = {
        "command": "开灯",
        "intent_catalog": LIGHT,
        "now": "2026-02-22T17:40:00+08:00",
    }
    clear_compile_cache()
    cold = filter_intents({**request, "request_id": "a"})
    warm = filter_intents({**request, "request_id": "a"})
    as_tuple = filter_intents(
        {**request, "request_id": "a", "intent_catalog": tuple(LIGHT)}
    )
    for response in (cold, warm, as_tuple):
        response["meta"].pop("latency_ms")
        response["meta"].pop("catalog_cached")
    assert cold == warm == as_tuple


def test_known_zones_are_found_again_and_bad_names_still_refused() -> None:
    names = sorted(available_timezones())[:80]
    for _round in range(2):
        for name in names:
            assert request_module._zone(name) is ZoneInfo(name)
            assert len(request_module._zones) <= 64
    assert request_module._zone("Asia/Shanghai") is ZoneInfo("Asia/Shanghai")

    class Name(str):
        __slots__ = ()

    assert request_module._zone(Name("Asia/Shanghai")) is ZoneInfo("Asia/Shanghai")
    for bad in ("../etc/passwd", "/Asia/Shanghai", "Asia/", "x" * 65, 3, None, ["UTC"]):
        with pytest.raises(IntentFilterError, match="IANA time zone name"):
            request_module._zone(bad)
    for _round in range(2):  # unknown, each time
        with pytest.raises(IntentFilterError, match="unknown timezone"):
            request_module._zone("Mars/Olympus_Mons")


def _old_keyword_hits(catalog: Any, clause: Any) -> list[Any]:
    """``reading._keyword_hits`` as it was: every list of two hits or more sorted."""
    pattern = catalog.keyword_pattern
    if pattern is None:
        return []
    hits: dict[tuple[str, int], Any] = {}
    original = clause.original
    for variant in clause.variants:
        text = variant.text if variant is not original else variant.text.lower()
        for match in pattern.finditer(text):
            position = match.start()
            for keyword in catalog.keyword_prefixes[match.group(1)]:
                end = position + len(keyword)
                if keyword.isascii():
                    if position and text[position - 1].isalnum():
                        continue
                    tail_match = re.compile(r"[a-z]*").match(text, end)
                    tail = tail_match.group() if tail_match else ""
                    if tail not in ("", "s", "es", "ed", "ing", "er", "ers", "d"):
                        continue
                if end <= len(variant.origin):
                    start_o = variant.origin[position]
                    end_o = variant.origin[end - 1] + 1
                else:
                    start_o, end_o = variant.span(position, end)
                if (keyword, start_o) not in hits:
                    hits[keyword, start_o] = reading.Hit(keyword, start_o, end_o)
    if len(hits) < 2:
        return list(hits.values())
    return sorted(hits.values(), key=lambda hit: (hit.start, -len(hit.keyword)))


def _outcome_of(find: Any, catalog: Any, clause: Any) -> Any:
    try:
        return find(catalog, clause)
    except IndexError as err:
        return f"IndexError: {err}"


def _hit_catalogs() -> list[Any]:
    desk = json.loads((ROOT / "tests/data/eval/catalog_desk_robot.json").read_text())
    odd = [
        {"id": "a", "match": {"keywords_any": ["灯", "开灯", "打开灯", "开", "light", "lights", "i̇", "ii", "i"]}},
        {"id": "b", "match": {"keywords_any": ["点头", "点", "nod", "nodding", "燈", "開燈"]}},
        {"id": "c", "match": {"keywords_all": ["关", "灯"], "negative_keywords": ["不"]}},
    ]  # fmt: skip
    return [compile_catalog(desk), compile_catalog(odd), compile_catalog(big_catalog())]


def test_keyword_hits_are_those_of_the_sorting_code() -> None:
    rng = random.Random(11)  # noqa: S311 - test data, not secrets
    pieces = [
        "灯",
        "开灯",
        "打开灯",
        "開燈",
        "燈",
        "点头",
        "点点头",
        "点个头",
        "把",
        "İ",
        "I",
        "i",
    ]
    pieces += [
        "light",
        "Lights",
        "LIGHT",
        "nod",
        "nodding",
        " ",
        "，",
        "关",
        "不",
        "提醒",
        "10",
    ]
    texts = [*corpus()[:1500]]
    texts += ["".join(rng.choices(pieces, k=rng.randint(1, 8))) for _ in range(3000)]
    seen_unsorted = 0
    for catalog in _hit_catalogs():
        for text in texts:
            if not text.strip() or not text.isprintable() or "\ud800" in text:
                continue
            for locale in ("zh-CN", "ja-JP"):
                clause = make_clause(text, 0, len(text), locale)
                new = _outcome_of(reading._keyword_hits, catalog, clause)
                old = _outcome_of(_old_keyword_hits, catalog, clause)
                assert new == old, (text, locale)
                if isinstance(new, str):
                    continue  # the same IndexError both ways (keyword "i̇", text "İ")
                unsorted = [(h.start, -len(h.keyword)) for h in new]
                seen_unsorted += unsorted != sorted(unsorted)
    assert seen_unsorted == 0


def _readings(command: str) -> list[Any]:
    req = parse_request(
        {
            "command": command,
            "intent_catalog": LIGHT,
            "now": "2026-02-22T17:40:00+08:00",
        },
        "Asia/Shanghai",
    )
    ctx = Context(req, compile_catalog(LIGHT), "zh-CN")
    return [ctx, [read_clause(ctx, seg) for seg in segment(command)]]


def test_a_slot_implicit_cannot_fill_is_not_tried() -> None:
    names = ["skill", "label", "name", "x", "brightness", "volume_level", "level_x"]
    names += ["trigger_in_seconds", "duration_seconds", "seconds", "count", "mode"]
    names += ["percentage", "my_value", "valuex", "timer", "time", "at", "song"]
    names += [*SLOT_AFFINITY]
    commands = [
        "把灯调到50",
        "10分钟后提醒我",
        "红色的灯",
        "点头3次",
        "开灯，音量30",
        "nod 3 times",
    ]
    for command in commands:
        ctx, readings = _readings(command)
        intent = ctx.catalog.intents[0]
        for one in readings:
            for name in names:
                slot = Slot(name=name)
                found = slots._implicit(ctx, intent, slot, one)
                if not slot.implicit:
                    assert found == (False, None, None), (command, name)
    # Names it understands are tried (and some are filled here).
    assert all(Slot(name=n).implicit for n in ("brightness", "mode", "x_seconds"))


class _Point:
    def __eq__(self, other: object) -> bool:
        return True  # equal to anything, orjson's reading too

    __hash__ = object.__hash__


def _odd_values() -> list[Any]:
    from collections import OrderedDict
    from datetime import UTC, datetime
    from decimal import Decimal

    class Number(int):
        __slots__ = ()

    return [
        b"lamp", {"lamp"}, frozenset({"lamp"}), 1j, Decimal(1), datetime.now(UTC),
        OrderedDict(a=1), Number(1), _Colour.LAMP, uuid.UUID(int=3), _Point(),
        float("nan"), float("-inf"), 2**64, -(2**63) - 1, "\ud800", ("lamp",),
        [("lamp",)], {"a": ("lamp",)}, {1: "lamp"}, None, True, 0.5, -0.0,
    ]  # fmt: skip


@pytest.mark.parametrize("where", ["priority", "keyword", "slot_default", "extra"])
def test_a_fresh_catalog_is_refused_or_compiled_as_before(where: str) -> None:
    for value in _odd_values():
        entries = json.loads(json.dumps(LIGHT))
        if where == "keyword":
            entries[0]["match"]["keywords_any"].append(value)
        elif where == "slot_default":
            entries[0]["slots"][0]["default"] = value
        else:
            entries[0][where] = value
        clear_compile_cache()
        assert _cached_outcome(entries)[0] == _outcome(entries), (where, value)
        # And again, now that the cache may hold it.
        assert _cached_outcome(entries)[0] == _outcome(entries), (where, value)
