"""The floor under partwire's CPU per paced token: the same work, with nothing else.

    python bench/floor.py [--deltas 2000] [--delay-ms 1,5,10] [--no-partwire] [--rounds 1]

Three processes on loopback. A model process streams an HTTP response, one chunk every
``--delay-ms``: the bytes partwire's mock model sends (an OpenAI chunk of one word, one
server-sent event in a chunked-encoding chunk). A relay process (uvloop, an asyncio
protocol, as the server runs) parses the response (httptools), ``json.loads`` each event,
makes the delta's properties and event JSON as partwire's wire has them (ids of its
length), and then, per variant:

- ``relay``: writes the event to the client at once, a server-sent event in a chunk
  (two socket wake-ups a delta);
- ``inline commit``: first inserts a row and commits it (SQLite WAL, 1 KiB pages,
  synchronous=NORMAL) on the loop's own thread, then writes the frame;
- ``writer thread``: hands the row to a thread that commits it and calls back into the
  loop, which writes the frame: durable before visible, no blocking I/O on the loop (two
  more wake-ups a delta);
- ``writer follows``: the same, with the writer pinned to the CPU the loop last ran on
  (``partwire.storage.cpu``), as partwire does it: its two wake-ups stay on one CPU.

A client process reads the frames. The last rows are partwire itself: one session
streaming the same number of tokens at the same pace from a mock model
(bench/_mock_paced.py, bench/capacity.py's server and client); ``writer follows`` again,
streaming in the same seconds as partwire (its model starts when partwire's measured
stream does); and partwire's figure over that floor of its own design. Both meet the
same machine: on a shared VM the cost of a paced token moves by half within minutes, and
a ratio of two runs taken one after the other moved with it (0.6-1.8 at 10 ms on one
afternoon, at the same code), where side by side it held within a tenth.

The table shows CPU (user + system, every thread) per 1k deltas of the relay process, or
of partwire's server, for each pace; with ``--rounds N``, the median of N rounds, each
running every row at one pace before the next (the ratio row: the median of each round's
own ratio, and each round's). On a virtual machine the figure grows with the pause
between tokens, for the bare relay as much as for partwire: each token wakes an idle CPU
whose caches the pause has cooled, and that wake-up, not the work, is most of the cost.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import queue
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httptools

from partwire import ids, processes
from partwire.schema.event import MessagePartDelta, event_json
from partwire.storage.cpu import CpuFollower

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.providers: the mock's chunks

from tests.providers.mock_openai import chunk

from _mock_paced import HEAD, chunked, sse_chunk
from _processes import cpu_s, paced_model
from capacity import step
from stream import aligned

VARIANTS = ("relay", "inline commit", "writer thread", "writer follows")
BESIDE = "writer follows, beside partwire"  # streaming in the same seconds


def model(port: int, deltas: int, delay_s: float) -> None:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.sendall(HEAD)
        if not sock.recv(1):  # the relay's go: it measures from here
            return  # it ended without one
        for n in range(deltas):
            sock.sendall(model_chunk(f"r1w{n} "))  # the mock's n-th word of its first answer
            time.sleep(delay_s)


def model_chunk(word: str) -> bytes:
    """The chunk of one word, as partwire's mock model (bench/_mock_paced.py) sends it."""
    return sse_chunk(chunk({"content": word}))


def client(port: int, deltas: int) -> None:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        seen = 0
        while seen < deltas:
            data = sock.recv(65536)
            if not data:
                return
            seen += data.count(b"\n\n")


def _database(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA page_size=1024")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("CREATE TABLE log (seq INTEGER PRIMARY KEY, payload TEXT NOT NULL)")
    return conn


# a delta's ids, of the length partwire's are
IDS = {"sessionID": ids.session_id(), "messageID": ids.message_id(), "partID": ids.part_id()}
EPOCH = ids.log_epoch()


def delta_event(seq: int, delta: str) -> tuple[str, str]:
    """The delta's properties JSON (the log's row) and its event JSON (the frame's data),
    as partwire's wire has them."""
    properties = json.dumps({**IDS, "field": "text", "delta": delta}, separators=(",", ":"))
    event_id = ids.logged_event_id(EPOCH, seq)
    return properties, event_json(event_id, MessagePartDelta.type, properties)


class Relay(asyncio.Protocol):
    def __init__(self, variant: str, out: asyncio.Transport, conn: sqlite3.Connection) -> None:
        self.variant, self.out, self.conn = variant, out, conn
        self.parser = httptools.HttpResponseParser(self)
        self.pending, self.seq = b"", 0
        self.loop = asyncio.get_running_loop()
        self.rows: queue.SimpleQueue[tuple[int, str, str] | None] = queue.SimpleQueue()
        self.cpu = CpuFollower()
        self.model: asyncio.Transport | None = None
        if variant.startswith("writer"):
            threading.Thread(target=self._writer, daemon=True).start()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.model = transport  # type: ignore[assignment]

    def go(self) -> None:
        """The model streams once told to."""
        assert self.model is not None
        self.model.write(b"g")

    def data_received(self, data: bytes) -> None:
        self.parser.feed_data(data)

    def on_body(self, body: bytes) -> None:
        events = (self.pending + body).split(b"\n\n")
        self.pending = events.pop()
        for raw in events:
            delta = json.loads(raw[6:].decode())["choices"][0]["delta"]["content"]
            self.seq += 1
            properties, event = delta_event(self.seq, delta)
            if self.variant == "relay":
                self._publish(event)
            elif self.variant == "inline commit":
                self._commit(self.seq, properties)
                self._publish(event)
            else:
                if self.variant == "writer follows":
                    self.cpu.note()
                self.rows.put((self.seq, properties, event))

    def _commit(self, seq: int, properties: str) -> None:
        self.conn.execute("BEGIN")
        self.conn.execute("INSERT INTO log VALUES (?, ?)", (seq, properties))
        self.conn.execute("COMMIT")

    def _writer(self) -> None:
        while (row := self.rows.get()) is not None:
            self.cpu.follow()
            self._commit(row[0], row[1])
            self.loop.call_soon_threadsafe(self._publish, row[2])

    def _publish(self, event: str) -> None:
        self.out.write(chunked(f"data: {event}\n\n".encode()))


async def relay(variant: str, deltas: int, delay_s: float, gated: bool = False) -> float:
    """One variant's CPU ms per 1k deltas. ``gated``: its model starts once a line comes on
    stdin (``_partwire_beside`` sends it as partwire's measured stream starts)."""
    loop = asyncio.get_running_loop()
    client_connected: asyncio.Future[asyncio.Transport] = loop.create_future()

    def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        client_connected.set_result(writer.transport)  # type: ignore[arg-type]

    client_server = await asyncio.start_server(on_client, "127.0.0.1", 0)
    client_port = client_server.sockets[0].getsockname()[1]
    reader_process = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--role", "client", "--port", str(client_port),
        "--deltas", str(deltas),
    )  # fmt: skip
    out = await client_connected
    with tempfile.TemporaryDirectory(prefix="partwire-floor-") as tmp:
        conn = _database(f"{tmp}/log.db")
        model_connected: asyncio.Future[Relay] = loop.create_future()

        def make() -> Relay:
            protocol = Relay(variant, out, conn)
            model_connected.set_result(protocol)
            return protocol

        model_server = await loop.create_server(make, "127.0.0.1", 0)
        model_port = model_server.sockets[0].getsockname()[1]
        model_process = await asyncio.create_subprocess_exec(
            sys.executable, __file__, "--role", "model", "--port", str(model_port),
            "--deltas", str(deltas), "--delay-ms", str(delay_s * 1000),
        )  # fmt: skip
        protocol = await model_connected
        await asyncio.sleep(0.4)  # the connections settle
        if gated and not await loop.run_in_executor(None, sys.stdin.readline):
            sys.exit("floor.py: the relay's stdin ended before it was told to go")
        before = cpu_s(os.getpid())
        protocol.go()
        await reader_process.wait()
        spent = cpu_s(os.getpid()) - before
        await model_process.wait()
        model_server.close()
    client_server.close()
    return spent * 1e6 / deltas  # ms per 1k deltas


def relay_argv(variant: str, deltas: int, delay_ms: float, *, gated: bool = False) -> list[str]:
    """The command of a relay process running one variant (it prints its CPU ms per 1k
    deltas)."""
    return [
        sys.executable, __file__, "--role", "relay", "--variant", variant,
        "--deltas", str(deltas), "--delay-ms", str(delay_ms), *(["--gated"] if gated else []),
    ]  # fmt: skip


def _floor(variant: str, deltas: int, delay_ms: float) -> float:
    """One variant in a relay process of its own: its CPU ms per 1k deltas."""
    argv = relay_argv(variant, deltas, delay_ms)
    return float(subprocess.run(argv, capture_output=True, text=True, check=True).stdout)


async def _partwire_beside(deltas: int, delay_ms: float) -> tuple[float, float]:
    """partwire's server streaming one session of ``deltas`` tokens at this pace, and
    "writer follows" streaming as many at the same pace in the same seconds: their CPU ms
    per 1k deltas (partwire's, the floor's). The floor's model starts when partwire's
    measured stream does, so both meet the same machine."""
    rate = 1000 / delay_ms if delay_ms > 0 else float("inf")
    floor = await processes.start(
        *relay_argv("writer follows", deltas, delay_ms, gated=True),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )

    def go() -> None:
        assert floor.stdin is not None
        floor.stdin.write(b"go\n")

    try:
        async with paced_model(deltas, rate) as model_port:
            partwire = (await step(1, deltas, model_port, rate=rate, measuring=go)).cpu_ms_per_1k
        measured, _ = await floor.communicate()
    finally:
        await processes.stop(floor)  # at once if it is done
    if floor.returncode != 0:
        raise RuntimeError(f"the floor beside partwire exited with {floor.returncode}")
    return partwire, float(measured)


def _delays(text: str) -> list[float]:
    try:
        delays = [float(item) for item in text.split(",")]
    except ValueError:
        delays = [-1.0]
    if any(delay < 0 for delay in delays):
        raise argparse.ArgumentTypeError(f"not a list of milliseconds: {text!r}")
    return delays


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=2000)
    parser.add_argument(
        "--delay-ms", type=_delays, default=[1.0, 5.0, 10.0], help="paces, comma-separated"
    )
    parser.add_argument("--no-partwire", action="store_true", help="the floor only")
    parser.add_argument(
        "--rounds", type=int, default=1, help="runs of every row; the table shows medians"
    )
    parser.add_argument("--role", choices=("bench", "model", "client", "relay"), default="bench")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--variant", choices=VARIANTS, default="relay")
    parser.add_argument("--gated", action="store_true", help="(relay) start on a stdin line")
    args = parser.parse_args()
    if args.role == "model":
        model(args.port, args.deltas, args.delay_ms[0] / 1000)
        return
    if args.role == "client":
        client(args.port, args.deltas)
        return
    if args.role == "relay":
        import uvloop

        spent = uvloop.run(relay(args.variant, args.deltas, args.delay_ms[0] / 1000, args.gated))
        print(f"{spent:.0f}")
        return
    print(
        f"the floor under CPU per paced delta — {os.cpu_count()} cores, "
        f"Python {sys.version.split()[0]}, {args.deltas} deltas a run; "
        "CPU ms per 1k deltas (every thread of the relay, or of partwire's server)"
        + (f"; medians of {args.rounds} rounds" if args.rounds > 1 else "")
    )
    rounds = [_round(args.deltas, args.delay_ms, not args.no_partwire) for _ in range(args.rounds)]
    paces = range(len(args.delay_ms))
    rows = [
        ("variant", *(f"{delay:g} ms apart" for delay in args.delay_ms)),
        *(
            (name, *(f"{statistics.median(r[name][n] for r in rounds):.0f}" for n in paces))
            for name in rounds[0]
        ),
    ]
    if not args.no_partwire:
        rows.append(("partwire / writer follows beside it", *_ratios(rounds, len(args.delay_ms))))
    print(aligned(rows))


def _round(deltas: int, delays: list[float], partwire: bool) -> dict[str, list[float]]:
    """Each variant alone, then partwire with "writer follows" beside it, at one pace
    before the next."""
    figures: dict[str, list[float]] = {name: [] for name in VARIANTS}
    if partwire:
        figures["partwire"], figures[BESIDE] = [], []
    for delay in delays:
        for variant in VARIANTS:
            figures[variant].append(_floor(variant, deltas, delay))
        if partwire:
            ours, floor = asyncio.run(_partwire_beside(deltas, delay))
            figures["partwire"].append(ours)
            figures[BESIDE].append(floor)
    return figures


def _ratios(rounds: list[dict[str, list[float]]], paces: int) -> list[str]:
    """partwire over "writer follows" streaming in the same seconds, at each pace: the
    median of each round's own ratio (and, over several rounds, each round's)."""
    cells = []
    for n in range(paces):
        each = [r["partwire"][n] / max(r[BESIDE][n], 1) for r in rounds]
        shown = f"{statistics.median(each):.1f}x"
        if len(each) > 1:
            shown += " (" + ", ".join(f"{x:.1f}" for x in each) + ")"
        cells.append(shown)
    return cells


if __name__ == "__main__":
    main()
