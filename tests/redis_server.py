"""A throwaway Redis server for the tests: no persistence, on a free loopback port,
stopped at the end of the run. ``make test`` installs Debian's redis-server."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from tests.postgres_server import _free_port


def server_path() -> str | None:
    return shutil.which("redis-server")


class RedisServer:
    def __init__(self, binary: str) -> None:
        self.binary = binary
        self.root = Path(tempfile.mkdtemp(prefix="partwire-redis-"))
        self.port = _free_port()
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self._process = subprocess.Popen(
            [
                self.binary, "--bind", "127.0.0.1", "--port", str(self.port),
                "--dir", str(self.root), "--save", "", "--appendonly", "no",
            ],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self._process.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as probe:
                    probe.sendall(b"PING\r\n")
                    if probe.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def kill(self) -> None:
        """Stop the server and keep its port and folder (``start`` brings it back)."""
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            self._process = None

    def stop(self) -> None:
        self.kill()
        shutil.rmtree(self.root, ignore_errors=True)

    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"
