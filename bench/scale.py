"""Scale-out benchmark: one server, or several sharing one Postgres database.

    python bench/scale.py [--instances 1 3] [--sessions 50 150] [--rate 100] [--tokens 500]
                          [--spread-s 1] [--fanout notify redis] [--capacity [--limit-ms 50]]
                          [--cpu-quota 0.4] [--watch event|session] [--refine 3]
                          [--capacity --repeat 3]

For each number of servers and of sessions: a throwaway Postgres cluster's fresh
database, that many servers on it (bench/_server.py, the mock model of
bench/_mock_paced.py as their provider, in its own process), the sessions spread over
the servers and started evenly over ``--spread-s`` (as capacity.py's steps: all K then
stream together for most of a step, and the p99 is theirs, not that of K prompts
arriving in the same millisecond), each streaming ``--tokens`` tokens at ``--rate``
tokens/s. One client follows GET /event on the first server: it sees every server's
deltas (the servers share one log), so its latency (from the mock model writing a delta,
for whichever server, to this client reading it) includes the trip through Postgres, or
Redis with ``--fanout redis`` (a throwaway redis-server). The table shows p50/p99, the
servers' CPU per 1k deltas, and the CPUs the servers and everything else on the machine
kept busy in the quarter second the servers were busiest. With ``--capacity`` it instead
grows the number of sessions for each number of servers (capacity.py's steps) until p99
passes ``--limit-ms`` (then narrows the bound, as capacity.py's ``--refine`` does), and
prints the largest number each carried, their ratio, and what held each bound (the
servers' CPU quota, the machine's cores, or neither: latency). ``--repeat N`` does that
N times (the numbers of servers in turn, in the opposite order each time) and prints
each run's and the median of the runs' own ratios: on a shared 2-core machine one run's
ratio moves by a third between runs, as Postgres, the model and the client share the
cores. Needs Postgres and, for Redis, redis-server installed (``make test`` installs both).

With ``--watch session`` there is no global client: each session is watched by a client
of its own, on its part-frame stream on the server it was prompted through (users behind
a sticky load balancer). A server then parses and sends only its own clients' sessions.
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
sys.path.insert(0, str(ROOT))

from tests.postgres_server import PostgresServer, server_bin  # noqa: E402
from tests.redis_server import RedisServer, server_path  # noqa: E402

from _cpu_quota import CpuQuota, QuotaError, quota_root  # noqa: E402
from _processes import cpu_s, machine_busy_s, model_sent, serving  # noqa: E402
from _watchers import follow, watch_sessions  # noqa: E402
from capacity import REFINE, Step, limit, search  # noqa: E402
from stream import _free_port, aligned  # noqa: E402

HEAD = [
    "fan-out", "servers", "sessions", "deltas", "p50 ms", "p99 ms", "CPU ms/1k deltas",
    "servers' CPUs", "others' CPUs",
]  # fmt: skip
OTHERS = "Postgres, model, client"
SLICE_S = 0.25  # the CPUs are read a quarter second at a time


async def run(
    instances: int,
    sessions: int,
    model_port: int,
    pg: PostgresServer,
    redis: RedisServer | None,
    cpu_quota: float | None = None,
    watch: str = "event",
    spread_s: float = 0.0,
) -> Step:
    shared = ["--database-url", pg.new_database()]
    if redis is not None:
        shared += ["--redis-url", redis.url()]
    quotas: list[CpuQuota] = []
    try:
        return await _measured(
            instances, sessions, model_port, shared, cpu_quota, quotas, watch, spread_s / sessions
        )
    finally:
        for quota in quotas:  # once their servers have exited
            quota.remove()


async def _measured(
    instances: int,
    sessions: int,
    model_port: int,
    shared: list[str],
    cpu_quota: float | None,
    quotas: list[CpuQuota],
    watch: str,
    stagger_s: float,
) -> Step:
    async with AsyncExitStack() as stack:
        servers = [
            await stack.enter_async_context(serving(model_port, *shared)) for _ in range(instances)
        ]
        if cpu_quota is not None:  # each server as if on a small machine of its own
            quotas += [CpuQuota(pid, cpu_quota) for _, pid in servers]
        urls = [url for url, _ in servers]
        port = int(urls[0].rsplit(":", 1)[1])  # the followed server: it sees every server's
        async with httpx.AsyncClient(timeout=120) as http:
            for url in urls:  # one answer each first, not measured: SDKs load, pools open
                warm = (await http.post(f"{url}/session", json={})).json()["id"]
                await follow(port, [(url, warm)], {})
            prompts = []
            for n in range(sessions):
                url = urls[n % instances]
                prompts.append((url, (await http.post(f"{url}/session", json={})).json()["id"]))
            received: dict[str, int] = {}
            await model_sent(http, model_port)  # the warm-up's words: not this step's
            pids = [pid for _, pid in servers]
            cpu_before = sum(cpu_s(pid) for pid in pids)
            busiest = Busiest(pids)
            sampling = asyncio.ensure_future(busiest.watch())
            try:
                if watch == "session":  # each on the server it prompted through
                    await watch_sessions(prompts, received, stagger_s)
                else:
                    await follow(port, prompts, received, stagger_s)
                cpu = sum(cpu_s(pid) for pid in pids) - cpu_before
            finally:  # before the servers stop, whatever happened
                sampling.cancel()
            emits = await model_sent(http, model_port)
    latencies = sorted((received[d] - emits[d]) / 1e6 for d in received if d in emits)
    return Step(
        sessions=sessions,
        deltas=len(received),
        p50_ms=statistics.median(latencies),
        p99_ms=latencies[max(0, int(len(latencies) * 0.99) - 1)],
        cpu_ms_per_1k=cpu * 1e6 / len(received),
        server_cpus=busiest.servers,
        others_cpus=busiest.others,
    )


class Busiest:
    """The quarter second of a step in which the servers were busiest: their CPUs then, and
    the rest of the machine's (Postgres, Redis, the mock model, this client, the kernel).
    A bound is set by the step's worst moments (sessions starting, say), which an average
    over the step hides."""

    def __init__(self, pids: list[int]) -> None:
        self.pids = pids
        self.servers = 0.0
        self.others = 0.0

    def _read(self) -> tuple[float, float, float]:
        return sum(cpu_s(pid) for pid in self.pids), machine_busy_s(), time.monotonic()

    async def watch(self) -> None:
        """Until cancelled (before the servers stop)."""
        servers, machine, at = self._read()
        while True:
            await asyncio.sleep(SLICE_S)
            now = self._read()
            wall = now[2] - at
            used = (now[0] - servers) / wall
            if used >= self.servers:
                self.servers = used
                self.others = max((now[1] - machine) / wall - used, 0.0)
            servers, machine, at = now


def row(fanout: str, instances: int, step: Step, run: int | None = None) -> list[str]:
    """A table row; ``run``: which of ``--repeat``'s runs (the last column)."""
    return [
        fanout, str(instances), str(step.sessions), str(step.deltas), f"{step.p50_ms:.1f}",
        f"{step.p99_ms:.1f}", f"{step.cpu_ms_per_1k:.0f}", f"{step.server_cpus:.2f}",
        f"{step.others_cpus:.2f}", *([str(run)] if run else []),
    ]  # fmt: skip


def capacity_lines(
    fanout: str,
    limit_ms: float,
    instances: list[int],
    runs: list[dict[int, int]],
    notes: list[list[str]] | None = None,
) -> list[str]:
    """Each run's largest K per number of servers and their ratio to the first number's
    (each followed by its ``notes``); with several runs, then the median of the runs' own
    ratios."""
    base = instances[0]
    lines = []
    for number, most in enumerate(runs, 1):
        ratios = ", ".join(
            f"{n} servers {most[n]} ({most[n] / most[base]:.2f}x)" if most[base] else
            f"{n} servers {most[n]}"
            for n in instances
        )  # fmt: skip
        label = fanout if len(runs) == 1 else f"{fanout} run {number}"
        lines.append(f"{label}: largest K with p99 <= {limit_ms:g} ms: {ratios}")
        lines += notes[number - 1] if notes else []
    if len(runs) > 1 and len(instances) > 1:
        medians = []
        for n in instances[1:]:
            each = [most[n] / most[base] for most in runs if most[base]]
            shown = f"{statistics.median(each):.2f}x" if each else "none (1 server carried 0)"
            medians.append(f"{n} servers over {base}: {shown}")
        lines.append(f"{fanout}: median of {len(runs)} runs' ratios: " + ", ".join(medians))
    return lines


@dataclass
class Bound:
    """The most sessions a number of servers carried under the bound, and the step that
    passed it (None: none did, up to --max-sessions)."""

    sessions: int
    passed: Step | None


async def largest(
    args: argparse.Namespace,
    instances: int,
    model_port: int,
    pg: PostgresServer,
    redis: RedisServer | None,
    rows: list[list[str]],
    run_number: int | None = None,
) -> Bound:
    """The most sessions ``instances`` servers carry with p99 under ``--limit-ms``."""

    async def measure(sessions: int) -> Step:
        return await run(
            instances, sessions, model_port, pg, redis, args.cpu_quota, args.watch,
            args.spread_s,
        )  # fmt: skip

    found = await search(measure, args.limit_ms, args.max_sessions, args.refine, least=instances)
    measured = sorted(found, key=lambda s: s.sessions)
    rows += [row("redis" if redis else "notify", instances, step, run_number) for step in measured]
    under = [s.sessions for s in measured if s.p99_ms <= args.limit_ms]
    passed = next((s for s in measured if s.p99_ms > args.limit_ms), None)
    return Bound(max(under, default=0), passed)


def limit_lines(bounds: dict[int, Bound], cpu_quota: float | None) -> list[str]:
    """For each number of servers, the step that passed the bound and what limited it."""
    lines = []
    for n, bound in bounds.items():
        if bound.passed is None:
            continue
        step, servers = bound.passed, "server" if n == 1 else f"{n} servers"
        quota = cpu_quota * n if cpu_quota else None
        lines.append(
            f"  {servers} at {step.sessions} sessions: p99 {step.p99_ms:.1f} ms; the limit: "
            + limit(step, quota, "servers" if n > 1 else "server", OTHERS)
        )
    return lines


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--sessions", type=int, nargs="+", default=[50, 150])
    parser.add_argument("--rate", type=float, default=100, help="tokens/s of each stream")
    parser.add_argument("--tokens", type=int, default=500, help="tokens of each answer")
    parser.add_argument(
        "--spread-s",
        type=float,
        default=1.0,
        help="start the sessions evenly over this many seconds (0: all at once)",
    )
    parser.add_argument(
        "--fanout", nargs="+", choices=["notify", "redis"], default=["notify", "redis"]
    )
    parser.add_argument("--capacity", action="store_true", help="find each largest K")
    parser.add_argument("--limit-ms", type=float, default=50, help="the p99 bound (--capacity)")
    parser.add_argument(
        "--max-sessions", type=int, default=200, help="--capacity stops after this K"
    )
    parser.add_argument(
        "--refine",
        type=int,
        default=REFINE,
        help="--capacity: steps that narrow each bound once it is passed (0: none)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="--capacity: find the bounds this many times; the median of the runs' ratios",
    )
    parser.add_argument(
        "--cpu-quota",
        type=float,
        help="CPUs each server may use (a cgroup quota; root): servers as on machines of "
        "their own, the rest of the machine left to Postgres, Redis, the model and client",
    )
    parser.add_argument(
        "--watch",
        choices=["event", "session"],
        default="event",
        help="one client on the first server's GET /event, or a client per session on its "
        "part-frame stream, on the server the session was prompted through",
    )
    args = parser.parse_args()
    if args.repeat < 1 or (args.repeat > 1 and not args.capacity):
        sys.exit("--repeat: a number of runs of at least 1, with --capacity")
    if args.cpu_quota is not None:
        try:
            quota_root()
        except QuotaError as exc:
            sys.exit(f"--cpu-quota: {exc}")
    return args


async def main() -> None:
    args = _arguments()
    bindir, redis_binary = server_bin(), server_path()
    if bindir is None:
        sys.exit("Postgres is not installed (make test installs it)")
    if "redis" in args.fanout and redis_binary is None:
        sys.exit("redis-server is not installed (make test installs it)")
    pg = PostgresServer(bindir)
    pg.start()
    redis = RedisServer(redis_binary) if "redis" in args.fanout and redis_binary else None
    if redis is not None:
        redis.start()
    model_port = _free_port()
    model = await asyncio.create_subprocess_exec(
        sys.executable, str(ROOT / "bench" / "_mock_paced.py"),
        "--port", str(model_port), "--tokens", str(args.tokens), "--rate", str(args.rate),
        cwd=ROOT, env={**os.environ, "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"},
    )  # fmt: skip
    rows = [HEAD.copy()]
    if args.repeat > 1:
        rows[0].append("run")
    found: list[str] = []
    try:
        await asyncio.sleep(1.0)  # the mock binds its port
        for fanout in args.fanout:
            through = redis if fanout == "redis" else None
            if args.capacity:
                runs = await _capacity_runs(args, model_port, pg, through, rows)
                most = [{n: bound.sessions for n, bound in bounds.items()} for bounds in runs]
                notes = [limit_lines(bounds, args.cpu_quota) for bounds in runs]
                found += capacity_lines(fanout, args.limit_ms, args.instances, most, notes)
                continue
            for instances in args.instances:
                for sessions in args.sessions:
                    step = await run(
                        instances, sessions, model_port, pg, through, args.cpu_quota,
                        args.watch, args.spread_s,
                    )  # fmt: skip
                    rows.append(row(fanout, instances, step))
    finally:
        model.terminate()
        await model.wait()
        pg.stop()
        if redis is not None:
            redis.stop()
    print(
        f"partwire scale-out on one Postgres database — {os.cpu_count()} cores, "
        f"{args.rate:g} tokens/s a session, {args.tokens} tokens an answer, "
        f"started over {args.spread_s:g} s (a test cluster: fsync off)"
        + (f"; each server held to {args.cpu_quota:g} CPU" if args.cpu_quota else "")
        + ("; a client per session" if args.watch == "session" else "; one client on /event")
    )
    print(aligned([tuple(r) for r in rows]))
    for line in found:
        print(line)


async def _capacity_runs(
    args: argparse.Namespace,
    model_port: int,
    pg: PostgresServer,
    redis: RedisServer | None,
    rows: list[list[str]],
) -> list[dict[int, Bound]]:
    """``--repeat`` runs of the largest K for each number of servers; every other run takes
    them in the opposite order, so a machine that slows over the runs slows each alike."""
    runs = []
    for number in range(1, args.repeat + 1):
        order = args.instances if number % 2 else list(reversed(args.instances))
        run_number = number if args.repeat > 1 else None
        bounds = {}
        for n in order:
            bounds[n] = await largest(args, n, model_port, pg, redis, rows, run_number)
        runs.append({n: bounds[n] for n in args.instances})
    return runs


if __name__ == "__main__":
    asyncio.run(main())
