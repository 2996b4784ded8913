from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from partwire.client.http import PartwireClient
from partwire.config import Settings, load_settings
from partwire.runtime import Runtime
from partwire.server.runner import serve_in_background
from tests import scripted
from tests.postgres_server import PostgresServer, server_bin
from tests.redis_server import RedisServer, server_path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "README.md").write_text("# Sample\n\nA sample project.\n")
    (root / "src" / "app.py").write_text("".join(f"line {i}\n" for i in range(1, 51)))
    (root / "notes.txt").write_text("alpha\nbeta\n")
    (tmp_path / "secret.txt").write_text("outside the project\n")
    return root


@pytest.fixture
def settings(tmp_path: Path, project: Path) -> Settings:
    env = {
        "PARTWIRE_DEMO_DELAY_MS": "0",
        "PARTWIRE_HEARTBEAT_S": "30",
        "PARTWIRE_CONFIG_DIR": str(tmp_path / "config"),
    }
    return load_settings(project_dir=project, data_dir=tmp_path / "data", env=env)


@pytest.fixture
def model() -> scripted.ScriptedModel:
    return scripted.install()


@pytest.fixture
async def runtime(settings: Settings) -> AsyncIterator[Runtime]:
    rt = Runtime.build(settings)
    await rt.start()
    try:
        yield rt
    finally:
        await rt.stop()


@pytest.fixture
async def server(settings: Settings) -> AsyncIterator[str]:
    async with serve_in_background(settings) as url:
        yield url


@pytest.fixture
async def client(server: str) -> AsyncIterator[PartwireClient]:
    async with PartwireClient(server) as c:
        yield c


def require_installed(found: object, what: str) -> None:
    """Skip where a system package the case needs is missing, except on CI, where it
    fails (``make test``'s system step installs it)."""
    if found is None:
        if os.environ.get("CI"):
            pytest.fail(f"{what} is not installed (make test's system step installs it)")
        pytest.skip(f"{what} is not installed (make test installs it)")


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """One throwaway Postgres server for the run."""
    bindir = server_bin()
    require_installed(bindir, "Postgres")
    assert bindir is not None
    server = PostgresServer(bindir)
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """One throwaway Redis server for the run."""
    binary = server_path()
    require_installed(binary, "redis-server")
    assert binary is not None
    server = RedisServer(binary)
    server.start()
    yield server
    server.stop()
