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


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """One throwaway Postgres server for the run (``make test`` installs Postgres). Where
    it is not installed the Postgres cases are skipped, except on CI, where they fail."""
    bindir = server_bin()
    if bindir is None:
        if os.environ.get("CI"):
            pytest.fail("Postgres is not installed (make test's system step installs it)")
        pytest.skip("Postgres is not installed (make test installs it)")
    server = PostgresServer(bindir)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """One throwaway Redis server for the run (``make test`` installs redis-server);
    skipped where it is not installed, except on CI, where its cases fail."""
    binary = server_path()
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server is not installed (make test's system step installs it)")
        pytest.skip("redis-server is not installed (make test installs it)")
    server = RedisServer(binary)
    server.start()
    try:
        yield server
    finally:
        server.stop()
