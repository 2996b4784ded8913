"""Ingest benchmark: an external loop's message through POST /session/{id}/ingest.

    python bench/ingest.py [--deltas 10000] [--repeat 3] [--paced-ms 0] [--delta-chars 0]
    python bench/ingest.py --deltas 10 --delta-chars 2048 --prefix-kb 20 20480
    python bench/ingest.py --args-deltas 100 1000     # bytes written per argument delta

Spawns `python -m partwire serve` on a free port with a fresh data dir, then sends one
NDJSON body per run: a start line, a step and N text deltas (``--paced-ms`` sleeps between
lines, as a live loop would; ``--delta-chars`` makes each delta that many characters, so
``--deltas 10 --delta-chars 2048`` streams 20 KB and ``--deltas 10000`` 20 MB: the CPU a
delta costs must not grow with the text before it). Prints deltas per second and the
server's CPU (user + system, from /proc) per 1k deltas. ``--args-deltas`` streams one tool
call's arguments in that many deltas of 100 characters and prints the bytes the server
process wrote (write syscalls: the database, its WAL) per argument delta. Linux only.
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


PREFIX_CHUNK = 512 * 1024  # under the 1 MiB a line may hold


def _body(deltas: int, paced_ms: float, chars: int, prefix_kb: int = 0) -> Iterator[bytes]:
    yield json.dumps({"type": "start", "prompt": "bench"}).encode() + b"\n"
    yield json.dumps({"type": "step-start"}).encode() + b"\n"
    left = prefix_kb * 1024
    while left > 0:  # text already streamed before the measured deltas
        size = min(left, PREFIX_CHUNK)
        left -= size
        yield json.dumps({"type": "text-delta", "delta": "x" * size}).encode() + b"\n"
    for i in range(deltas):
        if paced_ms:
            time.sleep(paced_ms / 1000)
        word = f"w{i} "
        delta = (word * (chars // len(word) + 1))[:chars] if chars else word
        yield json.dumps({"type": "text-delta", "delta": delta}).encode() + b"\n"


def _wchar(pid: int) -> int:
    with open(f"/proc/{pid}/io") as io:
        return int(next(line for line in io if line.startswith("wchar:")).split()[1])


def _args_body(deltas: int) -> Iterator[bytes]:
    lines: list[dict[str, object]] = [
        {"type": "start", "prompt": "bench"},
        {"type": "tool-call-start", "callID": "call_1", "tool": "write"},
        {"type": "tool-args-delta", "callID": "call_1", "delta": '{"content": "'},
        *(
            {"type": "tool-args-delta", "callID": "call_1", "delta": "a" * 100}
            for _ in range(deltas)
        ),
        {"type": "tool-args-delta", "callID": "call_1", "delta": '"}'},
    ]
    for line in lines:
        yield json.dumps(line).encode() + b"\n"


def _ingest(http: httpx.Client, pid: int, body: Iterator[bytes]) -> tuple[float, float]:
    """One message through ingest into a new session: (wall s, server CPU s)."""
    session = http.post("/session", json={}).json()["id"]
    cpu, start = _cpu_s(pid), time.monotonic()
    response = http.post(
        f"/session/{session}/ingest",
        content=body,
        headers={"content-type": "application/x-ndjson"},
    )
    wall, used = time.monotonic() - start, _cpu_s(pid) - cpu
    response.raise_for_status()
    return wall, used


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--paced-ms", type=float, default=0)
    parser.add_argument("--delta-chars", type=int, default=0, help="characters a delta (0: a word)")
    parser.add_argument(
        "--prefix-kb",
        type=int,
        nargs="*",
        default=[],
        help="also measure the deltas after this much text (KB), e.g. 20 20480: the CPU "
        "of a run with the prefix alone is taken off",
    )
    parser.add_argument("--args-deltas", type=int, nargs="*", default=[])
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
                    wall, used = _ingest(
                        http, server.pid, _body(args.deltas, args.paced_ms, args.delta_chars)
                    )
                    per_s = args.deltas / wall
                    per_1k = used * 1e6 / args.deltas
                    row = f"{run:>4} {args.deltas:>7} {args.paced_ms:>8}"
                    print(f"{row} {per_s:>9,.0f} {per_1k:>9.0f}")
                # before the prefix runs: their WAL checkpoints would count here
                if args.args_deltas:
                    print(f"{'arg deltas':>10} {'bytes/delta':>11}")
                for deltas in args.args_deltas:
                    before = _wchar(server.pid)
                    _ingest(http, server.pid, _args_body(deltas))
                    per_delta = (_wchar(server.pid) - before) / (deltas + 2)
                    print(f"{deltas:>10,} {per_delta:>11,.0f}")
                if args.prefix_kb:
                    print(f"{'after text KB':>14} {'deltas':>7} {'CPU ms/1k':>9}")
                for prefix in args.prefix_kb:
                    alone = min(
                        _ingest(http, server.pid, _body(0, 0, 0, prefix))[1]
                        for _ in range(args.repeat)
                    )
                    both = min(
                        _ingest(http, server.pid, _body(args.deltas, 0, args.delta_chars, prefix))[
                            1
                        ]
                        for _ in range(args.repeat)
                    )
                    per_1k = max(0.0, both - alone) * 1e6 / args.deltas
                    print(f"{prefix:>14,} {args.deltas:>7} {per_1k:>9.0f}")
        finally:
            server.terminate()
            server.wait()


if __name__ == "__main__":
    main()
