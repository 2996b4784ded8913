"""The README's two commands install what each needs: `make serve` the package alone,
`make test` the [dev] extra on top (a dry run of the Makefile in a fresh folder)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_serve_installs_only_what_serving_needs(tmp_path: Path) -> None:
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)

    def dry(target: str) -> str:
        done = subprocess.run(
            ["make", "-n", target], cwd=tmp_path, capture_output=True, text=True, check=False
        )
        return done.stdout

    serve = dry("serve")
    assert "pip install --quiet -e ." in serve and "[dev]" not in serve
    assert "-e '.[dev]'" in dry("test")
