"""The integration's import layers (``[tool.importlinter]`` in pyproject.toml).

Imports flow one way: entry points and platforms → construction → features →
building blocks → types → constants → the core, which never imports Home
Assistant; modules of one layer never import each other.
"""

from __future__ import annotations

from pathlib import Path
import shutil
import subprocess
import sys
import tomllib

import pytest

ROOT = Path(__file__).resolve().parent.parent
INTEGRATION = ROOT / "custom_components" / "soul"
LINT = [
    sys.executable,
    "-c",
    "from importlinter.cli import lint_imports_command; lint_imports_command()",
]


def _config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "importlinter"
    ]


def _lint(cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - our own interpreter and tool
        LINT, cwd=cwd, capture_output=True, text=True, check=False, timeout=120
    )


def test_the_contracts_are_kept() -> None:
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_every_glue_module_has_a_layer() -> None:
    """A new module cannot slip past the layers unnoticed."""
    (layers,) = [c for c in _config()["contracts"] if c["type"] == "layers"]
    named = {name.strip() for layer in layers["layers"] for name in layer.split("|")}
    modules = {p.stem for p in INTEGRATION.glob("*.py") if p.stem != "__init__"}
    assert modules <= named, sorted(modules - named)
    assert "core" in named


@pytest.mark.parametrize(
    ("module", "bad_import"),
    [
        ("sensor.py", "from .light import SoulLight"),  # platforms are siblings
        ("helpers.py", "from .entity import SoulEntity"),  # a lower layer, upwards
        ("core/chat.py", "from homeassistant.core import HomeAssistant"),
        ("core/souls.py", "from ..souls import async_add_soul"),  # core → glue
    ],
)
def test_a_broken_layer_is_caught(tmp_path: Path, module: str, bad_import: str) -> None:
    """The same contracts on a copy with one forbidden import fail."""
    shutil.copytree(INTEGRATION, tmp_path / "custom_components" / "soul")
    (tmp_path / "custom_components" / "__init__.py").touch()
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / "custom_components" / "soul" / module
    source = target.read_text(encoding="utf-8")
    anchor = "from __future__ import annotations\n"
    target.write_text(
        source.replace(anchor, f"{anchor}\n{bad_import}\n", 1), encoding="utf-8"
    )
    result = _lint(tmp_path)
    assert result.returncode != 0, result.stdout
    assert "BROKEN" in result.stdout
