"""Search routes and tools never follow a symlink out of the project, and a pathological
pattern neither stalls the server nor runs without a time limit."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import pytest

from partwire.tools import glob, grep
from partwire.tools import list as list_tool
from partwire.tools.base import ToolContext
from partwire.tools.textsearch import SEARCH_SECONDS
from partwire.workspace import fuzzy_window

SECRET = "TOP-SECRET-4711"


@pytest.fixture
def linked(project: Path, tmp_path: Path) -> Path:
    """The project holds a symlinked file and a symlinked folder, both pointing out."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(f"{SECRET}\n")
    (project / "leak.txt").symlink_to(outside / "secret.txt")
    (project / "leakdir").symlink_to(outside, target_is_directory=True)
    (project / "inner.txt").write_text("inner TOP-SECRET-4711 copy? no: inner\n")
    return project


async def test_find_routes_do_not_follow_links_out(http: httpx.AsyncClient, linked: Path) -> None:
    text = (await http.get("/find", params={"pattern": "TOP-SECRET"})).json()
    paths = {m["path"]["text"] for m in text}
    assert paths == {"inner.txt"}
    files = (await http.get("/find/file", params={"query": "secret"})).json()
    assert not any("leak" in name for name in files)
    leak = await http.get("/file/content", params={"path": "leak.txt"})
    assert leak.status_code == 400


def _ctx(project: Path) -> ToolContext:
    return ToolContext(
        session_id="ses_1", message_id="msg_1", call_id="c", agent="build", project_dir=project
    )


@pytest.mark.parametrize("backend", ["ripgrep", "python"])
async def test_grep_does_not_follow_links_out(
    linked: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if backend == "python":
        monkeypatch.setattr(grep.shutil, "which", lambda name: None)
    elif grep.shutil.which("rg") is None:
        pytest.skip("ripgrep is not installed (make system installs it)")
    result = await grep.TOOL.run({"pattern": "TOP-SECRET"}, _ctx(linked))
    assert "inner.txt" in result.output and "leak" not in result.output


async def test_glob_and_list_do_not_follow_links_out(linked: Path) -> None:
    found = await glob.TOOL.run({"pattern": "**/*.txt"}, _ctx(linked))
    assert "inner.txt" in found.output and "secret.txt" not in found.output
    assert "leak.txt" not in found.output
    listed = await list_tool.TOOL.run({"path": "."}, _ctx(linked))
    assert "secret.txt" not in listed.output  # the linked folder is not walked into


async def test_a_pathological_pattern_does_not_stall_the_server(
    http: httpx.AsyncClient, project: Path
) -> None:
    (project / "evil.txt").write_text("a" * 30 + "!\n")
    search = asyncio.create_task(http.get("/find", params={"pattern": "(a+)+$"}, timeout=60))
    await asyncio.sleep(0.2)  # the search is running now
    for _ in range(5):
        started = time.monotonic()
        health = await http.get("/global/health")
        assert health.status_code == 200
        assert time.monotonic() - started < 0.3  # a stalled loop would hold it for the whole search
        await asyncio.sleep(0.05)
    started = time.monotonic()
    response = await search
    assert time.monotonic() - started < SEARCH_SECONDS + 1
    assert response.status_code in (200, 400)  # found nothing, or said it took too long
    if response.status_code == 400:
        assert "longer than" in response.json()["data"]["message"]


async def test_a_long_fuzzy_query_is_linear(http: httpx.AsyncClient, project: Path) -> None:
    (project / ("a" * 60 + ".txt")).write_text("x")
    started = time.monotonic()
    response = await http.get("/find/file", params={"query": "a" * 40 + "b"})
    assert response.status_code == 200 and response.json() == []
    assert time.monotonic() - started < 1


def test_fuzzy_window_measures_the_first_span() -> None:
    assert fuzzy_window("abc", "xxaxxbxcxx") == 6
    assert fuzzy_window("abc", "zzabczz") == 3
    assert fuzzy_window("abd", "abc") is None
