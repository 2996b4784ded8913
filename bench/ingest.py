"""Ingest benchmark: an external loop's message through POST /session/{id}/ingest.

    python bench/ingest.py [--deltas 10000] [--repeat 3] [--paced-ms 0]

Spawns `python -m partwire serve` on a free port with a fresh data dir, then sends one
NDJSON body per run: a start line, a step and N text deltas (``--paced-ms`` sleeps between
lines, as a live loop would). Prints deltas per second and the server's CPU (user +
system, from /proc) per 1k deltas, the figure issue "Performance" compares. Linux only.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator

import httpx


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _body(deltas: int, paced_ms: float) -> Iterator[bytes]:
    yield json.dumps({"type": "start", "prompt": "bench"}).encode() + b"\n"
    yield json.dumps({"type": "step-start"}).encode() + b"\n"
    for i in range(deltas):
        if paced_ms:
            time.sleep(paced_ms / 1000)
        yield json.dumps({"type": "text-delta", "delta": f"w{i} "}).encode() + b"\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--paced-ms", type=float, default=0)
    args = parser.parse_args()
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="partwire-ingest-") as state:
        env = {**os.environ, "PARTWIRE_DATA_DIR": f"{state}/data"}
        env["PARTWIRE_CONFIG_DIR"] = f"{state}/config"
        command = [sys.executable, "-m", "partwire", "serve", "--port", str(port)]
        server = subprocess.Popen(
            command, env=env, cwd=state, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            url = f"http://127.0.0.1:{port}"
            with httpx.Client(base_url=url, timeout=600) as http:
                for _ in range(200):
                    try:
                        http.get("/global/health")
                        break
                    except httpx.TransportError:
                        time.sleep(0.05)
                print(f"{'run':>4} {'deltas':>7} {'paced ms':>8} {'deltas/s':>9} {'CPU ms/1k':>9}")
                for run in range(1, args.repeat + 1):
                    session = http.post("/session", json={}).json()["id"]
                    cpu, start = _cpu_s(server.pid), time.monotonic()
                    response = http.post(
                        f"/session/{session}/ingest",
                        content=_body(args.deltas, args.paced_ms),
                        headers={"content-type": "application/x-ndjson"},
                    )
                    wall, used = time.monotonic() - start, _cpu_s(server.pid) - cpu
                    response.raise_for_status()
                    per_s = args.deltas / wall
                    per_1k = used * 1e6 / args.deltas
                    row = f"{run:>4} {args.deltas:>7} {args.paced_ms:>8}"
                    print(f"{row} {per_s:>9,.0f} {per_1k:>9.0f}")
        finally:
            server.terminate()
            server.wait()


if __name__ == "__main__":
    main()
