"""grep with ripgrep and with the pure-Python fallback: the same answers."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from partwire.tools import grep
from partwire.tools.base import ToolContext

BACKENDS = [
    "python",
    pytest.param(
        "rg", marks=pytest.mark.skipif(shutil.which("rg") is None, reason="ripgrep not installed")
    ),
]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "python":
        monkeypatch.setattr(grep.shutil, "which", lambda name: None)
    return str(request.param)


async def test_grep_finds_lines_grouped_by_file(backend: str, ctx: ToolContext) -> None:
    result = await grep.TOOL.run({"pattern": r"line 4\d"}, ctx)
    lines = result.output.splitlines()
    assert lines[0] == "Found 10 matches"
    assert lines[1] == "src/app.py:"
    assert lines[2] == "  Line 40: line 40"
    assert result.metadata["matches"] == 10


async def test_grep_include_and_path_filters(backend: str, ctx: ToolContext, project: Path) -> None:
    (project / ".git").mkdir()
    (project / ".git" / "config").write_text("alpha\n")
    by_glob = await grep.TOOL.run({"pattern": "alpha", "include": "*.txt"}, ctx)
    assert by_glob.output.splitlines() == ["Found 1 matches", "notes.txt:", "  Line 1: alpha"]
    nothing = await grep.TOOL.run({"pattern": "alpha", "path": "src"}, ctx)
    assert nothing.output == "No files found"


async def test_grep_python_fallback_reports_bad_patterns(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    from partwire.errors import ToolError

    monkeypatch.setattr(grep.shutil, "which", lambda name: None)
    with pytest.raises(ToolError, match="Invalid regular expression"):
        await grep.TOOL.run({"pattern": "("}, ctx)
