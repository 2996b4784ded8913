"""One data dir, one server; and every storage fault is one line, exit 1, nothing changed."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from partwire.storage.migrations import LATEST_VERSION
from tests.served import free_port, partwire_serve


def _env(state: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PARTWIRE_DATA_DIR": str(state / "data"),
        "PARTWIRE_CONFIG_DIR": str(state / "config"),
        "PARTWIRE_DEMO_DELAY_MS": "0",
    }


def _partwire(state: Path, project: Path, *args: str, timeout: float = 60) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "partwire", *args],
        env=_env(state),
        cwd=project,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return done.returncode, done.stdout + done.stderr


def _one_error_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, output
    assert "Traceback" not in output, output
    return lines[0]


def _serve(state: Path, project: Path) -> tuple[int, str]:
    return _partwire(state, project, "serve", "--port", str(free_port()), timeout=30)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def stored(tmp_path: Path, project: Path) -> Path:
    """A data dir holding one answered session; returns the state dir."""
    state = tmp_path / "state"
    code, output = _partwire(state, project, "run", "long 5")
    assert code == 0, output
    return state


def test_a_second_server_on_the_data_dir_refuses_and_run_attaches(
    tmp_path: Path, project: Path
) -> None:
    state = tmp_path / "state"
    with partwire_serve(project, state) as url:
        code, output = _serve(state, project)
        assert code == 1
        line = _one_error_line(output)
        holder = (state / "data" / "partwire.lock").read_text()
        assert "in use by partwire (PID" in line and url in line and str(url) in holder

        code, output = _partwire(state, project, "run", "long 4")  # no --attach
        assert code == 0, output
        assert f"attached to the running server {url}" in output and "w0 w1 w2 w3" in output
    # nobody holds it now: run works in-process, and a crash leaves no stale lock behind
    code, output = _partwire(state, project, "run", "long 2")
    assert code == 0 and "attached" not in output and "w0 w1" in output


def test_a_killed_server_leaves_no_stale_lock(tmp_path: Path, project: Path) -> None:
    state = tmp_path / "state"
    env = _env(state)
    port = free_port()
    command = [sys.executable, "-m", "partwire", "serve", "--port", str(port)]
    server = subprocess.Popen(command, env=env, cwd=project, stderr=subprocess.PIPE)
    try:
        assert server.stderr is not None
        server.stderr.readline()  # the banner: it holds the lock now
    finally:
        server.kill()
        server.wait()
        assert server.stderr is not None
        server.stderr.close()
    code, output = _partwire(state, project, "run", "long 2")
    assert code == 0, output


def test_a_database_with_garbage_pages_refuses_to_start(stored: Path, project: Path) -> None:
    db = stored / "data" / "partwire.db"
    body = bytearray(db.read_bytes())
    assert len(body) > 4096 * 4
    for offset in range(4096 * 2, 4096 * 4):
        body[offset] = (offset * 7) % 256
    db.write_bytes(bytes(body))
    before = _digest(db)
    code, output = _serve(stored, project)
    assert code == 1
    line = _one_error_line(output)
    assert str(db) in line and "damaged" in line
    assert " on http://" not in output  # no banner for a server that never served
    assert _digest(db) == before
    code, output = _partwire(stored, project, "db", "check")
    assert code == 1 and "damaged" in output and "Traceback" not in output


def test_a_truncated_database_refuses_to_start(stored: Path, project: Path) -> None:
    db = stored / "data" / "partwire.db"
    db.write_bytes(db.read_bytes()[:3000])
    before = _digest(db)
    code, output = _serve(stored, project)
    assert code == 1 and "damaged" in _one_error_line(output)
    assert _digest(db) == before


def test_a_database_from_a_newer_schema_is_not_touched(stored: Path, project: Path) -> None:
    db = stored / "data" / "partwire.db"
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO schema_version VALUES (99, 'future', datetime('now'))")
    conn.close()
    before = _digest(db)
    for args in (("serve", "--port", str(free_port())), ("run", "hello")):
        code, output = _partwire(stored, project, *args)
        assert code == 1
        line = _one_error_line(output)
        assert "schema version 99" in line and "upgrade partwire" in line
    assert _digest(db) == before


def test_an_unusable_data_dir_is_one_line(tmp_path: Path, project: Path) -> None:
    blocker = tmp_path / "state" / "data"
    blocker.parent.mkdir(parents=True)
    blocker.write_text("a file where the data dir should be")
    code, output = _serve(tmp_path / "state", project)
    assert code == 1
    line = _one_error_line(output)
    assert str(blocker) in line and "PARTWIRE_DATA_DIR" in line


def test_db_check_and_backup(stored: Path, project: Path, tmp_path: Path) -> None:
    code, output = _partwire(stored, project, "db", "check")
    assert code == 0, output
    assert "integrity ok" in output and f"schema {LATEST_VERSION}" in output
    assert "1 sessions" in output
    copy = tmp_path / "copy.db"
    code, output = _partwire(stored, project, "db", "backup", str(copy))
    assert code == 0 and copy.exists()
    with sqlite3.connect(copy) as conn:
        assert conn.execute("SELECT COUNT(*) FROM message").fetchone()[0] == 2
    conn.close()
    code, output = _partwire(stored, project, "db", "backup", str(copy))
    assert code == 1 and "exists" in _one_error_line(output)
    empty = tmp_path / "empty-state"
    code, output = _partwire(empty, project, "db", "check")
    assert code == 1 and "no database" in _one_error_line(output)
