"""What keeping the event log's retention costs a loaded server's deltas.

    python bench/log_prune.py [--sessions 150] [--rate 100] [--seconds 20]
                              [--retain 20000] [--rounds 2] [--against OTHER/src]

A server keeps the newest ``retain`` events of its log (PARTWIRE_EVENT_LOG_RETAIN,
200,000 by default) and prunes the rest as it goes; a fresh server, as in
bench/capacity.py's steps, never gets that far. Here partwire's SQLite store alone, on
uvloop, with its log filled to ``--retain`` first: ``--sessions`` streams of ``--rate``
deltas a second each are appended through ``Store.append_delta`` (spread evenly over
each millisecond, as many sessions' tokens arrive) for ``--seconds``, and each delta is
timed from its append to its publication on the bus (committed, durable, then
visible: what a client waits for the store), with the cyclic collector set as a serving
process sets it (its start-up heap frozen, server/runner.py's thresholds). The table
shows per build and round the deltas, the process's CPU per delta, the latency's p50,
p99, p99.9 and maximum, and the rows pruned meanwhile. ``--against`` runs another
build's store the same way (each run is a subprocess with its build's ``src`` first on
the path; the builds take turns).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from stream import aligned

SRC = Path(__file__).resolve().parents[1] / "src"
TICK_S = 0.001


class _Driver:
    """Appends deltas to ``store`` as sessions would and times each to its publication."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.appended: dict[str, int] = {}
        self.held: list[asyncio.Future[None]] = []  # appends the store pushed back
        self.latencies: list[float] = []

    def append(self, session: int, n: int) -> None:
        from partwire.schema.event import PartDeltaProps

        text = f"{session}:{n} "
        props = PartDeltaProps(
            sessionID=f"ses_{session}", messageID="msg_1", partID=f"prt_{session}",
            field="text", delta=text,
        )  # fmt: skip
        self.appended[text] = time.perf_counter_ns()
        if (waiting := self.store.append_delta(props)) is not None:
            self.held.append(asyncio.ensure_future(waiting))

    async def time_published(self) -> None:
        async for event in self.store.bus.subscribe_all():
            delta = getattr(event.properties, "delta", None)
            if (sent := self.appended.pop(delta, None)) is not None:
                self.latencies.append((time.perf_counter_ns() - sent) / 1e6)

    async def stream(self, sessions: int, rate: float, seconds: float) -> int:
        """``sessions`` streams at ``rate`` for ``seconds``, spread over each tick; the
        deltas appended, all committed."""
        made, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < seconds:
            while made < elapsed * sessions * rate:
                self.append(made % sessions, made)
                made += 1
            await asyncio.sleep(TICK_S)
        await asyncio.gather(*self.held)
        await self.store.publish([])
        return made


async def streamed(
    sessions: int, rate: float, seconds: float, retain: int, path: Path
) -> dict[str, float]:
    """One run, in this process's partwire: the figures of the table's row."""
    from partwire.bus import Bus
    from partwire.server.runner import SERVER_GC_THRESHOLDS
    from partwire.storage.sqlite import SqliteStore

    store = SqliteStore(path, Bus(), retain_events=retain)
    await store.open()
    driver = _Driver(store)
    for n in range(retain + 1):  # the log at its retention before the clock starts
        driver.append(0, -n - 1)
        if n % 500 == 0:
            await asyncio.sleep(0)
    await store.publish([])
    gc.freeze()  # the collector as a serving process has it (server/runner.py)
    gc.set_threshold(*SERVER_GC_THRESHOLDS)
    timer = asyncio.create_task(driver.time_published())
    await asyncio.sleep(0.2)
    rows_before, cpu_before = await _rows(store), time.process_time()
    made = await driver.stream(sessions, rate, seconds)
    await asyncio.sleep(0.2)
    cpu = time.process_time() - cpu_before
    timer.cancel()
    pruned = rows_before + made - await _rows(store)
    await store.close()
    return _figures(sorted(driver.latencies), cpu / max(made, 1), pruned)


def _figures(ordered: list[float], cpu_s: float, pruned: int) -> dict[str, float]:
    return {
        "deltas": len(ordered),
        "cpu_us": cpu_s * 1e6,
        "p50": ordered[len(ordered) // 2],
        "p99": ordered[int(len(ordered) * 0.99)],
        "p999": ordered[int(len(ordered) * 0.999)],
        "max": ordered[-1],
        "pruned": pruned,
    }


async def _rows(store: object) -> int:
    def query(conn: object) -> int:
        return int(conn.execute("SELECT COUNT(*) FROM event_log").fetchone()[0])  # type: ignore[attr-defined]

    return await store._readers.read(query)  # type: ignore[attr-defined]


def run_build(src: Path, args: argparse.Namespace) -> dict[str, float]:
    """One run of the build under ``src``, in a subprocess of its own."""
    with tempfile.TemporaryDirectory(prefix="partwire-log-prune-") as tmp:
        command = [
            sys.executable, __file__, "--run", str(Path(tmp) / "partwire.db"),
            "--sessions", str(args.sessions), "--rate", str(args.rate),
            "--seconds", str(args.seconds), "--retain", str(args.retain),
        ]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(src)}
        done = subprocess.run(command, env=env, check=True, capture_output=True, text=True)
    return dict(json.loads(done.stdout))


def table(results: dict[str, list[dict[str, float]]]) -> list[tuple[str, ...]]:
    latency = ("p50 ms", "p99 ms", "p99.9 ms", "max ms")
    lines: list[tuple[str, ...]] = [
        ("build", "round", "deltas", "CPU µs/delta", *latency, "pruned")
    ]
    for build, runs in results.items():
        for n, run in enumerate(runs, 1):
            lines.append((
                build, str(n), f"{run['deltas']:.0f}", f"{run['cpu_us']:.1f}",
                *(f"{run[key]:.1f}" for key in ("p50", "p99", "p999", "max")),
                f"{run['pruned']:.0f}",
            ))  # fmt: skip
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=150)
    parser.add_argument("--rate", type=float, default=100, help="deltas a second a session")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--retain", type=int, default=20_000, help="events the log keeps")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--against", type=Path, help="another build's src folder")
    parser.add_argument("--run", type=Path, help=argparse.SUPPRESS)  # one run, as JSON
    args = parser.parse_args()
    if args.run is not None:
        import uvloop

        work = streamed(args.sessions, args.rate, args.seconds, args.retain, args.run)
        print(json.dumps(uvloop.run(work)))
        return
    if min(args.sessions, args.retain, args.rounds) < 1 or min(args.rate, args.seconds) <= 0:
        parser.error(
            "--sessions, --retain and --rounds take at least 1; --rate and --seconds more than 0"
        )
    if args.against is not None and not (args.against / "partwire" / "__init__.py").is_file():
        parser.error(f"{args.against} is no src folder (no partwire/ in it)")
    builds = {"this build": SRC}
    if args.against is not None:
        builds["other build"] = args.against.resolve()
    results: dict[str, list[dict[str, float]]] = {name: [] for name in builds}
    for round_ in range(args.rounds):
        order = list(builds) if round_ % 2 == 0 else list(reversed(builds))
        for name in order:
            results[name].append(run_build(builds[name], args))
    print(
        f"{args.sessions} streams of {args.rate:g} deltas/s for {args.seconds:g} s into a log "
        f"at its retention ({args.retain} events); latency from append to publication"
    )
    print(aligned(table(results)))
    if len(builds) == 2:
        ratio = statistics.median(
            ours["cpu_us"] / theirs["cpu_us"]
            for ours, theirs in zip(results["this build"], results["other build"], strict=True)
        )
        print(f"CPU per delta, this build / other build: {ratio:.3f} (median of the rounds)")


if __name__ == "__main__":
    main()
