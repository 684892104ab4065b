"""The translation keys the code uses, read from the source.

Extends ``script/hassfest/translations.py``, which checks the files alone: each
key the code relies on must be translated, and its texts may use only the
placeholders the code fills in. The keys are found statically, with ``ast``:
``translation_key=`` (issues, exceptions, selectors, entity descriptions),
``_attr_translation_key``, ``reason=``, ``errors[...]``, ``step_id=`` and the
placeholders passed with them, each placed in the flow (config, options,
subentry) of the class it appears in.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from pathlib import Path
import re
from typing import Any

from .common import INTEGRATION, PLATFORMS, dig, placeholders_in, texts_under


@dataclass(frozen=True)
class Use:
    """One translation the code relies on: where, which key(s), its placeholders."""

    where: str
    paths: tuple[str, ...]  # any of them will do
    placeholders: frozenset[str] | None = None  # None: unknown, not checked


FLOW_BASES = {
    "ConfigFlow": "config",
    "OptionsFlow": "options",
    "OptionsFlowWithReload": "options",
    "ConfigSubentryFlow": "config_subentries.*",
}
ERROR_CLASS = re.compile(r"(Error|Exception|Failed|NotReady)$")


def name_of(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


@cache
def string_constants() -> dict[str, str]:
    """Module-level ``NAME = "text"`` of the integration (ambiguous names left out)."""
    found: dict[str, set[str]] = {}
    for path in INTEGRATION.rglob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            target = value = None
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, value = node.targets[0], node.value
            elif isinstance(node, ast.AnnAssign):
                target, value = node.target, node.value
            if (
                isinstance(target, ast.Name)
                and isinstance(value, ast.Constant)
                and isinstance(value.value, str)
            ):
                found.setdefault(target.id, set()).add(value.value)
    return {
        name: next(iter(values)) for name, values in found.items() if len(values) == 1
    }


def resolve(node: ast.expr | None) -> str | None:
    """Return the text an expression stands for, when the source tells."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name | ast.Attribute):
        return string_constants().get(name_of(node))
    return None


def dict_keys(
    node: ast.expr | None, known: dict[str, frozenset[str]]
) -> frozenset[str] | None:
    """The keys of a dict literal (or a known ``self.context[...]``), else None."""
    if node is None:
        return frozenset()
    if isinstance(node, ast.Dict):
        keys = [resolve(key) if key is not None else None for key in node.keys]
        return None if None in keys else frozenset(k for k in keys if k is not None)
    if isinstance(node, ast.Subscript) and (name := resolve(node.slice)) in known:
        return known[name]
    return None


class KeyCollector(ast.NodeVisitor):
    """Collect the translation keys one module of the integration uses."""

    def __init__(self, module: str, key_setters: dict[str, int]) -> None:
        self.module = module
        self.platform = Path(module).stem if Path(module).stem in PLATFORMS else None
        self.key_setters = key_setters
        self.flows: list[str] = []  # the flow kinds of the enclosing classes
        self.bases: list[list[str]] = []
        self.module_flows: set[str] = set()
        self.title_placeholders: dict[str, frozenset[str]] = {}
        self.uses: list[Use] = []
        self.unclassified: list[str] = []

    def at(self, node: ast.AST) -> str:
        return f"{self.module}:{getattr(node, 'lineno', 0)}"

    def add(
        self,
        node: ast.AST,
        paths: list[str],
        placeholders: frozenset[str] | None = None,
    ) -> None:
        self.uses.append(Use(self.at(node), tuple(paths), placeholders))

    def flow_kinds(self) -> list[str]:
        """The flows whose texts a key here belongs to."""
        return self.flows[-1:] or sorted(self.module_flows)

    def visit_Module(self, node: ast.Module) -> None:
        for child in ast.walk(node):
            if isinstance(child, ast.ClassDef):
                self.module_flows |= {
                    FLOW_BASES[name_of(base)]
                    for base in child.bases
                    if name_of(base) in FLOW_BASES
                }
            if (
                isinstance(child, ast.Assign)
                and isinstance(target := child.targets[0], ast.Subscript)
                and resolve(target.slice) == "title_placeholders"
                and (keys := dict_keys(child.value, {})) is not None
            ):
                self.title_placeholders["title_placeholders"] = keys
        self.generic_visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        kinds = [FLOW_BASES[name_of(b)] for b in node.bases if name_of(b) in FLOW_BASES]
        if kinds:
            self.flows.append(kinds[0])
        # A class that sets its key to None (a named entity) uses no key.
        clears = any(
            isinstance(child, ast.Assign)
            and name_of(child.targets[0]) == "_attr_translation_key"
            and isinstance(child.value, ast.Constant)
            and child.value.value is None
            for child in ast.walk(node)
        )
        self.bases.append([] if clears else [name_of(base) for base in node.bases])
        self.generic_visit(node)
        self.bases.pop()
        if kinds:
            self.flows.pop()

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            # errors["base"] = "cannot_connect"
            if (
                isinstance(target, ast.Subscript)
                and name_of(target.value) == "errors"
                and (key := resolve(node.value))
            ):
                self.add(node, [f"{kind}.error.{key}" for kind in self.flow_kinds()])
            # _attr_translation_key = "soul" (class body or self.)
            if name_of(target) == "_attr_translation_key" and (
                key := resolve(node.value)
            ):
                self.add_entity(node, key)
        self.generic_visit(node)

    def visit_Return(self, node: ast.Return) -> None:
        # return data, {CONF_TERMINAL: "invalid_terminal"}: a flow helper's errors
        if self.module_flows and isinstance(node.value, ast.Tuple):
            for element in node.value.elts:
                if isinstance(element, ast.Dict):
                    for value in element.values:
                        if key := resolve(value):
                            self.add(
                                node,
                                [f"{kind}.error.{key}" for kind in self.flow_kinds()],
                            )
        self.generic_visit(node)

    def add_entity(self, node: ast.AST, key: str) -> None:
        if self.platform is None:
            self.unclassified.append(
                f"{self.at(node)}: entity key {key!r} outside a platform"
            )
        else:
            self.add(node, [f"entity.{self.platform}.{key}.name"])

    def visit_Call(self, node: ast.Call) -> None:
        name = name_of(node.func)
        keywords = {kw.arg: kw.value for kw in node.keywords if kw.arg}
        known = self.title_placeholders
        if (key := resolve(keywords.get("translation_key"))) is not None:
            placeholders = dict_keys(keywords.get("translation_placeholders"), known)
            if "issue" in name.lower():
                self.add(node, [f"issues.{key}.title"], placeholders)
                self.add(node, [f"issues.{key}.description"], placeholders)
            elif ERROR_CLASS.search(name):
                self.add(node, [f"exceptions.{key}.message"], placeholders)
            elif "Selector" in name:
                self.add(node, [f"selector.{key}.options"])
            elif name.endswith("Description"):
                self.add_entity(node, key)
            else:
                self.unclassified.append(
                    f"{self.at(node)}: {name}(translation_key={key!r})"
                )
        if "abort" in name and (reason := resolve(keywords.get("reason"))):
            placeholders = dict_keys(keywords.get("description_placeholders"), known)
            self.add(
                node,
                [f"{kind}.abort.{reason}" for kind in self.flow_kinds()],
                placeholders,
            )
        if name.startswith("async_show_") and (
            step := resolve(keywords.get("step_id"))
        ):
            placeholders = dict_keys(keywords.get("description_placeholders"), known)
            self.add(
                node,
                [f"{kind}.step.{step}" for kind in self.flow_kinds()],
                placeholders,
            )
        # super().__init__(entry, "memory") of a class whose base sets the key
        if (
            name == "__init__"
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Call)
            and name_of(node.func.value.func) == "super"
            and self.bases
        ):
            for base in self.bases[-1]:
                index = self.key_setters.get(base)
                if (
                    index is not None
                    and index < len(node.args)
                    and (key := resolve(node.args[index]))
                ):
                    self.add_entity(node, key)
        self.generic_visit(node)


def key_setters() -> dict[str, int]:
    """Classes whose ``__init__`` sets the translation key from an argument."""
    setters = {}
    for path in INTEGRATION.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            for item in node.body:
                if not (isinstance(item, ast.FunctionDef) and item.name == "__init__"):
                    continue
                params = [arg.arg for arg in item.args.args[1:]]
                for stmt in ast.walk(item):
                    if (
                        isinstance(stmt, ast.Assign)
                        and name_of(stmt.targets[0]) == "_attr_translation_key"
                        and isinstance(stmt.value, ast.Name)
                        and stmt.value.id in params
                    ):
                        setters[node.name] = params.index(stmt.value.id)
    return setters


def collect_uses() -> tuple[list[Use], list[str], dict[str, frozenset[str]]]:
    """Return the uses, the uses this module cannot classify, title placeholders."""
    uses: list[Use] = []
    unclassified: list[str] = []
    titles: dict[str, frozenset[str]] = {}
    setters = key_setters()
    for path in sorted(INTEGRATION.glob("*.py")):
        collector = KeyCollector(path.name, setters)
        collector.visit(ast.parse(path.read_text(encoding="utf-8")))
        uses += collector.uses
        unclassified += collector.unclassified
        if collector.title_placeholders:
            for kind in collector.module_flows:
                titles[kind] = collector.title_placeholders["title_placeholders"]
    return uses, unclassified, titles


def expand(path: str, strings: dict[str, Any]) -> list[str]:
    """Replace ``config_subentries.*`` by each subentry type the file has."""
    if "*" not in path:
        return [path]
    head, tail = path.split("*", 1)
    return [f"{head}{kind}{tail}" for kind in dig(strings, head.rstrip(".")) or {}]


def code_key_problems(uses: list[Use], strings: dict[str, Any]) -> list[str]:
    """Each key the code uses is translated; its texts use only the placeholders given."""
    problems = []
    for use in uses:
        found = [
            p
            for path in use.paths
            for p in expand(path, strings)
            if dig(strings, p) is not None
        ]
        if not found:
            problems.append(
                f"{use.where}: none of {', '.join(use.paths)} is translated"
            )
            continue
        if use.placeholders is None:
            continue
        for path in found:
            for where, value in texts_under(dig(strings, path), path):
                if missing := placeholders_in(value) - use.placeholders:
                    problems.append(
                        f"{use.where}: {where} uses {sorted(missing)}, which the code does not fill in"
                    )
    return problems


def flow_title_problems(
    titles: dict[str, frozenset[str]], strings: dict[str, Any]
) -> list[str]:
    """A flow_title's placeholders come from the flow's title_placeholders."""
    problems = []
    for kind in ("config", "options"):
        if (title := dig(strings, f"{kind}.flow_title")) is None:
            continue
        if missing := placeholders_in(title) - titles.get(kind, frozenset()):
            problems.append(
                f"{kind}.flow_title: {sorted(missing)} is not in title_placeholders"
            )
    return problems
