"""Print the PyPI requirements of the Home Assistant components Soul depends on.

Home Assistant installs a component's requirements when it loads it; tests load
the components directly, so ``scripts/setup`` installs them up front. The list
follows ``dependencies`` and ``after_dependencies`` of our manifest recursively,
through the manifests of the installed ``homeassistant`` package.
"""

from __future__ import annotations

import json
from pathlib import Path

import homeassistant

ROOT = Path(__file__).resolve().parent.parent
COMPONENTS = Path(homeassistant.__file__).parent / "components"
# Loaded by the tests and by scripts/develop's configuration besides our dependencies.
EXTRA = ("assist_pipeline", "diagnostics")


def component_requirements(manifest_path: Path) -> list[str]:
    """Return the requirements of every component in the manifest's dependency closure."""
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    todo = [
        *manifest.get("dependencies", []),
        *manifest.get("after_dependencies", []),
        *EXTRA,
    ]
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
        data = json.loads(path.read_text(encoding="utf-8"))
        requirements.update(data.get("requirements", []))
        todo.extend(data.get("dependencies", []))
    return sorted(requirements)


if __name__ == "__main__":
    print(
        "\n".join(component_requirements(ROOT / "custom_components/soul/manifest.json"))
    )
