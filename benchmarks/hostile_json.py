"""Class 1 of ``benchmarks.hostile``: poisoned JSON and text.

Inputs of up to 64 KiB decoded on the loop (``protocol.decode_json``,
``untrusted.text``), and HTTP bodies and MQTT results over it decoded in the
executor (``untrusted.loads``), each against an ordinary input of the same
size. A helper module, not a benchmark.
"""

from __future__ import annotations

from functools import partial

from benchmarks.hostile_meter import (
    BENIGN_OBJECT,
    KIB,
    LOOP,
    Meter,
    Row,
    Section,
    chain,
    in_executor,
    json_array,
    quietly,
    size_label,
)
from custom_components.soul.core import protocol, untrusted

# -- 1. poisoned JSON and text --------------------------------------------------------


async def poisoned_json(meter: Meter) -> list[Section]:
    """Class 1: JSON and text at the boundary, on the loop and in the executor."""
    on_loop = Section(
        "1a",
        "Poisoned JSON and text ≤ 64 KiB, on the loop",
        "protocol.decode_json / untrusted.loads (MQTT result, Star frame, HTTP body "
        "≤ LOOP_JSON_BYTES); untrusted.text",
    )
    small = [
        ("lone surrogate escape \\ud800", b'{"name":"\\ud800"}'),
        ("CESU-8 surrogate bytes ED A0 80", b'{"name":"\xed\xa0\x80"}'),
        ("33 levels of nesting", chain(33).encode()),
    ]
    for name, raw in small:
        on_loop.rows.append(
            Row(
                name,
                size_label(len(raw)),
                "loop",
                meter.loop(quietly(protocol.decode_json, raw)),
                meter.loop(quietly(protocol.decode_json, json_array("0", len(raw)))),
            )
        )
    line = "x" * 4095
    for name, bad in (("control character", "\x00"), ("lone surrogate", "\ud800")):
        on_loop.rows.append(
            Row(
                f"4,096-char text, {name} last",
                "4,096 chars",
                "loop",
                meter.loop(quietly(untrusted.text, line + bad, "t", max_length=4096)),
                meter.loop(quietly(untrusted.text, line + "y", "t", max_length=4096)),
            )
        )
    benign = json_array(BENIGN_OBJECT, LOOP)
    benign_ms = meter.loop(quietly(protocol.decode_json, benign))
    big = [
        (
            "surrogate pairs, one lone one last",
            json_array('"\\ud83d\\ude00"', LOOP - 9)[:-1] + b',"\\ud800"]',
        ),
        ("depth-32 chains (legal; worst for the check)", json_array(chain(31), LOOP)),
        (
            'depth-32 object chains {"":{…}}',
            json_array('{"":' * 30 + "{}" + "}" * 30, LOOP),
        ),
        ("empty objects {}", json_array("{}", LOOP)),
        ("flat array of 0", json_array("0", LOOP)),
        (
            "objects of one-letter names, one repeated in the last",
            json_array('{"a":0,"b":0}', LOOP - 14)[:-1] + b',{"a":0,"a":1}]',
        ),
    ]
    for name, raw in big:
        assert len(raw) == LOOP, (name, len(raw))
        on_loop.rows.append(
            Row(
                name,
                size_label(len(raw)),
                "loop",
                meter.loop(quietly(protocol.decode_json, raw)),
                benign_ms,
            )
        )

    off_loop = Section(
        "1b",
        "JSON > 64 KiB, decoded in the executor",
        "views._json_body (512 KiB body) and Invoker.async_handle_result (256 KiB) "
        "→ untrusted.loads in a worker thread",
    )
    body = 512 * KIB
    # As views._json_body decodes a request body.
    http_loads = partial(
        untrusted.loads, max_bytes=body, max_values=untrusted.MAX_JSON_VALUES
    )
    benign_body = json_array(BENIGN_OBJECT, body)
    benign_stall = await meter.stall(
        lambda: in_executor(quietly(http_loads, benign_body))
    )
    shapes = [
        ("flat array of 0", json_array("0", body)),
        ("depth-32 chains", json_array(chain(31), body)),
        ("empty objects {}", json_array("{}", body)),
        ("100,000 levels [[[…]]]", chain(100_000).encode()[:body]),
    ]
    for name, raw in shapes:
        off_loop.rows.append(
            Row(
                f"HTTP body: {name}",
                size_label(len(raw)),
                "stall",
                await meter.stall(
                    lambda raw=raw: in_executor(quietly(http_loads, raw))
                ),
                benign_stall,
            )
        )
    mqtt = protocol.MAX_PAYLOAD_BYTES
    chains, objects = json_array(chain(31), mqtt), json_array(BENIGN_OBJECT, mqtt)
    off_loop.rows.append(
        Row(
            "MQTT result: depth-32 chains",
            size_label(mqtt),
            "stall",
            await meter.stall(
                lambda: in_executor(quietly(protocol.decode_json, chains))
            ),
            await meter.stall(
                lambda: in_executor(quietly(protocol.decode_json, objects))
            ),
        )
    )
    return [on_loop, off_loop]
