"""read, list and glob on a real project directory, including escapes out of it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from partwire.errors import RejectedError, ToolArgumentsError, ToolError
from partwire.tools import glob, read
from partwire.tools import list as list_tool
from partwire.tools.base import ToolContext
from tests.tools.conftest import Asks


def _ctx(project: Path) -> ToolContext:
    return ToolContext(
        session_id="ses_1", message_id="msg_1", call_id="c", agent="build", project_dir=project
    )


async def test_read_numbers_lines_and_honours_offset_and_limit(project: Path) -> None:
    result = await read.TOOL.run(
        {"filePath": "src/app.py", "offset": 10, "limit": 3}, _ctx(project)
    )
    lines = result.output.splitlines()
    assert lines[1:4] == ["00011| line 11", "00012| line 12", "00013| line 13"]
    assert "offset=13" in result.output
    assert result.title == "src/app.py" and result.metadata["lines"] == 50


async def test_read_missing_file_suggests_close_names(project: Path) -> None:
    with pytest.raises(ToolError, match=r"File not found: READM\.md\. Did you mean: README\.md"):
        await read.TOOL.run({"filePath": "READM.md"}, _ctx(project))


async def test_read_binary_and_directory_are_clear_errors(project: Path) -> None:
    (project / "blob.bin").write_bytes(b"\x00\x01\x02")
    with pytest.raises(ToolError, match="binary"):
        await read.TOOL.run({"filePath": "blob.bin"}, _ctx(project))
    with pytest.raises(ToolError, match="is a directory"):
        await read.TOOL.run({"filePath": "src"}, _ctx(project))


@pytest.mark.parametrize(
    "escape", ["../secret.txt", "src/../../secret.txt", "ABSOLUTE", "link.txt"]
)
async def test_paths_outside_the_project_ask_external_directory(project: Path, escape: str) -> None:
    outside = project.parent / "secret.txt"
    os.symlink(outside, project / "link.txt")
    path = str(outside) if escape == "ABSOLUTE" else escape
    ctx, recorder = _ctx(project), Asks(reject=["external_directory"])
    ctx.asker = recorder
    with pytest.raises(RejectedError):
        await read.TOOL.run({"filePath": path}, ctx)
    assert [a[:2] for a in recorder.asks] == [("external_directory", [f"{project.parent}/*"])]
    with pytest.raises(RejectedError):
        await list_tool.TOOL.run({"path": ".." if escape != "ABSOLUTE" else "/"}, ctx)


async def test_paths_inside_the_project_only_ask_the_tools_own_permission(project: Path) -> None:
    ctx, recorder = _ctx(project), Asks(reject=["external_directory"])
    ctx.asker = recorder
    await read.TOOL.run({"filePath": "src/../README.md"}, ctx)
    assert [a[:2] for a in recorder.asks] == [("read", [str(project / "README.md")])]


async def test_invalid_arguments_are_explained_for_the_model(project: Path) -> None:
    with pytest.raises(ToolArgumentsError, match=r"filePath: Field required.*Rewrite the input"):
        await read.TOOL.run({"path": "README.md"}, _ctx(project))
    with pytest.raises(ToolArgumentsError, match="offset"):
        await read.TOOL.run({"filePath": "README.md", "offset": -1}, _ctx(project))


async def test_list_shows_a_tree_and_skips_ignored_dirs(project: Path) -> None:
    (project / ".git").mkdir()
    (project / ".git" / "HEAD").write_text("ref")
    result = await list_tool.TOOL.run({}, _ctx(project))
    body = result.output.splitlines()[1:]
    assert body == ["  src/", "    app.py", "  README.md", "  notes.txt"]
    ignored = await list_tool.TOOL.run({"ignore": ["*.txt"]}, _ctx(project))
    assert "notes.txt" not in ignored.output


async def test_glob_matches_recursively_inside_the_project(project: Path) -> None:
    result = await glob.TOOL.run({"pattern": "**/*.py"}, _ctx(project))
    assert result.output.splitlines() == [str(project / "src" / "app.py")]
    none = await glob.TOOL.run({"pattern": "*.rs"}, _ctx(project))
    assert none.output == "No files found"
    with pytest.raises(ToolError, match="inside the searched folder"):
        await glob.TOOL.run({"pattern": "../*.txt"}, _ctx(project))
