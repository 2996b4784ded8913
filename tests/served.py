"""A real ``partwire serve`` in a subprocess on a free loopback port, for end-to-end tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until_up(url: str) -> None:
    """Until the server at ``url`` answers /global/health (20 s at most)."""
    for _ in range(400):
        try:
            httpx.get(f"{url}/global/health", timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.05)
    raise AssertionError("partwire serve did not start")


@contextmanager
def partwire_serve(
    project: Path,
    state: Path,
    delay_ms: int = 0,
    port: int | None = None,
    extra_env: dict[str, str] | None = None,
) -> Iterator[str]:
    """Yield the base URL once the server answers; stop it on exit."""
    port = port or free_port()
    env = {
        **os.environ,
        "PARTWIRE_DATA_DIR": str(state / "data"),
        "PARTWIRE_CONFIG_DIR": str(state / "config"),
        "PARTWIRE_DEMO_DELAY_MS": str(delay_ms),
        **(extra_env or {}),
    }
    command = [sys.executable, "-m", "partwire", "serve", "--port", str(port)]
    server = subprocess.Popen(
        [*command, "--project", str(project)], env=env, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(url)
        yield url
    finally:
        server.terminate()
        server.wait(10)
