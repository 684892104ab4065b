"""Requirements of the Home Assistant components Soul's tests and scripts/develop load.

Home Assistant installs a component's requirements when it loads it. The tests
load components directly, and on Python < 3.13.2 Home Assistant's own installer
refuses packages that declare a newer Python, so ``scripts/setup`` and
``scripts/develop`` install them up front. Dependencies are followed recursively
through the manifests of the installed ``homeassistant`` package.

    python -m devtools.ha_requirements            # what the tests need
    python -m devtools.ha_requirements --develop  # plus a running Home Assistant
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
import json
from pathlib import Path

import homeassistant

ROOT = Path(__file__).resolve().parent.parent
COMPONENTS = Path(homeassistant.__file__).parent / "components"
SOUL_MANIFEST = ROOT / "custom_components" / "soul" / "manifest.json"
# Loaded by tests besides Soul's own dependencies (mcp_server: an MCP client
# reaches the bodies through Home Assistant's MCP server, docs/mcp.md).
TEST_EXTRA = ("assist_pipeline", "diagnostics", "mcp_server")


def _manifest(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def requirements_for(domains: Iterable[str]) -> list[str]:
    """Return the requirements of ``domains`` and everything they depend on."""
    todo = list(domains)
    seen: set[str] = set()
    requirements: set[str] = set()
    while todo:
        domain = todo.pop()
        if domain in seen:
            continue
        seen.add(domain)
        path = COMPONENTS / domain / "manifest.json"
        if not path.exists():
            continue
        manifest = _manifest(path)
        requirements.update(manifest.get("requirements", []))
        # after_dependencies too: Home Assistant imports them with the component.
        todo.extend(manifest.get("dependencies", []))
        todo.extend(manifest.get("after_dependencies", []))
    return sorted(requirements)


def soul_dependencies() -> list[str]:
    """Return the components Soul's manifest depends on."""
    manifest = _manifest(SOUL_MANIFEST)
    return [*manifest.get("dependencies", []), *manifest.get("after_dependencies", [])]


def develop_domains(configured: Iterable[str]) -> set[str]:
    """Return what a running Home Assistant sets up with ``configured`` integrations."""
    from homeassistant import bootstrap  # noqa: PLC0415

    return {
        *bootstrap.CORE_INTEGRATIONS,
        *bootstrap.LOGGING_AND_HTTP_DEPS_INTEGRATIONS,
        *bootstrap.DEFAULT_INTEGRATIONS,
        *soul_dependencies(),
        *configured,
    }


def main() -> None:
    """Print one requirement a line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--develop", action="store_true")
    args = parser.parse_args()
    domains = {*soul_dependencies(), *TEST_EXTRA}
    if args.develop:
        domains |= develop_domains(())
    print("\n".join(requirements_for(domains)))


if __name__ == "__main__":
    main()
