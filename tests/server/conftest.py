from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

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
