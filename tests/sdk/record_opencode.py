"""Record what opencode itself answers to every SDK call of the sweep (sweep.mjs), into
opencode_answers.json, which test_sdk_sweep.py compares partwire's non-2xx answers with.

Not part of the test suite (it installs opencode from npm and takes about 20 minutes: many
calls wait for a model opencode has not got). From the repository root:

    .venv/bin/python -m tests.sdk.record_opencode

opencode runs on a free loopback port with a home of its own in a temp dir.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from tests.sdk.test_sdk_sweep import CLIENTS, HERE, make_project, run_sweep

VERSION = "1.18.33"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _healthy(url: str) -> None:
    for _ in range(300):
        try:
            with urllib.request.urlopen(f"{url}/global/health", timeout=2):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("opencode did not start")


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", f"opencode-ai@{VERSION}"],
            cwd=root, check=True, capture_output=True,
        )  # fmt: skip
        project = make_project(root)
        home = root / "home"
        home.mkdir()
        env = {
            **os.environ,
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
        }
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        server = subprocess.Popen(
            [str(root / "node_modules" / ".bin" / "opencode"), "serve",
             "--port", str(port), "--hostname", "127.0.0.1"],
            cwd=project, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            _healthy(url)
            answers = {}
            for client in CLIENTS:
                calls = asyncio.run(run_sweep(url, client, project, timeout_ms=3000))
                answers[client] = {c["name"]: c["status"] for c in calls}
        finally:
            server.terminate()
            server.wait(10)
    record = {
        "opencode": VERSION,
        "how": "python -m tests.sdk.record_opencode: sweep.mjs against `opencode serve`",
        "answers": answers,
    }
    (HERE / "opencode_answers.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
