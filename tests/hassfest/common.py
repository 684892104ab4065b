"""The files hassfest checks, how they are read, and the schema building blocks.

Shared by the rule modules of this package. The building blocks stand in for
the voluptuous schemas of hassfest's scripts (``script/hassfest/translations.py``
defines the key and text rules): a ``Check`` takes a value and its dotted path
and returns the problems it finds as ``"<key path>: <what is wrong>"`` lines.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
import copy
from functools import cache
import json
from pathlib import Path
import re
import string
from typing import Any

import homeassistant
from homeassistant.const import Platform
from homeassistant.util import slugify
from homeassistant.util.yaml import load_yaml_dict

ROOT = Path(__file__).resolve().parents[2]
INTEGRATION = ROOT / "custom_components" / "soul"
TRANSLATION_FILES = sorted((INTEGRATION / "translations").glob("*.json"))
HA_COMPONENTS = Path(homeassistant.__file__).parent / "components"
MDI_LIST = (
    HA_COMPONENTS.parent.parent / "hass_frontend" / "static" / "mdi" / "iconList.json"
)
PLATFORMS = {platform.value for platform in Platform}

Check = Callable[[Any, str], list[str]]
KeyRule = Callable[[Any], str | None]


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    if repeated := sorted({key for key in keys if keys.count(key) > 1}):
        raise ValueError(f"duplicate keys {repeated}")
    return dict(pairs)


def parse_json(text: str) -> dict[str, Any]:
    """Parse a JSON object, refusing duplicate keys (the last would silently win)."""
    data = json.loads(text, object_pairs_hook=_unique_keys)
    if not isinstance(data, dict):
        raise ValueError("the file is no JSON object")  # noqa: TRY004
    return data


@cache
def load_json(path: Path) -> dict[str, Any]:
    return parse_json(path.read_text(encoding="utf-8"))


def read_json(path: Path) -> dict[str, Any]:
    """Return a fresh copy of a JSON file (the self-tests mutate theirs)."""
    return copy.deepcopy(load_json(path))


def english() -> dict[str, Any]:
    return read_json(INTEGRATION / "translations" / "en.json")


def services_yaml() -> dict[str, Any]:
    return load_yaml_dict(str(INTEGRATION / "services.yaml"))


def manifest() -> dict[str, Any]:
    return read_json(INTEGRATION / "manifest.json")


def icons() -> dict[str, Any]:
    return read_json(INTEGRATION / "icons.json")


def dig(data: Any, dotted: str) -> Any:
    """Return ``data[a][b]…`` for ``"a.b…"``, or None when a part is missing."""
    for part in dotted.split("."):
        if not isinstance(data, dict) or part not in data:
            return None
        data = data[part]
    return data


def texts_under(data: Any, prefix: str = "") -> Iterator[tuple[str, str]]:
    """Yield (dotted path, text) for every string below ``data``."""
    if isinstance(data, dict):
        for key, value in data.items():
            yield from texts_under(value, f"{prefix}.{key}" if prefix else key)
    elif isinstance(data, str):
        yield prefix, data


def _join(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


# --- Building blocks for the schemas below -----------------------------------

# [a-z0-9-_]+ without a leading, trailing or doubled - or _ (translations.py).
TRANSLATION_KEY = re.compile(r"[a-z0-9]+(?:[-_][a-z0-9]+)*")
HTML = re.compile(r"<[a-z][^>]*>", re.IGNORECASE)
# Stricter than hassfest, which misses addresses without a top-level domain.
URL = re.compile(r"\b[a-z][a-z0-9+.-]*://|\bwww\.", re.IGNORECASE)
REFERENCE = re.compile(r"\[%key:[^%\]]+%\]")
QUOTED_PLACEHOLDER = re.compile(r"'\{[^{}']*\}'")


def translation_key(key: Any) -> str | None:
    if isinstance(key, str) and TRANSLATION_KEY.fullmatch(key):
        return None
    return f"key {key!r} must match [a-z0-9-_]+ and not start, end or double - or _"


def slug(key: Any) -> str | None:
    if isinstance(key, str) and key and key == slugify(key):
        return None
    return f"key {key!r} is not a slug (try {slugify(str(key))!r})"


def slug_or_default(key: Any) -> str | None:
    return None if key == "_" else slug(key)


def platform(key: Any) -> str | None:
    return None if key in PLATFORMS else f"{key!r} is no entity platform"


def placeholders_in(text: str) -> set[str]:
    """Return the ``{names}`` in ``text``; ValueError on malformed braces."""
    return {
        name for _, name, _, _ in string.Formatter().parse(text) if name is not None
    }


def text(*, placeholders: bool = True) -> Check:
    """A translated text (translations.py: no HTML, no URL, sound placeholders)."""

    def check(value: Any, path: str) -> list[str]:
        if not isinstance(value, str):
            return [f"{path}: expected a text, got {type(value).__name__}"]
        problems = []
        if not value.strip():
            problems.append("is empty")
        elif value != value.strip():
            problems.append("has leading or trailing white space")
        if HTML.search(value):
            problems.append("contains HTML")
        if URL.search(value):
            problems.append("contains a URL (pass it as a placeholder)")
        if (ref := REFERENCE.search(value)) and ref.group() != value:
            problems.append("combines a [%key:…%] reference with other text")
        if QUOTED_PLACEHOLDER.search(value):
            problems.append("has a placeholder inside single quotes")
        try:
            names = placeholders_in(value)
        except ValueError as err:
            problems.append(f"has malformed braces ({err})")
            names = set()
        for name in sorted(names):
            if not name.isidentifier():
                problems.append(f"placeholder {{{name}}} is no identifier")
            elif not placeholders:
                problems.append(f"placeholder {{{name}}} where none is filled in")
        return [f"{path}: {problem}" for problem in problems]

    return check


def mapping(
    required: dict[str, Check] | None = None,
    optional: dict[str, Check] | None = None,
    *,
    extra: Check | None = None,
) -> Check:
    """A mapping with known keys; ``extra`` checks any other key's value."""
    required = required or {}
    optional = optional or {}

    def check(value: Any, path: str) -> list[str]:
        if not isinstance(value, dict):
            return [f"{path}: expected a mapping, got {type(value).__name__}"]
        problems = [
            f"{_join(path, key)}: missing" for key in required if key not in value
        ]
        for key, item in value.items():
            sub = required.get(key) or optional.get(key) or extra
            if sub is None:
                allowed = ", ".join(sorted({*required, *optional}))
                problems.append(f"{_join(path, key)}: unknown key (allowed: {allowed})")
            else:
                problems += sub(item, _join(path, key))
        return problems

    return check


def keyed(value_check: Check, key_rule: KeyRule | None = None) -> Check:
    """A mapping of free keys, each checked by ``key_rule``, to checked values."""

    def check(value: Any, path: str) -> list[str]:
        if not isinstance(value, dict):
            return [f"{path}: expected a mapping, got {type(value).__name__}"]
        problems = []
        for key, item in value.items():
            where = _join(path, key)
            if key_rule is not None and (why := key_rule(key)):
                problems.append(f"{where}: {why}")
            problems += value_check(item, where)
        return problems

    return check


def all_of(*checks: Check) -> Check:
    return lambda value, path: [p for check in checks for p in check(value, path)]


def exactly_one(*keys: str) -> Check:
    def check(value: Any, path: str) -> list[str]:
        if isinstance(value, dict) and sum(key in value for key in keys) != 1:
            return [f"{path}: needs exactly one of {', '.join(keys)}"]
        return []

    return check
