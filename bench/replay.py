"""Replay memory: stalled clients that resume GET /event far back must not take the
server's memory.

    python bench/replay.py                  # 90,000 logged events; 8 and 32 clients

A real ``partwire serve`` (demo model, delay 0) logs ``long N`` (N deltas). Then, for
each row, that many raw sockets resume ``GET /event`` with a ``Last-Event-ID`` some
events back and never read. The table gives the server's RSS: idle, the peak while the
clients hang, and after they leave. Target: peak under idle + 50 MB. A client further
back than the replay limit (50,000 events) gets ``server.resync`` instead of a replay.
"""

from __future__ import annotations

import argparse
import os
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psutil

from partwire.ids import logged_event_id

TARGET_MB = 50.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rss_mb(process: psutil.Process) -> float:
    return float(process.memory_info().rss) / 1e6


def _stall(port: int, last_id: str) -> socket.socket:
    """A client that asks for a replay and then never reads."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    request = f"GET /event HTTP/1.1\r\nHost: 127.0.0.1\r\nLast-Event-ID: {last_id}\r\n\r\n"
    sock.sendall(request.encode())
    return sock


def _event_id_back(db: Path, back: int) -> str:
    """The id of the event ``back`` events before the newest (ids are the log's sequence
    numbers under its epoch: ids.logged_event_id)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        epoch = int(conn.execute("SELECT value FROM meta WHERE key = 'event_epoch'").fetchone()[0])
        newest = conn.execute("SELECT MAX(seq) FROM event_log").fetchone()[0]
        row = conn.execute(
            "SELECT seq FROM event_log WHERE seq <= ? ORDER BY seq DESC LIMIT 1",
            (newest - back,),
        ).fetchone()
        if row is None:
            row = conn.execute("SELECT seq FROM event_log ORDER BY seq LIMIT 1").fetchone()
        return logged_event_id(epoch, int(row[0]))
    finally:
        conn.close()


def _row(
    server: psutil.Process, port: int, db: Path, clients: int, back: int, watch_s: float
) -> str:
    idle = _rss_mb(server)
    last_id = _event_id_back(db, back)
    sockets = [_stall(port, last_id) for _ in range(clients)]
    peak = idle
    deadline = time.monotonic() + watch_s
    while time.monotonic() < deadline:
        peak = max(peak, _rss_mb(server))
        time.sleep(0.1)
    for sock in sockets:
        sock.close()
    time.sleep(watch_s / 3)
    after = _rss_mb(server)
    verdict = "ok" if peak - idle < TARGET_MB else "OVER"
    return (
        f"| {clients:>7} | {back:>12,} | {idle:7.1f} | {peak:7.1f} | {peak - idle:+9.1f} "
        f"| {after:7.1f} | {verdict:>6} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=90_000, help="deltas to log first")
    parser.add_argument(
        "--watch-s", type=float, default=6, help="how long each row samples the server's RSS"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "project").mkdir()
        port = _free_port()
        env = {
            **os.environ,
            "PARTWIRE_DATA_DIR": str(root / "data"),
            "PARTWIRE_CONFIG_DIR": str(root / "config"),
            "PARTWIRE_DEMO_DELAY_MS": "0",
        }
        command = [sys.executable, "-m", "partwire", "serve", "--port", str(port)]
        proc = subprocess.Popen(
            [*command, "--project", str(root / "project")], env=env, stderr=subprocess.DEVNULL
        )
        try:
            url = f"http://127.0.0.1:{port}"
            for _ in range(200):
                try:
                    httpx.get(f"{url}/global/health", timeout=1)
                    break
                except httpx.TransportError:
                    time.sleep(0.05)
            sid = httpx.post(f"{url}/session", json={}).json()["id"]
            body = {"parts": [{"type": "text", "text": f"long {args.events}"}]}
            httpx.post(f"{url}/session/{sid}/message", json=body, timeout=600)
            server = psutil.Process(proc.pid)
            db = root / "data" / "partwire.db"
            print(f"replay memory, {args.events:,} logged deltas ({os.cpu_count()} cores)")
            print("| clients | events back  | idle MB | peak MB | peak-idle | after MB | target |")
            print("|---|---|---|---|---|---|---|")
            for clients, back in ((8, 40_000), (32, 40_000), (8, args.events), (32, args.events)):
                print(_row(server, port, db, clients, back, args.watch_s), flush=True)
        finally:
            proc.terminate()
            proc.wait(10)


if __name__ == "__main__":
    main()
