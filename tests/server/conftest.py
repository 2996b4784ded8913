from __future__ import annotations

import contextlib
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

GIT = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]


def git(root: Path, *args: str) -> str:
    done = subprocess.run([*GIT, *args], cwd=root, check=True, capture_output=True, text=True)
    return done.stdout


@pytest.fixture
def repo(project: Path) -> Path:
    """The sample project as a git repository with one commit on ``main``."""
    git(project, "init", "-q", "-b", "main")
    git(project, "add", ".")
    git(project, "commit", "-qm", "start")
    return project


@pytest.fixture
async def http(server: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=server, timeout=30) as client:
        yield client


@contextlib.asynccontextmanager
async def in_process(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """A client of ``app`` run in this process, its lifespan started: no socket, and the
    client's task is the request's (cancelling it cancels the request)."""
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client,
    ):
        yield client
