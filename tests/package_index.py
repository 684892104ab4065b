"""A local package index for tests that install packages for real, with uv.

``LocalIndex(root, monkeypatch)`` makes uv -- run by Home Assistant's
``install_package`` or by Soul -- resolve from a PEP 503 index under ``root``
and nowhere else (no network, no configuration file, a cache of its own);
``add`` writes a pure-Python wheel into it.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
import hashlib
from pathlib import Path
import zipfile

import pytest

# Where else uv could look for packages or settings.
UV_VARIABLES = (
    "UV_INDEX", "UV_INDEX_URL", "UV_EXTRA_INDEX_URL", "UV_FIND_LINKS",
    "UV_NO_INDEX", "UV_OFFLINE", "UV_CONSTRAINT", "UV_OVERRIDE",
)  # fmt: skip


class LocalIndex:
    """A package index in a directory, the only one uv sees while the test runs."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """Create the empty index under ``root`` and point uv at it."""
        self.root = root
        self.simple = root / "simple"
        self.simple.mkdir(parents=True)
        for variable in UV_VARIABLES:
            monkeypatch.delenv(variable, raising=False)
        monkeypatch.setenv("UV_DEFAULT_INDEX", self.simple.as_uri())
        monkeypatch.setenv("UV_CACHE_DIR", str(root / "uv-cache"))
        monkeypatch.setenv("UV_NO_CONFIG", "1")

    def add(
        self,
        name: str,
        version: str,
        requires: Sequence[str] = (),
        code: str | None = None,
    ) -> Path:
        """Publish a wheel of ``name``: metadata, and module ``name`` when ``code``."""
        module = name.replace("-", "_")
        info = f"{module}-{version}.dist-info"
        files = {
            f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\n"
            f"Version: {version}\n"
            + "".join(f"Requires-Dist: {r}\n" for r in requires),
            f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: soul-tests\n"
            "Root-Is-Purelib: true\nTag: py3-none-any\n",
        }
        if code is not None:
            files[f"{module}/__init__.py"] = code
        record = ""
        for path, text in files.items():
            data = text.encode()
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest())
            record += f"{path},sha256={digest.rstrip(b'=').decode()},{len(data)}\n"
        files[f"{info}/RECORD"] = record + f"{info}/RECORD,,\n"
        wheel = self.root / "files" / f"{module}-{version}-py3-none-any.whl"
        wheel.parent.mkdir(exist_ok=True)
        with zipfile.ZipFile(wheel, "w") as archive:
            for path, text in files.items():
                archive.writestr(path, text)
        page = self.simple / name / "index.html"
        page.parent.mkdir(exist_ok=True)
        with page.open("a", encoding="utf-8") as links:
            links.write(f'<a href="{wheel.as_uri()}">{wheel.name}</a>\n')
        return wheel
