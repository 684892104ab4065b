"""quality_scale.yaml: every rule of the scale, honestly marked.

The rules and tiers are those of hassfest's ``quality_scale.py`` (which is not
shipped in the ``homeassistant`` wheel). Where a rule can be checked from the
files, it is checked here too, so a ``done`` cannot quietly become untrue.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
import tomllib
from typing import Any

from homeassistant.util.yaml import load_yaml_dict
import pytest

from custom_components.soul import PLATFORMS

INTEGRATION = Path(__file__).resolve().parent.parent / "custom_components" / "soul"
RULES = {
    "bronze": (
        "action-setup",
        "appropriate-polling",
        "brands",
        "common-modules",
        "config-flow",
        "config-flow-test-coverage",
        "dependency-transparency",
        "docs-actions",
        "docs-conditions",
        "docs-high-level-description",
        "docs-installation-instructions",
        "docs-removal-instructions",
        "docs-triggers",
        "entity-event-setup",
        "entity-unique-id",
        "has-entity-name",
        "runtime-data",
        "test-before-configure",
        "test-before-setup",
        "unique-config-entry",
    ),
    "silver": (
        "action-exceptions",
        "config-entry-unloading",
        "docs-configuration-parameters",
        "docs-installation-parameters",
        "entity-unavailable",
        "integration-owner",
        "log-when-unavailable",
        "parallel-updates",
        "reauthentication-flow",
        "test-coverage",
    ),
    "gold": (
        "devices",
        "diagnostics",
        "discovery",
        "discovery-update-info",
        "docs-data-update",
        "docs-examples",
        "docs-known-limitations",
        "docs-supported-devices",
        "docs-supported-functions",
        "docs-troubleshooting",
        "docs-use-cases",
        "dynamic-devices",
        "entity-category",
        "entity-device-class",
        "entity-disabled-by-default",
        "entity-translations",
        "exception-translations",
        "icon-translations",
        "reconfiguration-flow",
        "repair-issues",
        "stale-devices",
    ),
    "platinum": ("async-dependency", "inject-websession", "strict-typing"),
}
REQUIRED_TIERS = ("bronze", "silver", "gold")


def scale() -> dict[str, Any]:
    """Return the rules of quality_scale.yaml."""
    return load_yaml_dict(str(INTEGRATION / "quality_scale.yaml"))["rules"]


def status(rule: Any) -> tuple[str, str | None]:
    """Return a rule's status and comment, in either of hassfest's forms."""
    if isinstance(rule, str):
        return rule, None
    return rule["status"], rule.get("comment")


def functions(path: Path) -> set[str]:
    """Return the names of the functions and methods defined in a module."""
    tree = ast.parse(path.read_text())
    return {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }


def test_every_rule_is_listed_once() -> None:
    listed = set(scale())
    known = {rule for rules in RULES.values() for rule in rules}
    assert listed - known == set(), "rules the scale does not have"
    assert known - listed == set(), "rules missing from quality_scale.yaml"


@pytest.mark.parametrize("tier", list(RULES))
def test_statuses(tier: str) -> None:
    rules = scale()
    for name in RULES[tier]:
        value, comment = status(rules[name])
        assert value in ("done", "exempt", "todo"), name
        if value in ("exempt", "todo"):
            assert comment, f"{name} is {value}: its comment says why"
        if tier in REQUIRED_TIERS:
            assert value != "todo", f"{name} ({tier}) is not done"


def test_rules_that_the_files_show() -> None:
    """The ``done`` rules that hassfest validates from the files hold here."""
    data = json.loads((INTEGRATION / "manifest.json").read_text())
    flow = functions(INTEGRATION / "config_flow.py")
    setup = (INTEGRATION / "__init__.py").read_text()
    assert data["config_flow"] is True  # config-flow
    assert data["single_config_entry"] is True  # unique-config-entry
    assert data["mqtt"]  # discovery
    assert data["codeowners"]  # integration-owner
    assert {"async_step_reauth", "async_step_reauth_confirm"} <= flow
    assert "async_step_reconfigure" in flow
    assert "entry.runtime_data =" in setup  # runtime-data
    assert "async_unload_entry" in functions(INTEGRATION / "__init__.py")
    assert "async_get_config_entry_diagnostics" in functions(
        INTEGRATION / "diagnostics.py"
    )
    assert "async_remove_config_entry_device" in setup  # stale-devices
    assert (INTEGRATION / "brand" / "icon.png").is_file()  # brands
    assert (INTEGRATION / "icons.json").is_file()  # icon-translations
    for platform in PLATFORMS:  # parallel-updates
        module = ast.parse((INTEGRATION / f"{platform.value}.py").read_text())
        assigned = {
            target.id
            for node in module.body
            if isinstance(node, ast.Assign)
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        assert "PARALLEL_UPDATES" in assigned, platform


def test_strict_typing() -> None:
    """strict-typing is done only while scripts/test runs mypy --strict on it all."""
    assert status(scale()["strict-typing"])[0] == "done"
    root = INTEGRATION.parent.parent
    mypy = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["mypy"]
    assert mypy["strict"] is True
    assert mypy["files"] == ["custom_components/soul"]
    assert not mypy.get("ignore_missing_imports")  # only per module
    assert not mypy.get("ignore_errors")
    for override in mypy.get("overrides", []):
        assert not override.get("ignore_errors"), override["module"]
        assert not any(m.startswith("custom_components") for m in override["module"])
    steps = (root / "scripts" / "test").read_text().splitlines()
    assert ".venv/bin/mypy" in steps
