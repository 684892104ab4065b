"""The README's HTTP samples are real: each request gets an answer of that shape."""

from __future__ import annotations

import json
from pathlib import Path
import re
from typing import Any

from homeassistant.core import HomeAssistant
from pytest_homeassistant_custom_component.common import MockConfigEntry
from pytest_homeassistant_custom_component.typing import ClientSessionGenerator

from .test_terminals import announce

README = Path(__file__).resolve().parent.parent / "README.md"
ELIDED = "…"
# Creating and binding the soul first lets the other samples run on its body.
ORDER = ("/souls", "/souls/select")


def http_samples(text: str) -> list[tuple[str, str, Any, Any]]:
    """Return (method, path, request, response) for each pair of JSON samples.

    A pair belongs to the last endpoint named before it; the Star Protocol
    frames after the HTTP endpoints are not HTTP samples.
    """
    section = text.split("## HTTP API", 1)[1].split("**Star Protocol", 1)[0]
    samples = []
    position = 0
    pattern = re.compile(r"\*\*`(GET|POST) (/api/soul/v1/[a-z/]+)`\*\*")
    blocks = list(re.finditer(r"```json\n(.*?)```", section, re.DOTALL))
    for request, response in zip(blocks[::2], blocks[1::2], strict=True):
        names = list(pattern.finditer(section, position, request.start()))
        assert names, f"no endpoint named before {request.group(1)[:40]!r}"
        method, path = names[-1].groups()
        samples.append(
            (
                method,
                path,
                json.loads(request.group(1)),
                json.loads(response.group(1)),
            )
        )
        position = response.end()
    return samples


def shape_problems(sample: Any, actual: Any, where: str = "") -> list[str]:
    """Return where ``actual`` lacks a key or differs in type from ``sample``."""
    if isinstance(sample, dict):
        if not isinstance(actual, dict):
            return [f"{where or '.'}: expected an object, got {actual!r}"]
        problems = []
        for key, value in sample.items():
            if key == ELIDED:
                continue
            if key not in actual:
                problems.append(f"{where}.{key}: missing")
            else:
                problems += shape_problems(value, actual[key], f"{where}.{key}")
        return problems
    if isinstance(sample, list):
        if not isinstance(actual, list):
            return [f"{where}: expected a list, got {actual!r}"]
        if sample and actual:
            return shape_problems(sample[0], actual[0], f"{where}[0]")
        return []
    if sample is None or isinstance(sample, bool) != isinstance(actual, bool):
        return [] if sample is None else [f"{where}: {actual!r} is not like {sample!r}"]
    number = (int, float)
    if isinstance(sample, number) and isinstance(actual, number):
        return []
    if type(sample) is not type(actual):
        return [f"{where}: {actual!r} is not like {sample!r}"]
    return []


def test_every_endpoint_has_a_sample() -> None:
    paths = {path for _, path, _, _ in http_samples(README.read_text())}
    assert paths == {
        "/api/soul/v1/chat",
        "/api/soul/v1/intents/filter",
        "/api/soul/v1/souls",
        "/api/soul/v1/souls/select",
        "/api/soul/v1/emotion/analyze",
    }


def test_shape_problems_finds_differences() -> None:
    sample = {"a": 1, "b": {"c": "x"}, "d": [{"e": True}], ELIDED: ELIDED}
    assert shape_problems(sample, {"a": 2.5, "b": {"c": "y"}, "d": []}) == []
    assert shape_problems(sample, {"a": "1", "b": {}, "d": [{"e": 1}]}) == [
        ".a: '1' is not like 1",
        ".b.c: missing",
        ".d[0].e: 1 is not like True",
    ]


async def test_the_samples_get_answers_of_their_shape(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_client: ClientSessionGenerator,
) -> None:
    announce(hass)  # the body terminal-001 the samples talk to
    await hass.async_block_till_done()
    client = await hass_client()
    samples = sorted(
        http_samples(README.read_text()),
        key=lambda s: (
            ORDER.index(s[1][len("/api/soul/v1") :])
            if s[1][len("/api/soul/v1") :] in ORDER
            else len(ORDER)
        ),
    )
    for method, path, request, expected in samples:
        response = await client.request(method, path, json=request)
        body = await response.json()
        assert response.status in (200, 201), (path, response.status, body)
        assert shape_problems(expected, body) == [], (path, body)
