"""What one write to a streaming client costs the server, and what merging deltas saves.

    python bench/client_write.py [--clients 50,200] [--merge 1,2,4] [--ticks 300]
                                 [--tick-ms 10] [--rounds 3]

With a part-frame client per session, every delta is one write to one connection: a
loaded server's shared commit (storage/writer.py) batches the commit and the hand-off to
the bus, but each session's stream holds only that session's deltas, and at 100 tokens/s
they come 10 ms apart. This measures that write with nothing else around it: a writer
process (uvloop, as the server runs) holds ``--clients`` loopback connections to a reader
process (uvloop, reading and dropping what arrives, as a client would); every
``--tick-ms`` (a loaded server's commit spacing) it writes to each connection one
chunk-encoded SSE ``part_delta`` frame (as partwire's streams write it), or with
``--merge m``, every m-th tick m frames in one write: what a per-connection window of m
ticks would send. On loopback the kernel delivers into the reader's socket on the
writer's CPU, so the writer's figure is what the server's CPU pays a delta.

Each round runs every merge factor for each number of clients, in rotating order; the
table shows the median µs of CPU (user + system) per delta of the writer and of the
reader, less what the same ticks cost each without a write (measured right after each
run), and the writer's figure over the one-write-a-delta figure.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import uvloop

from partwire.schema.frames import text_delta_json

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _processes import cpu_s
from log_append import _numbers
from stream import aligned

READER = """
import asyncio, sys, uvloop

class Drop(asyncio.Protocol):
    def data_received(self, data: bytes) -> None:
        pass

async def main() -> None:
    server = await asyncio.get_running_loop().create_server(Drop, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)

uvloop.run(main())
"""


def chunk(seq: int) -> bytes:
    """One part frame of one delta, chunk-encoded as uvicorn writes a streamed body."""
    data = text_delta_json("msg_01JDELTAWRITESBENCH0000", 0, " word")
    body = f"id: evt_{seq:026d}:0\nevent: part_delta\ndata: {data}\n\n".encode()
    return b"%x\r\n%b\r\n" % (len(body), body)


async def connections(port: int, count: int) -> list[asyncio.Transport]:
    loop = asyncio.get_running_loop()
    made = []
    for _ in range(count):
        transport, _ = await loop.create_connection(asyncio.Protocol, "127.0.0.1", port)
        sock = transport.get_extra_info("socket")
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as uvicorn's
        made.append(transport)
    return made


async def spent_s(
    transports: list[asyncio.Transport], reader_pid: int, merge: int, ticks: int, tick_s: float
) -> tuple[float, float]:
    """CPU seconds of the writer (this thread) and of the reader's process over ``ticks``
    ticks, writing every ``merge``-th (0: never, the ticking's own cost)."""
    merged = b"".join(chunk(n) for n in range(merge))
    await asyncio.sleep(0.2)  # the reader has read whatever came before
    writer_before, reader_before = time.thread_time(), cpu_s(reader_pid)
    for tick in range(ticks):
        if merge and tick % merge == merge - 1:
            for transport in transports:
                transport.write(merged)
        await asyncio.sleep(tick_s)
    await asyncio.sleep(0.2)
    return time.thread_time() - writer_before, cpu_s(reader_pid) - reader_before


async def run(
    transports: list[asyncio.Transport], reader_pid: int, merge: int, ticks: int, tick_s: float
) -> tuple[float, float]:
    """µs of CPU per delta, the writer's and the reader's, less what the same ticks cost
    each of them without a write."""
    ticks -= ticks % merge
    writer, reader = await spent_s(transports, reader_pid, merge, ticks, tick_s)
    idle_writer, idle_reader = await spent_s(transports, reader_pid, 0, ticks, tick_s)
    deltas = ticks * len(transports)
    return (writer - idle_writer) / deltas * 1e6, (reader - idle_reader) / deltas * 1e6


async def measured(
    reader: tuple[int, int],
    clients: list[int],
    merges: list[int],
    ticks: int,
    tick_s: float,
    rounds: int,
) -> dict[tuple[int, int], list[tuple[float, float]]]:
    """(writer, reader) µs per delta of each run, by (clients, merge); ``reader``: the
    reading process's port and pid."""
    port, pid = reader
    spent: dict[tuple[int, int], list[tuple[float, float]]] = {}
    for count in clients:
        transports = await connections(port, count)
        for round_ in range(rounds):
            turn = round_ % len(merges)
            for merge in merges[turn:] + merges[:turn]:
                figures = await run(transports, pid, merge, ticks, tick_s)
                spent.setdefault((count, merge), []).append(figures)
        for transport in transports:
            transport.close()
    return spent


def table(
    spent: dict[tuple[int, int], list[tuple[float, float]]], clients: list[int], merges: list[int]
) -> list[tuple[str, ...]]:
    lines: list[tuple[str, ...]] = [
        ("clients", "deltas a write", "writer µs/delta", "reader µs/delta", "writer / 1 a write")
    ]
    for count in clients:
        single = statistics.median(w for w, _ in spent[(count, merges[0])])
        for merge in merges:
            writer = statistics.median(w for w, _ in spent[(count, merge)])
            reader = statistics.median(r for _, r in spent[(count, merge)])
            lines.append(
                (str(count), str(merge), f"{writer:.1f}", f"{reader:.1f}", f"{writer / single:.2f}")
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=_numbers, default=[50.0, 200.0], help="connections")
    parser.add_argument("--merge", type=_numbers, default=[1.0, 2.0, 4.0], help="deltas a write")
    parser.add_argument("--ticks", type=int, default=300, help="ticks a run")
    parser.add_argument("--tick-ms", type=float, default=10, help="between ticks")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if any(value < 1 for value in (*args.clients, *args.merge)):
        parser.error("--clients and --merge take whole numbers of at least 1")
    clients = [int(count) for count in args.clients]
    merges = sorted({int(merge) for merge in args.merge})
    if args.ticks < max(merges):
        parser.error(f"--ticks {args.ticks} is fewer than one write of {max(merges)} deltas")
    reader = subprocess.Popen(
        [sys.executable, "-c", READER], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert reader.stdout is not None
        at = (int(reader.stdout.readline()), reader.pid)
        work = measured(at, clients, merges, args.ticks, args.tick_ms / 1000, args.rounds)
        spent = uvloop.run(work)
    finally:
        reader.kill()
        reader.wait()
    print(
        f"CPU µs per delta written to loopback clients, a tick every {args.tick_ms:g} ms; "
        f"medians of {args.rounds} rounds of {args.ticks} ticks"
    )
    print(aligned(table(spent, clients, merges)))


if __name__ == "__main__":
    main()
