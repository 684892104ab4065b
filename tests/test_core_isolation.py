"""The core package must never import Home Assistant."""

from __future__ import annotations

import ast
from pathlib import Path
import subprocess
import sys

CORE = Path(__file__).resolve().parent.parent / "custom_components" / "soul" / "core"
ROOT = CORE.parent.parent.parent


def homeassistant_imports(source: str) -> list[str]:
    """Return the imported module names in ``source`` that belong to homeassistant."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, (ast.Name, ast.Attribute))
            and getattr(node.func, "id", getattr(node.func, "attr", ""))
            in {"import_module", "__import__"}
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            names = [str(node.args[0].value)]
        else:
            continue
        found += [
            n for n in names if n == "homeassistant" or n.startswith("homeassistant.")
        ]
    return found


def test_detector_finds_every_import_form() -> None:
    """The scan catches plain, from- and dynamic imports (else the next test proves nothing)."""
    assert homeassistant_imports("import homeassistant.core") == ["homeassistant.core"]
    assert homeassistant_imports("from homeassistant.helpers import x") == [
        "homeassistant.helpers"
    ]
    assert homeassistant_imports(
        "import importlib\nimportlib.import_module('homeassistant')"
    ) == ["homeassistant"]
    assert (
        homeassistant_imports("import homeassistantx\nfrom .homeassistant import y")
        == []
    )


def test_core_sources_do_not_import_homeassistant() -> None:
    """No module of the core package names homeassistant in an import."""
    files = sorted(CORE.rglob("*.py"))
    assert files, "the core package is missing"
    offenders = {
        str(path.relative_to(ROOT)): names
        for path in files
        if (names := homeassistant_imports(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}


def test_core_imports_with_homeassistant_blocked() -> None:
    """Every core module imports in a fresh interpreter where homeassistant cannot load.

    The package's parent ``custom_components/soul/__init__.py`` imports Home
    Assistant, so the core is loaded as a top-level package of its own here.
    """
    modules = sorted(
        ".".join(
            ("soulcore", *path.relative_to(CORE).with_suffix("").parts)
        ).removesuffix(".__init__")
        for path in CORE.rglob("*.py")
    )
    script = f"""
import importlib.abc, importlib.util, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "homeassistant" or name.startswith("homeassistant."):
            raise ImportError("core imported " + name)
sys.meta_path.insert(0, Block())
spec = importlib.util.spec_from_file_location(
    "soulcore", {str(CORE / "__init__.py")!r}, submodule_search_locations=[{str(CORE)!r}]
)
module = importlib.util.module_from_spec(spec)
sys.modules["soulcore"] = module
spec.loader.exec_module(module)
for name in {modules!r}:
    importlib.import_module(name)
print("ok", len({modules!r}))
"""
    result = subprocess.run(  # noqa: S603
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok")
