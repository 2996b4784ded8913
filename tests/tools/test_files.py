"""write, edit and apply_patch on a real project directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from partwire.errors import RejectedError, ToolError
from partwire.tools import apply_patch, edit, write
from partwire.tools.base import ToolContext
from tests.tools.conftest import Asks


async def test_write_creates_folders_and_asks_edit_with_the_diff(
    ctx: ToolContext, project: Path, asks: Asks
) -> None:
    result = await write.TOOL.run({"filePath": "pkg/new.py", "content": "x = 1\n"}, ctx)
    assert (project / "pkg" / "new.py").read_text() == "x = 1\n"
    assert result.output == "Wrote pkg/new.py (1 lines)."
    permission, patterns, metadata = asks.asks[0]
    assert (permission, patterns) == ("edit", ["pkg/new.py"])
    assert "+x = 1" in metadata["diff"]
    assert result.metadata["filediff"]["status"] == "added"


async def test_a_rejected_write_changes_nothing(ctx: ToolContext, project: Path) -> None:
    ctx.asker = Asks(reject=["edit"])
    with pytest.raises(RejectedError):
        await write.TOOL.run({"filePath": "README.md", "content": "gone"}, ctx)
    assert (project / "README.md").read_text().startswith("# Sample")


async def test_edit_replaces_a_unique_string_and_reports_a_diff(
    ctx: ToolContext, project: Path
) -> None:
    args = {"filePath": "README.md", "oldString": "A sample project.", "newString": "A demo."}
    result = await edit.TOOL.run(args, ctx)
    assert (project / "README.md").read_text() == "# Sample\n\nA demo.\n"
    assert "-A sample project." in result.metadata["diff"]
    assert "+A demo." in result.metadata["diff"]
    assert result.metadata["filediff"]["additions"] == 1


async def test_edit_refuses_ambiguous_or_missing_strings(ctx: ToolContext, project: Path) -> None:
    with pytest.raises(ToolError, match="found 50 times.*replaceAll"):
        await edit.TOOL.run(
            {"filePath": "src/app.py", "oldString": "line", "newString": "row"}, ctx
        )
    with pytest.raises(ToolError, match="was not found in README.md"):
        await edit.TOOL.run({"filePath": "README.md", "oldString": "nope", "newString": "x"}, ctx)
    with pytest.raises(ToolError, match="File not found"):
        await edit.TOOL.run({"filePath": "gone.md", "oldString": "a", "newString": "b"}, ctx)
    args = {"filePath": "src/app.py", "oldString": "line ", "newString": "row ", "replaceAll": True}
    await edit.TOOL.run(args, ctx)
    assert (project / "src" / "app.py").read_text().count("row ") == 50


async def test_edit_with_empty_old_string_creates_a_file(ctx: ToolContext, project: Path) -> None:
    await edit.TOOL.run({"filePath": "new.txt", "oldString": "", "newString": "hello\n"}, ctx)
    assert (project / "new.txt").read_text() == "hello\n"
    with pytest.raises(ToolError, match="already exists"):
        await edit.TOOL.run({"filePath": "new.txt", "oldString": "", "newString": "x"}, ctx)


PATCH = """*** Begin Patch
*** Add File: docs/guide.md
+# Guide
+Read me.
*** Update File: src/app.py
@@ line 9
 line 10
-line 11
+line eleven
 line 12
*** Update File: notes.txt
*** Move to: archive/notes.txt
@@
-beta
+gamma
*** Delete File: README.md
*** End Patch"""


async def test_apply_patch_adds_updates_moves_and_deletes(
    ctx: ToolContext, project: Path, asks: Asks
) -> None:
    result = await apply_patch.TOOL.run({"patchText": PATCH}, ctx)
    assert (project / "docs" / "guide.md").read_text() == "# Guide\nRead me.\n"
    app = (project / "src" / "app.py").read_text().splitlines()
    assert app[9:12] == ["line 10", "line eleven", "line 12"]
    assert not (project / "notes.txt").exists()
    assert (project / "archive" / "notes.txt").read_text() == "alpha\ngamma\n"
    assert not (project / "README.md").exists()
    assert asks.asks[0][0] == "edit"
    assert sorted(asks.asks[0][1]) == sorted(
        ["docs/guide.md", "src/app.py", "notes.txt", "archive/notes.txt", "README.md"]
    )
    assert result.output.splitlines()[0] == "Success. Updated the following files:"
    assert "A docs/guide.md" in result.output and "D README.md" in result.output


async def test_apply_patch_is_all_or_nothing(ctx: ToolContext, project: Path) -> None:
    bad = PATCH.replace("-line 11", "-line 999")
    before = {p: p.read_text() for p in project.rglob("*") if p.is_file()}
    with pytest.raises(ToolError, match="Could not find these lines in src/app.py"):
        await apply_patch.TOOL.run({"patchText": bad}, ctx)
    after = {p: p.read_text() for p in project.rglob("*") if p.is_file()}
    assert after == before


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("no header", "must start with"),
        ("*** Begin Patch\n*** End Patch", "changes no files"),
        ("*** Begin Patch\n*** Add File: README.md\n+x\n*** End Patch", "already exists"),
        ("*** Begin Patch\n*** Delete File: nope.txt\n*** End Patch", "file not found"),
        ("*** Begin Patch\n*** Update File: notes.txt\n*** End Patch", "has no hunks"),
        ("*** Begin Patch\nrandom\n*** End Patch", "Unexpected line"),
    ],
)
async def test_apply_patch_errors_are_clear(ctx: ToolContext, text: str, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        await apply_patch.TOOL.run({"patchText": text}, ctx)
