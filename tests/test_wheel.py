"""The wheel carries the built web UI, so installing it needs no Node.js."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from partwire.server.ui import STATIC_DIR

ROOT = Path(__file__).resolve().parents[1]


def test_the_wheel_contains_the_built_ui(tmp_path: Path) -> None:
    if not (STATIC_DIR / "index.html").is_file():
        pytest.skip("the web UI is not built (make ui)")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("partwire-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    built = {
        "partwire/server/static/" + path.relative_to(STATIC_DIR).as_posix()
        for path in STATIC_DIR.rglob("*")
        if path.is_file()
    }
    assert "partwire/server/static/index.html" in names
    assert any(name.endswith(".js") for name in built)
    assert built <= names
    assert not any(name.startswith("web/") or "node_modules" in name for name in names)
