"""Secrets at rest: the data dir is 0700, the database with its -wal and -shm and
auth.json are 0600 from creation, and auth.json is never written through a file someone
left in its place."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from partwire import keys
from partwire.config import Settings
from partwire.server.runner import serve_in_background


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_the_data_dir_and_database_are_owner_only(settings: Settings) -> None:
    settings.data_dir.mkdir(parents=True)
    settings.data_dir.chmod(0o755)  # a data dir made by an older version
    old = os.umask(0o022)
    try:
        async with serve_in_background(settings):
            files = [
                settings.database_path.with_name("partwire.db" + s) for s in ("", "-wal", "-shm")
            ]
            assert all(path.exists() for path in files)
            assert [_mode(path) for path in files] == [0o600] * 3
            assert _mode(settings.data_dir) == 0o700
    finally:
        os.umask(old)


def test_auth_json_is_written_owner_only_through_a_fresh_file(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    # a stale temp file (the old fixed name) and a symlink planted where a temp could go
    (data / "auth.tmp").write_text("stale")
    (data / "auth.tmp").chmod(0o644)
    elsewhere = tmp_path / "elsewhere"
    (data / ".auth.json.tmp").symlink_to(elsewhere)
    old = os.umask(0o022)
    try:
        keys.store(data, "openai", "sk-secret")
    finally:
        os.umask(old)
    assert _mode(data / "auth.json") == 0o600
    assert keys.stored(data) == {"openai": "sk-secret"}
    assert not elsewhere.exists()
    assert [
        p.name for p in data.iterdir() if p.name.endswith(".tmp") and "auth.json." in p.name
    ] == [".auth.json.tmp"]  # only the planted link; no temp file of ours left behind
