"""Replay memory: stalled clients that replay a long session, on every transport, must
not take the server's memory nor hold up its other requests.

    python bench/replay.py                  # 90,000 logged events; 8 and 32 clients
    python bench/replay.py --transport all  # each transport, 8 clients from the start

A real ``partwire serve`` (demo model, delay 0) logs ``long N`` (N deltas). Then, for
each row, that many raw sockets ask for a replay and never read:

- ``event``: ``GET /event`` with a ``Last-Event-ID`` some events back (further back than
  the replay limit, 50,000 events, gets ``server.resync`` instead);
- ``frames``: ``GET /session/{id}/stream`` from the session's first event;
- ``aisdk``: ``GET /ui/chat/{id}/stream`` from the turn's first event;
- ``agui``: ``POST /agui`` reconnecting from the turn's first event;
- ``ws`` and ``socketio``: the hub over ``/ws`` and over Socket.IO's WebSocket transport,
  subscribing to the session from its start;
- ``v2``: ``GET /api/session/{id}/event`` from the first durable event.

The table gives the server's RSS: idle, the peak while the clients hang, and after they
leave, and the slowest ``GET /global/health`` meanwhile. Then the same clients come twice
more: ``again`` is how much higher the third round peaks than the higher of the first two,
and ``health`` is the slowest answer of the round whose slowest was quickest (a replay
that holds the server up does so in every round; another process's burst, in one).
CPython keeps freed memory for reuse rather than giving it back to the OS, so RSS "after"
stays up; what shows that a round's memory was let go is that the next reuses it instead
of growing. (Two rounds are not enough: whether a round's clients peak depends on their
timing, and a second round that peaks over a first that stayed flat reuses nothing.)
Targets: peak under idle + 50 MB, and again under 10 MB.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import psutil

from partwire.ids import logged_event_id

TARGET_MB = 50.0
AGAIN_MB = 10.0  # a third round may peak this much above the first two, at most


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rss_mb(process: psutil.Process) -> float:
    return float(process.memory_info().rss) / 1e6


def _socket(port: int) -> socket.socket:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    return sock


def _http(port: int, head: str, body: bytes = b"") -> socket.socket:
    """A client that sends one request and then never reads."""
    sock = _socket(port)
    sock.sendall(head.encode() + body)
    return sock


def _ws_frame(text: str) -> bytes:
    """One masked WebSocket text frame (a client's frames are masked)."""
    payload = text.encode()
    mask = os.urandom(4)
    size = len(payload)
    head = bytes([0x81])
    if size < 126:
        head += bytes([0x80 | size])
    else:
        head += bytes([0x80 | 126]) + size.to_bytes(2, "big")
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def _websocket(port: int, path: str, messages: list[str]) -> socket.socket:
    """A WebSocket that sends ``messages`` once upgraded, then never reads."""
    sock = _socket(port)
    key = base64.b64encode(os.urandom(16)).decode()
    head = (
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
        f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    sock.sendall(head.encode())
    reply = b""
    while b"\r\n\r\n" not in reply:
        reply += sock.recv(1)  # the upgrade's answer only: nothing after it is read
    if b" 101 " not in reply.split(b"\r\n", 1)[0]:
        raise RuntimeError(f"{path}: no upgrade ({reply[:80]!r})")
    for message in messages:
        sock.sendall(_ws_frame(message))
    return sock


def _stall(port: int, transport: str, sid: str, cursor: str) -> socket.socket:
    """A client of ``transport`` that asks for a replay from ``cursor`` and never reads."""
    host = "Host: 127.0.0.1\r\n"
    if transport == "event":
        return _http(port, f"GET /event HTTP/1.1\r\n{host}Last-Event-ID: {cursor}\r\n\r\n")
    if transport == "frames":
        path = f"/session/{sid}/stream?parts=partwire"
        return _http(port, f"GET {path} HTTP/1.1\r\n{host}Last-Event-ID: {cursor}\r\n\r\n")
    if transport == "aisdk":
        path = f"/ui/chat/{sid}/stream"
        return _http(port, f"GET {path} HTTP/1.1\r\n{host}Last-Event-ID: {cursor}\r\n\r\n")
    if transport == "agui":
        body = json.dumps({
            "threadId": sid, "runId": "bench", "state": {}, "messages": [], "tools": [],
            "context": [], "forwardedProps": {},
        }).encode()  # fmt: skip
        head = (
            f"POST /agui HTTP/1.1\r\n{host}Last-Event-ID: {cursor}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        return _http(port, head, body)
    if transport == "v2":
        return _http(port, f"GET /api/session/{sid}/event?after=0 HTTP/1.1\r\n{host}\r\n")
    subscribe = {"sessionId": sid}
    if transport == "ws":
        return _websocket(port, "/ws", [json.dumps({"event": "subscribe", "data": subscribe})])
    if transport == "socketio":
        messages = ["40", "421" + json.dumps(["subscribe", subscribe])]
        return _websocket(port, "/socket.io/?EIO=4&transport=websocket", messages)
    raise ValueError(f"no transport {transport!r}")


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


def _first_event(db: Path, sid: str, kind: str) -> str:
    """The id of the session's first logged event of type ``kind``."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        epoch = int(conn.execute("SELECT value FROM meta WHERE key = 'event_epoch'").fetchone()[0])
        row = conn.execute(
            "SELECT seq FROM event_log WHERE type = ? AND instr(payload, ?) > 0 ORDER BY seq "
            "LIMIT 1",
            (kind, f'"sessionID":"{sid}"'),
        ).fetchone()
        return logged_event_id(epoch, int(row[0]))
    finally:
        conn.close()


def _health_ms(http: httpx.Client) -> float:
    """How long ``GET /global/health`` takes (one kept-alive connection)."""
    started = time.monotonic()
    http.get("/global/health")
    return (time.monotonic() - started) * 1000


@dataclass
class Row:
    transport: str
    clients: int
    back: str
    idle: float
    peak: float
    after: float
    health_ms: float
    again: float

    def line(self) -> str:
        ok = self.peak - self.idle < TARGET_MB and self.again < AGAIN_MB
        return (
            f"| {self.transport:>9} | {self.clients:>7} | {self.back:>12} | {self.idle:7.1f} "
            f"| {self.peak:7.1f} | {self.peak - self.idle:+9.1f} | {self.after:7.1f} "
            f"| {self.health_ms:9.0f} | {self.again:+8.1f} | {'ok' if ok else 'OVER':>6} |"
        )


def measure(
    server: psutil.Process,
    url: str,
    transport: str,
    sid: str,
    cursor: str,
    clients: int,
    watch_s: float,
    back: str = "start",
) -> Row:
    idle = _rss_mb(server)
    peak, slowest = _round(server, url, transport, sid, cursor, clients, watch_s)
    after = _rss_mb(server)
    # a round's peak is its clients' memory or not, as their timing falls: one that stays
    # flat is often followed by one that peaks higher, reusing nothing it could have
    second, slowest_2 = _round(server, url, transport, sid, cursor, clients, watch_s)
    third, slowest_3 = _round(server, url, transport, sid, cursor, clients, watch_s)
    again = max(0.0, third - max(peak, second))
    # a replay that holds up other requests does so in every round; a busy machine's
    # hiccup lands in one: the best round's slowest answer is the server's
    health = min(slowest, slowest_2, slowest_3)
    return Row(transport, clients, back, idle, peak, after, health, again)


def _round(
    server: psutil.Process,
    url: str,
    transport: str,
    sid: str,
    cursor: str,
    clients: int,
    watch_s: float,
) -> tuple[float, float]:
    """Clients that hang for ``watch_s``, then leave: the peak RSS and slowest health."""
    port = int(url.rsplit(":", 1)[1])
    sockets = [_stall(port, transport, sid, cursor) for _ in range(clients)]
    peak, slowest = _rss_mb(server), 0.0
    deadline = time.monotonic() + watch_s
    with httpx.Client(base_url=url, timeout=30) as http:
        _health_ms(http)  # the connection is open before the clients hang
        while time.monotonic() < deadline:
            peak = max(peak, _rss_mb(server))
            slowest = max(slowest, _health_ms(http))
            time.sleep(0.05)
    for sock in sockets:
        sock.close()
    time.sleep(watch_s / 3)
    return peak, slowest


HEADER = (
    "| transport | clients | from         | idle MB | peak MB | peak-idle | after MB "
    "| health ms | again MB | target |\n|---|---|---|---|---|---|---|---|---|---|"
)
TRANSPORTS = ("event", "frames", "aisdk", "agui", "ws", "socketio", "v2")


def cursor_for(db: Path, transport: str, sid: str) -> str:
    """Where a transport's clients replay from: the session's (or its turn's) start."""
    if transport in ("aisdk", "agui"):
        return _first_event(db, sid, "message.updated")
    return _first_event(db, sid, "session.created")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=90_000, help="deltas to log first")
    parser.add_argument(
        "--watch-s", type=float, default=6, help="how long each row samples the server's RSS"
    )
    parser.add_argument(
        "--transport",
        action="append",
        choices=[*TRANSPORTS, "all"],
        help="replay from the start on this transport (repeatable; all: every one); "
        "without it: /event from 40,000 and N events back, 8 and 32 clients",
    )
    parser.add_argument("--clients", type=int, default=8)
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
            print(HEADER)
            chosen = args.transport or []
            transports = TRANSPORTS if "all" in chosen else tuple(chosen)
            for transport in transports:
                cursor = cursor_for(db, transport, sid)
                row = measure(server, url, transport, sid, cursor, args.clients, args.watch_s)
                print(row.line(), flush=True)
            if not transports:
                for clients, back in (
                    (8, 40_000),
                    (32, 40_000),
                    (8, args.events),
                    (32, args.events),
                ):
                    cursor = _event_id_back(db, back)
                    row = measure(
                        server, url, "event", sid, cursor, clients, args.watch_s, f"{back:,} back"
                    )
                    print(row.line(), flush=True)
        finally:
            proc.terminate()
            proc.wait(10)


if __name__ == "__main__":
    main()
