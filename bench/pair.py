"""Two builds of the server side by side under one load: which spends less CPU per delta.

    python bench/pair.py A_SRC B_SRC [--sessions 100] [--rounds 3] [--watch session|event]
                                     [--tokens 500] [--rate 100] [--stagger-ms 5] [--starts]
                                     [--via loop|ingest]

On a shared machine a step's CPU moves by up to a fifth between runs of the same build
(bench/capacity.py), so a change worth a few percent cannot be seen by running one build
after the other. Here both run at once: A_SRC and B_SRC are the ``src`` folders of two
checkouts (``git worktree add ../before HEAD~1``, say), each served by this tree's
bench/_server.py, with the same mock model (bench/_mock_paced.py) and this one client.
Each round starts a fresh server of each build and ``--sessions`` sessions on each,
prompted in turn (A, B, A, B, ...) ``--stagger-ms`` apart, followed on GET /event or
(``--watch session``) each on its own part-frame stream; each server's CPU is read over
the window where every session streams, and each build's deltas are timed from the mock
model's write to the client's read. Whatever slows the machine meanwhile slows both.

The table shows, per round, each build's CPU per delta (µs) and p99 latency, and B's CPU
over A's; the last line the median ratio. Rounds alternate which build's server starts
first. Run it with the same folder twice (A/A) to see how far apart the method's own
readings fall on the machine at hand.

``--via ingest`` streams each session's message into POST /session/{id}/ingest from this
client at the same pace instead (external loops, as bench/capacity.py's ``--via ingest``:
no model process answers), and times each delta from this client writing its line.

``--starts`` weighs what the window above leaves out, an answer's start and end: every
answer is one token (a prompt stored, a run started and ended, a title asked for), and
each build's CPU is read over the whole round, from before the first prompt to shortly
after the last answer, per answer.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from _ingest_feeder import IngestFeeder  # noqa: E402
from _processes import (  # noqa: E402
    cpu_s,
    model_sent,
    paced_model_process,
    serving,
    warmed_sessions,
)
from _watchers import Starter, follow, prompt_all, watch_sessions  # noqa: E402
from capacity import _check_all_read, _p99  # noqa: E402
from stream import aligned  # noqa: E402

SETTLE_S = 0.5  # after the last prompt, before the CPU window opens


@dataclass
class Build:
    """One build's server in a round: its URL, pid and sessions."""

    name: str
    url: str
    pid: int
    sessions: list[str]


@dataclass
class Reading:
    cpu_us: dict[str, float]  # CPU per delta over the window (--starts: an answer), by build
    p99_ms: dict[str, float]


async def _prepare(name: str, url: str, pid: int, sessions: int, warm: Starter) -> Build:
    async with httpx.AsyncClient(base_url=url, timeout=120) as http:
        return Build(name, url, pid, await warmed_sessions(http, url, sessions, warm))


async def _window_cpu(builds: list[Build], open_s: float, length_s: float) -> dict[str, float]:
    """Each server's CPU seconds per wall second over the window."""
    await asyncio.sleep(open_s)
    before, start = {b.name: cpu_s(b.pid) for b in builds}, time.monotonic()
    await asyncio.sleep(length_s)
    wall = time.monotonic() - start
    return {b.name: (cpu_s(b.pid) - before[b.name]) / wall for b in builds}


async def _stream_all(
    builds: list[Build], watch: str, stagger_s: float, starters: dict[str, Starter]
) -> dict[str, dict[str, int]]:
    """Start every session, A's and B's in turn (each build's with ``starters[name]``);
    note when each delta reached us, by build."""
    received: dict[str, dict[str, int]] = {b.name: {} for b in builds}

    def start_at(offset_s: float, starter: Starter) -> Starter:
        async def start(prompts: list[tuple[str, str]], _: float) -> None:
            await asyncio.sleep(offset_s)  # this build's turns fall between the other's
            await starter(prompts, stagger_s * len(builds))

        return start

    runs = []
    for n, build in enumerate(builds):
        prompts = [(build.url, sid) for sid in build.sessions]
        start = start_at(n * stagger_s, starters[build.name])
        if watch == "session":
            runs.append(watch_sessions(prompts, received[build.name], 0.0, start))
        else:
            port = int(build.url.rsplit(":", 1)[1])
            runs.append(follow(port, prompts, received[build.name], 0.0, start))
    await asyncio.gather(*runs)
    return received


async def one_round(sources: dict[str, Path], args: argparse.Namespace) -> Reading:
    stagger_s = args.stagger_ms / 1000
    prompts = args.sessions * len(sources)
    open_s = stagger_s * prompts + SETTLE_S
    length_s = args.tokens / args.rate - open_s - SETTLE_S
    ingest = args.via == "ingest"
    feeders = {name: IngestFeeder(args.tokens, args.rate) for name in sources}
    starters: dict[str, Starter] = {n: feeders[n] if ingest else prompt_all for n in sources}
    async with paced_model_process(args.tokens, args.rate) as mock, AsyncExitStack() as stack:
        builds = []
        for name, src in sources.items():
            url, pid = await stack.enter_async_context(serving(mock.port, src=src))
            warm = IngestFeeder(args.tokens, args.rate) if ingest else prompt_all
            builds.append(await _prepare(name, url, pid, args.sessions, warm))
        builds.sort(key=lambda b: b.name)
        async with httpx.AsyncClient(timeout=30) as http:
            await model_sent(http, mock.port)  # the warm-up's words: not this round's
            if args.starts:
                before = {b.name: cpu_s(b.pid) for b in builds}
                received = await _stream_all(builds, args.watch, stagger_s, starters)
                await asyncio.sleep(SETTLE_S)  # the answers' ends, the titles
                cpus = {b.name: cpu_s(b.pid) - before[b.name] for b in builds}
            else:
                window = asyncio.ensure_future(_window_cpu(builds, open_s, length_s))
                received = await _stream_all(builds, args.watch, stagger_s, starters)
                cpus = await window
            model_emits = await model_sent(http, mock.port)
    # when each delta was written: by the model, or (ingest) by each build's feeder
    emits = {n: feeders[n].sent if ingest else model_emits for n in sources}
    for got in received.values():  # every delta of every session, on each build
        _check_all_read(got, args.sessions, args.tokens)
    # deltas a second on each server while all stream; --starts: answers in the round
    rate = args.sessions if args.starts else args.sessions * args.rate
    p99 = {
        name: _p99([(at - emits[name][d]) / 1e6 for d, at in got.items() if d in emits[name]])
        or 0.0
        for name, got in received.items()
    }
    return Reading({n: c * 1e6 / rate for n, c in cpus.items()}, p99)


def _check(args: argparse.Namespace) -> None:
    prompts_s = args.stagger_ms / 1000 * args.sessions * 2
    if not args.starts and args.tokens / args.rate - prompts_s - 2 * SETTLE_S < 1.0:
        raise SystemExit(
            "bench/pair.py: every session must stream together for a second at least: "
            "more --tokens, or fewer --sessions or --stagger-ms"
        )
    for src in (args.a, args.b):
        if not (src / "partwire" / "__init__.py").is_file():
            raise SystemExit(f"bench/pair.py: {src} is no src folder (no partwire/ in it)")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("a", type=Path, help="build A's src folder")
    parser.add_argument("b", type=Path, help="build B's src folder")
    parser.add_argument("--sessions", type=int, default=100, help="on each server")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--watch", choices=["event", "session"], default="session")
    parser.add_argument("--tokens", type=int, default=500)
    parser.add_argument("--rate", type=float, default=100, help="tokens/s of each session")
    parser.add_argument("--stagger-ms", type=float, default=5)
    parser.add_argument(
        "--starts", action="store_true", help="one-token answers: CPU per answer, whole round"
    )
    parser.add_argument(
        "--via",
        choices=["loop", "ingest"],
        default="loop",
        help="partwire's loop answers from the mock model, or external loops stream in",
    )
    args = parser.parse_args()
    if args.starts:
        args.tokens = 1
    args.a, args.b = args.a.resolve(), args.b.resolve()
    _check(args)
    print(f"partwire pair — {os.cpu_count()} cores, {args.sessions} sessions on each server, "
          f"{args.rate:g} tokens/s, watch {args.watch}, via {args.via}; "
          f"A {args.a}, B {args.b}")  # fmt: skip
    rows, ratios = [], []
    for n in range(args.rounds):
        order = {"A": args.a, "B": args.b} if n % 2 == 0 else {"B": args.b, "A": args.a}
        reading = await one_round(order, args)
        ratio = reading.cpu_us["B"] / reading.cpu_us["A"]
        ratios.append(ratio)
        cpu, p99 = reading.cpu_us, reading.p99_ms
        rows.append((str(n + 1), f"{cpu['A']:.1f}", f"{cpu['B']:.1f}", f"{ratio:.3f}",
                     f"{p99['A']:.1f}", f"{p99['B']:.1f}"))  # fmt: skip
    per = "answer" if args.starts else "delta"
    head = ("round", f"A µs/{per}", f"B µs/{per}", "B/A", "A p99 ms", "B p99 ms")
    print(aligned([head, *rows]))
    print(f"median B/A: {statistics.median(ratios):.3f} (CPU per {per}, {args.rounds} rounds)")


if __name__ == "__main__":
    asyncio.run(main())
