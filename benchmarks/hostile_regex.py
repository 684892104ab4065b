"""Class 2 of ``benchmarks.hostile``: untrusted regexes.

Catalog patterns through ``filter_intents`` on the first command after the
catalog arrived, schema ``pattern`` through ``Skill.argument_errors``, and
compile bombs through ``safe_regex.compile_untrusted``, each against literal
patterns of the same length. A helper module, not a benchmark.
"""

from __future__ import annotations

import json
from typing import Any

import regex

from benchmarks.hostile_meter import (
    COMPILE_BOMBS,
    NOW,
    REDOS,
    REDOS_TEXT,
    Meter,
    Row,
    Section,
    ordinary_pattern,
    quietly,
    size_label,
)
from custom_components.soul.core import protocol, safe_regex
from custom_components.soul.core.intent_filter import (
    cached_catalog,
    clear_compile_cache,
    filter_intents,
)
from devtools.hostile.payloads import choice_ladder, regex_catalog

# -- 2. untrusted regexes --------------------------------------------------------------


def pattern_skill(pattern: str, properties: int = 1) -> protocol.Skill:
    """Return a skill whose string arguments must match ``pattern``."""
    return protocol.parse_skill(
        {
            "name": "say",
            "input_schema": {
                "type": "object",
                "properties": {
                    f"text_{n}": {"type": "string", "pattern": pattern}
                    for n in range(properties)
                },
            },
        }
    )


def filter_fresh(entries: list[dict[str, Any]], command: str) -> tuple[Any, Any]:
    """Return (before, call): a fresh compile off the clock, then one filter call."""

    def before() -> None:
        clear_compile_cache()
        cached_catalog(entries)  # as TerminalRegistry.prepare does in the executor

    return before, quietly(
        filter_intents, {"command": command, "intent_catalog": entries, "now": NOW}
    )


async def regexes(meter: Meter) -> list[Section]:
    """Class 2: catalog patterns, schema patterns and compile bombs."""
    catalog = Section(
        "2a",
        "Untrusted regexes in a catalog, first command after it arrived",
        "filter_intents (reading.py REGEX_TIMEOUT 10 ms, engine.py REGEX_BUDGET 12 ms a command)",
    )
    cases = [(p, [p]) for p in REDOS] + [("all four in one intent", list(REDOS))]
    for name, patterns in cases:
        benign = [ordinary_pattern(len(p)) for p in patterns]
        catalog.rows.append(
            Row(
                f"regex_any {name}",
                f"{len(REDOS_TEXT)} chars",
                "loop",
                meter.loop(
                    *reversed(filter_fresh(regex_catalog(patterns), REDOS_TEXT))
                ),
                meter.loop(*reversed(filter_fresh(regex_catalog(benign), REDOS_TEXT))),
            )
        )
    # The most a catalog may carry: 256 distinct patterns (MAX_CATALOG_PATTERNS).
    many = regex_catalog(["(a|aa)+$"] * 32, intents=8)
    literal = regex_catalog([ordinary_pattern(20)] * 32, intents=8)
    # Literal choices run on ``re``, without a timeout, while their counted
    # steps times the text's places stay within MAX_CHOICE_STEPS.
    ladder = choice_ladder(len(REDOS_TEXT))
    choices = regex_catalog([ladder] * 32, intents=8)
    size = len(json.dumps(many))
    keywords = [
        {
            "id": f"intent_{n}",
            "match": {
                "keywords_any": [f"word{n}x{k}" for k in range(16)],
                "examples": [f"turn on lamp {n} {k}" for k in range(16)],
            },
        }
        for n in range(256)
    ]
    keyword_ms = meter.loop(*reversed(filter_fresh(keywords, REDOS_TEXT)))
    for name, entries in (
        ("8 intents × 32 × (a|aa)+$ (256, the cap)", many),
        ("8 intents × 32 literal patterns (256, the cap)", literal),
        (
            f"8 intents × 32 literal choices at their step bound, on re "
            f"({len(ladder)} chars; 256, the cap)",
            choices,
        ),
    ):
        catalog.rows.append(
            Row(
                name,
                f"{size_label(size)} catalog",
                "loop",
                meter.loop(*reversed(filter_fresh(entries, REDOS_TEXT))),
                keyword_ms,
                "benign: 256 intents × 16 keywords and 16 examples",
            )
        )

    schema = Section(
        "2b",
        "Untrusted regexes in a skill schema",
        "Skill.argument_errors (PATTERN_TIMEOUT 10 ms, PATTERN_BUDGET 15 ms); the "
        "Invoker runs it in the executor, IntentRoute._action_intent on the loop",
    )
    for name, pattern, properties in [
        *((p, p, 1) for p in REDOS),
        ("64 properties × (a|aa)+$", "(a|aa)+$", 64),
    ]:
        hostile = pattern_skill(pattern, properties)
        benign = pattern_skill(ordinary_pattern(len(pattern)), properties)
        arguments = {f"text_{n}": REDOS_TEXT for n in range(properties)}
        schema.rows.append(
            Row(
                f"pattern {name}",
                f"{properties} × {len(REDOS_TEXT)} chars",
                "loop",
                meter.loop(lambda s=hostile, a=arguments: s.argument_errors(a)),
                meter.loop(lambda s=benign, a=arguments: s.argument_errors(a)),
            )
        )

    bombs = Section(
        "2c",
        "Regex compile bombs",
        "safe_regex.compile_untrusted (MAX_EXPANSION 4,096 atoms, repeats nested at "
        "most 3 deep), cache cleared",
    )

    def clear() -> None:  # ours, and the regex module's own cache of patterns
        safe_regex.check_untrusted.cache_clear()
        regex.purge()

    for pattern in COMPILE_BOMBS:
        bombs.rows.append(
            Row(
                pattern if len(pattern) <= 40 else pattern[:37] + "…",
                f"{len(pattern)} chars",
                "loop",
                meter.loop(quietly(safe_regex.compile_untrusted, pattern), clear),
                meter.loop(
                    quietly(
                        safe_regex.compile_untrusted, ordinary_pattern(len(pattern))
                    ),
                    clear,
                ),
            )
        )
    return [catalog, schema, bombs]
