"""The project's file listing behind @-mentions and GET /find/file: what .gitignore
leaves, never what a link leads to outside, and the same without ripgrep or git."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx
import pytest

from partwire import file_index
from partwire.config import Settings
from partwire.server.runner import serve_in_background


def _tree(root: Path, outside: Path) -> None:
    (root / ".gitignore").write_text("generated/\n*.log\n")
    for name in ("README.md", "src/app.py", "src/readme_notes.txt", "generated/README.md", "x.log"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x\n")
    (root / "node_modules" / "pkg").mkdir(parents=True)
    (root / "node_modules" / "pkg" / "README.md").write_text("x\n")
    outside.mkdir()
    (outside / "README.md").write_text("secret\n")
    (root / "linked").symlink_to(outside, target_is_directory=True)
    (root / "linked_readme.md").symlink_to(outside / "README.md")


EXPECTED = (".gitignore", "README.md", "src/app.py", "src/readme_notes.txt")


@pytest.mark.parametrize("lister", ["ripgrep", "git", "walk"])
def test_the_listing_leaves_out_ignored_files_and_links_out(
    tmp_path: Path, lister: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "project"
    root.mkdir()
    _tree(root, tmp_path / "outside")
    if lister == "git":
        subprocess.run(["git", "init", "-q"], cwd=root, check=True)
        monkeypatch.setattr(file_index, "_ripgrep", lambda _root: None)
    elif lister == "walk":
        monkeypatch.setattr(file_index, "_ripgrep", lambda _root: None)
        monkeypatch.setattr(file_index, "_git", lambda _root: None)
    files = file_index._listed(root.resolve())
    if lister == "walk":  # no .gitignore reading without ripgrep or git: the rest holds
        assert set(EXPECTED) <= set(files)
    else:
        assert files == EXPECTED
    assert not any(name.startswith(("node_modules/", "linked/")) for name in files)
    assert "linked_readme.md" not in files


async def test_find_file_answers_from_the_listing(settings: Settings) -> None:
    _tree(settings.project_dir, settings.project_dir.parent / "outside")
    async with serve_in_background(settings) as url, httpx.AsyncClient(base_url=url) as http:
        found = (await http.get("/find/file", params={"query": "READ"})).json()
        assert found == ["README.md", "src/readme_notes.txt"]
        folders = (await http.get("/find/file", params={"query": "src", "dirs": "true"})).json()
        assert folders[0] == "src"
