"""mem0 in the test environment, installed the way Soul installs it in Home Assistant.

``requirements_test.txt`` lists mem0's real requirements (``MEM0_DEPENDENCIES``)
but never mem0ai: its metadata pins protobuf<7, and a resolver without Home
Assistant's constraints (the newest lane, ``../shared/tools/ha-newest``)
would downgrade the protobuf 7 that Home Assistant ≥ 2026.10 pins. Before the
first mem0 test, ``prepare_mem0`` gives protobuf the version Home Assistant
pins and installs mem0ai with the integration's own
``install_without_dependencies``, so both lanes run mem0 as users get it.
"""

from __future__ import annotations

from pathlib import Path
import sys

from homeassistant import requirements as ha_requirements
from homeassistant.requirements import pip_kwargs
from homeassistant.util import package as pkg_util
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from custom_components.soul.const import MEM0_DEPENDENCIES, MEM0_REQUIREMENT
from custom_components.soul.memory import install_without_dependencies

CONSTRAINTS = Path(ha_requirements.__file__).with_name(ha_requirements.CONSTRAINT_FILE)


def ha_pin(name: str) -> str | None:
    """Return Home Assistant's constraint on ``name`` (``package_constraints.txt``)."""
    for line in CONSTRAINTS.read_text(encoding="utf-8").splitlines():
        try:
            requirement = Requirement(line.split("#", 1)[0].strip())
        except InvalidRequirement:
            continue
        if canonicalize_name(requirement.name) == canonicalize_name(name):
            return str(requirement)
    return None


def prepare_mem0() -> None:
    """Install what the embedded backend needs here, as Home Assistant would.

    Home Assistant's protobuf pin first (only while protobuf is not imported:
    its files change), then mem0's requirements with Home Assistant's
    ``install_package`` and mem0ai with Soul's ``--no-deps`` install, each
    under Home Assistant's constraints and only when missing.
    """
    kwargs = pip_kwargs(None)  # Home Assistant's constraints, into this environment
    if (pin := ha_pin("protobuf")) and not pkg_util.is_installed(pin):
        if "google.protobuf" in sys.modules:
            raise RuntimeError(f"protobuf is imported; install {pin} before the tests")
        if not pkg_util.install_package(pin, **kwargs):
            raise RuntimeError(f"cannot install Home Assistant's {pin}")
    for requirement in MEM0_DEPENDENCIES:
        if not pkg_util.is_installed(requirement) and not pkg_util.install_package(
            requirement, **kwargs
        ):
            raise RuntimeError(f"cannot install {requirement}")
    if not pkg_util.is_installed(MEM0_REQUIREMENT):
        install_without_dependencies(MEM0_REQUIREMENT, **kwargs)
