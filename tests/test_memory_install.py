"""Installing mem0 as Soul does: its real requirements, then mem0ai without its pin.

mem0ai pins protobuf<7, which Home Assistant >= 2026.10 (protobuf 7) cannot
install. The installs here are real: uv with Home Assistant's arguments, from a
local index (tests/package_index.py) with a package pinned the way mem0ai is,
into a temporary target, under Home Assistant 2026.10's protobuf pin.
"""

from __future__ import annotations

from importlib.metadata import requires, version
import os
from pathlib import Path
import subprocess
import sys
from typing import Any

from homeassistant.util import package as pkg_util
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
import pytest

from custom_components.soul.const import MEM0_DEPENDENCIES, MEM0_REQUIREMENT
from custom_components.soul.memory import install_without_dependencies

from .package_index import LocalIndex

ROOT = Path(__file__).resolve().parent.parent
PINNED = "soul-pinned"  # a package that pins protobuf<7, as mem0ai does


@pytest.fixture
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LocalIndex:
    """The only index uv sees: protobuf 7 and two releases of ``PINNED``."""
    index = LocalIndex(tmp_path / "index", monkeypatch)
    index.add("protobuf", "7.36.0")
    for release in ("1.0", "2.0"):
        index.add(PINNED, release, ["protobuf<7"], f"VERSION = {release!r}\n")
    return index


@pytest.fixture
def kwargs(tmp_path: Path) -> dict[str, Any]:
    """What ``pip_kwargs`` gives outside a virtual environment: constraints, target.

    The constraints pin protobuf as Home Assistant 2026.10 does, and ``PINNED``.
    """
    constraints = tmp_path / "package_constraints.txt"
    constraints.write_text(f"protobuf==7.36.0\n{PINNED}==1.0\n", encoding="utf-8")
    return {
        "constraints": str(constraints),
        "target": str(tmp_path / "config" / "deps"),
        "timeout": 60,
    }


def import_from(target: str, module: str) -> str:
    """Import ``module`` from ``target`` in a new interpreter; return its VERSION."""
    done = subprocess.run(  # noqa: S603 - our own command
        [sys.executable, "-c", f"import {module}; print({module}.VERSION)"],
        env={**os.environ, "PYTHONPATH": target},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_home_assistant_cannot_install_a_package_pinning_protobuf_below_7(
    index: LocalIndex, kwargs: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    """The issue: Home Assistant's installer refuses such a package (and mem0ai)."""
    assert not pkg_util.install_package(PINNED, **kwargs)
    assert "depends on protobuf<7" in " ".join(caplog.text.split())
    assert not Path(str(kwargs["target"])).joinpath("soul_pinned").exists()


def test_install_without_dependencies_skips_the_pin(
    index: LocalIndex, kwargs: dict[str, Any]
) -> None:
    """Installed alone, under the constraints and into the target; it imports."""
    install_without_dependencies(PINNED, **kwargs)
    target = Path(str(kwargs["target"]))
    installed = {p.name for p in target.iterdir() if not p.name.startswith(".")}
    # The constraints chose 1.0 over 2.0; protobuf stayed out.
    assert installed == {"soul_pinned", "soul_pinned-1.0.dist-info"}
    assert import_from(str(target), "soul_pinned") == "1.0"
    # Installed again: nothing to do, no error.
    install_without_dependencies(f"{PINNED}==1.0", **kwargs)


def test_install_without_dependencies_says_why_it_failed(
    index: LocalIndex, kwargs: dict[str, Any]
) -> None:
    with pytest.raises(RuntimeError, match=r"cannot install soul-missing==1\.0: .+"):
        install_without_dependencies("soul-missing==1.0", **kwargs)
    with pytest.raises(RuntimeError, match=r"cannot install soul-pinned==2\.0"):
        install_without_dependencies(f"{PINNED}==2.0", **kwargs)


@pytest.mark.usefixtures("mem0_installed")
def test_mem0_dependencies_are_mem0ai_s_own_without_protobuf() -> None:
    """MEM0_DEPENDENCIES follows the metadata of the pinned mem0ai, minus protobuf."""
    assert Requirement(MEM0_REQUIREMENT).specifier.contains(version("mem0ai"))
    declared = [Requirement(r) for r in requires("mem0ai") or []]
    runtime = {
        canonicalize_name(r.name): r.specifier
        for r in declared
        if r.marker is None or r.marker.evaluate({"extra": ""})
    }
    # The spurious pin: mem0 never imports protobuf (qdrant-client, which does,
    # accepts protobuf 7). When mem0ai drops it, mem0ai can be installed normally.
    assert runtime.pop("protobuf") == SpecifierSet(">=5.29.6,<7.0.0")
    listed = {
        canonicalize_name(Requirement(r).name): Requirement(r)
        for r in MEM0_DEPENDENCIES
    }
    assert {name: r.specifier for name, r in listed.items()} == runtime
    assert all(r.marker is None and not r.extras for r in listed.values())


def test_requirements_test_installs_mem0_s_requirements_not_mem0ai() -> None:
    """The test environment gets mem0ai from the mem0_installed fixture only."""
    lines = (ROOT / "requirements_test.txt").read_text(encoding="utf-8").splitlines()
    listed = {
        str(Requirement(line))
        for line in lines
        if line and not line.startswith(("#", "-"))
    }
    assert {str(Requirement(r)) for r in MEM0_DEPENDENCIES} <= listed
    assert "mem0ai" not in {Requirement(r).name for r in listed}


MISSING_DEPENDENCY = """
import os, sys, types
# The core alone: skip the integration's __init__ (and Home Assistant).
for name in ("custom_components", "custom_components.soul"):
    package = types.ModuleType(name)
    package.__path__ = [os.path.join(sys.argv[1], *name.split("."))]
    sys.modules[name] = package
from custom_components.soul.core.memory.mem0_embedded import import_mem0, mem0_available
sys.modules[sys.argv[3]] = None  # mem0ai installed, this dependency is not
assert mem0_available()
try:
    import_mem0(sys.argv[2])
except ImportError as err:
    print(err)
else:
    print("imported")
"""


@pytest.mark.usefixtures("mem0_installed")
@pytest.mark.parametrize("dependency", ["posthog", "qdrant_client", "openai"])
def test_importing_mem0_proves_its_dependencies(
    tmp_path: Path, dependency: str
) -> None:
    """``import_mem0`` fails on a missing dependency where ``mem0_available`` cannot."""
    done = subprocess.run(  # noqa: S603 - our own command
        [
            sys.executable,
            "-c",
            MISSING_DEPENDENCY,
            str(ROOT),
            str(tmp_path / "mem0"),
            dependency,
        ],
        env={k: v for k, v in os.environ.items() if not k.startswith("MEM0_")},
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert dependency in done.stdout
    assert "imported" not in done.stdout
