"""Capacity benchmark: how many live sessions one server carries at a model's pace.

    python bench/capacity.py [--rate 100] [--tokens 500] [--limit-ms 50] [--spread-s 1]
                             [--stagger-ms MS] [--watch event|session] [--via loop|ingest]
                             [--cpu-quota 1] [--loop-lag] [--max-sessions N] [--refine 3]
                             [--split]

Three kinds of process on loopback: a mock OpenAI-compatible model that streams every
answer at ``--rate`` tokens/s (bench/_mock_paced.py), a fresh partwire server for each
step (bench/_server.py, the mock configured as its provider), and this client, which
follows GET /event (or, with ``--watch session``, opens each session's part-frame
stream, ``GET /session/{id}/stream``, as many users each watching their own). Each step
starts K sessions evenly over ``--spread-s`` (or ``--stagger-ms`` apart), each streaming
``--tokens`` tokens, so that all K stream at once at random phases for most of the step
(the CPUs busy are read in that window), and measures every delta's latency (from the
mock model writing it to this client reading it: a server that falls behind leaves words
waiting in its socket, and that wait counts), the p99 over sessions of how long a
prompt took to its first delta (a server that makes new answers wait to keep its live
streams smooth shows it there), and the server's CPU time. With ``--via
ingest`` the sessions are external loops instead: this client streams each session's
message into POST /session/{id}/ingest at the same pace (no model process), and a
delta's latency runs from this client writing its line.

K grows (the steps below, then by a quarter each time) until the p99 latency passes
``--limit-ms``; then ``--refine`` more steps halve the gap between the last K under the
bound and the first over it (a bound between 200 and 250 is found to within about 6
sessions, not reported as 200). The last lines say what limited the first K over it:
the server's CPU (busy for all the CPU it may use), or the machine (the mock model and
this client, which share it with the server, left it no idle CPU), or neither.
``--cpu-quota C`` holds the server to C CPUs (a cgroup quota, as bench/scale.py does;
needs root), so that the model and the client have the rest: the figure is then
sessions per server core. ``--loop-lag`` also reports the p99 of how late a 1 ms timer
fires on the server's event loop (the probe costs CPU of its own: leave it off for the
CPU figures).

``--split`` then runs the largest K under the bound once more with one-token answers
(the same starts, streams opened and ends, next to no deltas) and splits the server's
CPU at that K: what starting and ending an answer costs a session, what each delta costs
beyond it, and the starts' share of the step's CPU. A capacity figure per session counts
both; the split says which one to make cheaper.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import signal
import statistics
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from _cpu_quota import CpuQuota, QuotaError, quota_root  # noqa: E402
from _ingest_feeder import IngestFeeder  # noqa: E402
from _processes import (  # noqa: E402
    Mock,
    cpu_s,
    model_sent,
    paced_model_process,
    serving,
    warmed_sessions,
)
from _watchers import Starter, follow, prompt_all, watch_sessions  # noqa: E402
from stream import aligned  # noqa: E402

STEPS = (1, 5, 10, 20, 30, 40, 50, 60, 80, 100, 125, 150, 200)
REFINE = 3  # halvings between the last K under the bound and the first over it
BUSY = 0.9  # a CPU busy this share of the step's time is the limit
MOST_SESSIONS = 5000


def steps(most: int = MOST_SESSIONS) -> Iterator[int]:
    """The Ks to try: STEPS, then a quarter more each time, up to ``most``."""
    k = 0
    for k in STEPS:
        if k > most:
            return
        yield k
    while (k := int(k * 1.25)) <= most:
        yield k


async def search(
    measure: Callable[[int], Awaitable[Step]],
    limit_ms: float,
    most: int,
    refine: int = REFINE,
    least: int = 1,
) -> list[Step]:
    """Every step measured, in order: K from ``steps(most)`` (``least`` on) until a step's
    p99 passes ``limit_ms``, then up to ``refine`` steps halving the gap between the last K
    under it and the first over it."""
    measured: list[Step] = []
    under, over = 0, 0
    for sessions in (k for k in steps(most) if k >= least):
        measured.append(await measure(sessions))
        if measured[-1].p99_ms > limit_ms:
            over = sessions
            break
        under = sessions
    for _ in range(refine):
        middle = (under + over) // 2
        if not under or not over or middle in (under, over):
            break
        measured.append(await measure(middle))
        if measured[-1].p99_ms > limit_ms:
            over = middle
        else:
            under = middle
    return measured


@dataclass
class Step:
    sessions: int
    deltas: int
    p50_ms: float
    p99_ms: float
    cpu_ms_per_1k: float
    server_cpus: float = 0.0  # CPUs the server kept busy over the step (CPU s / wall s)
    others_cpus: float = 0.0  # the same for the mock model and this client together
    lag_p99_ms: float | None = None
    start_p99_ms: float | None = None  # from a prompt sent to its first delta read


@dataclass
class Split:
    """A step's server CPU split by a step of one-token answers at the same K."""

    sessions: int
    start_ms: float  # server CPU a session, to start, stream one token and end
    delta_us: float  # server CPU per delta beyond that
    start_share: float  # the starts' share of the full step's server CPU (0..1)


def split(full: Step, tokens: int, short: Step) -> Split:
    """``full`` (``tokens`` an answer) against ``short`` (one token an answer, same K)."""
    full_ms = full.cpu_ms_per_1k * full.deltas / 1000
    short_ms = short.cpu_ms_per_1k * short.deltas / 1000
    more_deltas = full.sessions * (tokens - 1)
    return Split(
        sessions=full.sessions,
        start_ms=short_ms / short.sessions,
        delta_us=max(full_ms - short_ms, 0.0) * 1000 / max(more_deltas, 1),
        start_share=min(short_ms / full_ms, 1.0) if full_ms > 0 else 0.0,
    )


def split_line(parts: Split) -> str:
    return (
        f"at {parts.sessions} sessions: starting and ending an answer took "
        f"{parts.start_ms:.2f} ms of server CPU a session, each delta {parts.delta_us:.0f} µs "
        f"more; the starts were {parts.start_share:.0%} of the server's CPU"
    )


async def step(
    sessions: int,
    tokens: int,
    model: int | Mock,
    stagger_s: float = 0.0,
    watch: str = "event",
    *,
    rate: float = 100,
    feeder: IngestFeeder | None = None,
    cpu_quota: float | None = None,
    loop_lag: bool = False,
    profile: Path | None = None,
    measuring: Callable[[], object] | None = None,
) -> Step:
    """One fresh server, ``sessions`` sessions streaming at once (or arriving staggered),
    followed on GET /event or (``watch="session"``) each on a stream of its own; answered
    by the model, or (``feeder``) streamed in by external loops through ingest. With
    ``profile``, the server's loop runs under cProfile over the window where every session
    streams, written to that file (bench/per_delta.py). ``measuring`` is called as the
    measured window starts."""
    mock = model if isinstance(model, Mock) else Mock(model, 0)
    quotas: list[CpuQuota] = []
    try:
        async with (
            serving(mock.port, *(("--profile", str(profile)) if profile else ())) as (url, pid),
            httpx.AsyncClient(base_url=url, timeout=120) as http,
        ):
            if cpu_quota is not None:
                quotas.append(CpuQuota(pid, cpu_quota))
            port = int(url.rsplit(":", 1)[1])
            ids = await warmed_sessions(http, url, sessions, feeder or prompt_all)
            prompts = [(url, sid) for sid in ids]
            if loop_lag:
                await http.get("/bench/stats", params={"reset_lag": "true"})
            received: dict[str, int] = {}
            sent: dict[str, int] = {}  # when each prompt went, and its first delta came
            firsts: dict[str, int] = {}
            start = feeder or functools.partial(prompt_all, sent=sent)
            await model_sent(http, mock.port)  # the warm-up's words: not this step's
            server_before = cpu_s(pid)
            if measuring is not None:  # bench/floor.py's floor streams from here too
                measuring()
            # the CPUs busy while every session streams: from the last start to the first end
            last_start_s = stagger_s * (sessions - 1)
            window = _busy_cpus(
                pid, mock.pid, last_start_s + 0.3, tokens / rate - 0.3, profiled=bool(profile)
            )
            sampling = asyncio.ensure_future(window)
            await _watched(watch, port, prompts, received, firsts, stagger_s, start)
            server_cpu = cpu_s(pid) - server_before
            server_cpus, others_cpus = await sampling
            stats = (await http.get("/bench/stats")).json()
            emits = feeder.sent if feeder is not None else await model_sent(http, mock.port)
    finally:
        for quota in quotas:  # the server has exited: its group can go
            quota.remove()
    _check_all_read(received, sessions, tokens)
    latencies = sorted((received[d] - emits[d]) / 1e6 for d in received if d in emits)
    return Step(
        sessions=sessions,
        deltas=len(received),
        p50_ms=statistics.median(latencies),
        p99_ms=_p99(latencies) or 0.0,
        cpu_ms_per_1k=server_cpu * 1000 / len(received) * 1000,
        server_cpus=server_cpus,
        others_cpus=others_cpus,
        lag_p99_ms=stats["lag_p99_ms"] if loop_lag else None,
        start_p99_ms=_p99([(firsts[s] - sent[s]) / 1e6 for s in sent if s in firsts]),
    )


async def _watched(
    watch: str,
    port: int,
    prompts: list[tuple[str, str]],
    received: dict[str, int],
    firsts: dict[str, int],
    stagger_s: float,
    start: Starter,
) -> None:
    """Prompt and follow every session: on its own stream (``watch="session"``) or all on
    GET /event, noting when each delta (``received``) and each first one came."""
    if watch == "session":
        await watch_sessions(prompts, received, stagger_s, start, firsts)
    else:
        await follow(port, prompts, received, stagger_s, start, firsts)


def _p99(values: list[float]) -> float | None:
    ordered = sorted(values)
    return ordered[max(0, int(len(ordered) * 0.99) - 1)] if ordered else None


def _check_all_read(received: dict[str, int], sessions: int, tokens: int) -> None:
    expected = sessions * tokens
    if len(received) != expected:
        read = Counter(d.split("w")[0] for d in received)
        short = [(name, tokens - read[name]) for name in sorted(read) if read[name] < tokens]
        raise RuntimeError(
            f"expected {expected} deltas, the client read {len(received)}; "
            f"streams short of deltas (stream, missing): {short[:10]}"
        )


async def _busy_cpus(
    server_pid: int, model_pid: int, from_s: float, to_s: float, *, profiled: bool = False
) -> tuple[float, float]:
    """CPUs the server, and the mock model and this client, kept busy between ``from_s``
    and ``to_s`` from now (the whole step's average when that window is too short); a
    ``profiled`` server is told when the window opens (SIGUSR1) and closes (SIGUSR2)."""
    if to_s - from_s < 0.5:
        from_s, to_s = 0.0, 0.5
    await asyncio.sleep(from_s)
    if profiled:
        os.kill(server_pid, signal.SIGUSR1)
    server, others, start = cpu_s(server_pid), _others_cpu_s(model_pid), time.monotonic()
    await asyncio.sleep(to_s - from_s)
    if profiled:
        os.kill(server_pid, signal.SIGUSR2)
    wall = time.monotonic() - start
    return (cpu_s(server_pid) - server) / wall, (_others_cpu_s(model_pid) - others) / wall


def _others_cpu_s(model_pid: int) -> float:
    """CPU seconds so far of what shares the machine with the server: the mock model (when
    there is one) and this client."""
    own = time.process_time()
    return own + (cpu_s(model_pid) if model_pid else 0.0)


def limit(
    step: Step,
    cpu_quota: float | None,
    server: str = "server",
    others: str = "mock model and client",
) -> str:
    """What held the step back: the ``server``'s CPU (``cpu_quota``: all it may use; a
    plural ``server``, several servers' together), the machine's, or neither."""
    cores = os.cpu_count() or 1
    server_share = step.server_cpus / (cpu_quota or cores)
    machine_share = (step.server_cpus + step.others_cpus) / cores
    figures = (
        f"{server} {step.server_cpus:.2f} of {cpu_quota or cores:g} CPUs, "
        f"{others} {step.others_cpus:.2f}, machine {cores} CPUs"
    )
    whose = f"the {server}'" if server.endswith("s") else f"the {server}'s"
    if server_share >= BUSY:
        return f"{whose} CPU ({figures})"
    if machine_share >= BUSY:
        return f"the machine: the {others} took the CPU the {server} lacked ({figures})"
    return f"neither CPU was full: latency ({figures})"


def table(steps: list[Step]) -> str:
    lag = any(s.lag_p99_ms is not None for s in steps)
    start = any(s.start_p99_ms is not None for s in steps)
    head = ("sessions", "deltas", "p50 ms", "p99 ms", "CPU ms/1k deltas", "server CPUs",
            "model+client CPUs")  # fmt: skip
    rows = [
        (
            *head,
            *(("first delta p99 ms",) if start else ()),
            *(("loop lag p99 ms",) if lag else ()),
        ),
        *(
            (
                str(s.sessions),
                str(s.deltas),
                f"{s.p50_ms:.1f}",
                f"{s.p99_ms:.1f}",
                f"{s.cpu_ms_per_1k:.0f}",
                f"{s.server_cpus:.2f}",
                f"{s.others_cpus:.2f}",
                *((f"{s.start_p99_ms or 0:.0f}",) if start else ()),
                *((f"{s.lag_p99_ms or 0:.2f}",) if lag else ()),
            )
            for s in steps
        ),
    ]
    return aligned(rows)


def _stagger_s(args: argparse.Namespace, sessions: int) -> float:
    if args.stagger_ms is not None:
        return float(args.stagger_ms) / 1000
    return float(args.spread_s) / sessions


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=100, help="tokens/s of each stream")
    parser.add_argument("--tokens", type=int, default=500, help="tokens of each answer")
    parser.add_argument("--limit-ms", type=float, default=50, help="the p99 latency bound")
    parser.add_argument("--max-sessions", type=int, default=MOST_SESSIONS, help="stop after this K")
    parser.add_argument(
        "--spread-s",
        type=float,
        default=1.0,
        help="start the K sessions evenly over this many seconds (0: all at once)",
    )
    parser.add_argument(
        "--stagger-ms", type=float, help="start the sessions this far apart instead"
    )
    parser.add_argument(
        "--watch",
        choices=["event", "session"],
        default="event",
        help="one client on GET /event, or a client per session on its part-frame stream",
    )
    parser.add_argument(
        "--via",
        choices=["loop", "ingest"],
        default="loop",
        help="partwire's loop answers from the mock model, or external loops stream in",
    )
    parser.add_argument(
        "--cpu-quota", type=float, help="CPUs the server may use (a cgroup quota; root)"
    )
    parser.add_argument(
        "--loop-lag", action="store_true", help="also the p99 of the event loop's lag"
    )
    parser.add_argument(
        "--refine",
        type=int,
        default=REFINE,
        help="steps that narrow the bound once it is passed (0: none)",
    )
    parser.add_argument(
        "--split",
        action="store_true",
        help="split the server's CPU at the largest K into answers' starts and deltas",
    )
    args = parser.parse_args()
    if args.split and args.tokens < 2:
        sys.exit("--split: answers of at least 2 tokens (--tokens), to compare with one")
    if args.cpu_quota is not None:
        try:
            quota_root()
        except QuotaError as exc:
            sys.exit(f"--cpu-quota: {exc}")
    return args


def _measuring(
    args: argparse.Namespace, mock: Mock, tokens: int, profile: Path | None = None
) -> Callable[[int], Awaitable[Step]]:
    """One step of K sessions answering ``tokens`` tokens, as the arguments say (the
    server profiled into ``profile``: bench/per_delta.py)."""

    async def measure(sessions: int) -> Step:
        feeder = IngestFeeder(tokens, args.rate) if args.via == "ingest" else None
        return await step(
            sessions,
            tokens,
            Mock(mock.port, 0) if feeder else mock,
            _stagger_s(args, sessions),
            args.watch,
            feeder=feeder,
            rate=args.rate,
            cpu_quota=args.cpu_quota,
            loop_lag=args.loop_lag,
            profile=profile,
        )

    return measure


async def main() -> None:
    args = _arguments()
    async with paced_model_process(args.tokens, args.rate) as mock:
        measure = _measuring(args, mock, args.tokens)
        measured = await search(measure, args.limit_ms, args.max_sessions, args.refine)
    measured.sort(key=lambda s: s.sessions)
    best = _largest_under(measured, args.limit_ms)
    parts = None
    if args.split and best is not None:
        async with paced_model_process(1, args.rate) as short_mock:
            short = await _measuring(args, short_mock, 1)(best.sessions)
        parts = split(best, args.tokens, short)
    _report(args, measured)
    if parts is not None:
        print(split_line(parts))


def _largest_under(measured: list[Step], limit_ms: float) -> Step | None:
    under = [s for s in measured if s.p99_ms <= limit_ms]
    return max(under, key=lambda s: s.sessions) if under else None


def _report(args: argparse.Namespace, measured: list[Step]) -> None:
    print(
        f"partwire capacity — {os.cpu_count()} cores, Python {sys.version.split()[0]}, "
        f"{args.rate:g} tokens/s a session, {args.tokens} tokens an answer, "
        + (
            f"started {args.stagger_ms:g} ms apart"
            if args.stagger_ms is not None
            else f"started over {args.spread_s:g} s"
        )
        + (", a client per session" if args.watch == "session" else ", one client on /event")
        + (", external loops through ingest" if args.via == "ingest" else ", partwire's loop")
        + (f", the server held to {args.cpu_quota:g} CPUs" if args.cpu_quota else "")
    )
    print(table(measured))
    largest = _largest_under(measured, args.limit_ms)
    best = largest.sessions if largest is not None else 0
    cpu = largest.cpu_ms_per_1k if largest is not None else float("nan")
    print(
        f"largest K with p99 <= {args.limit_ms:g} ms: {best} sessions "
        f"({cpu:.0f} ms CPU per 1k deltas there)"
        + (f", {best / args.cpu_quota:.0f} sessions per server core" if args.cpu_quota else "")
    )
    passed = next((s for s in measured if s.p99_ms > args.limit_ms), None)
    if passed is not None:
        print(f"at {passed.sessions} sessions p99 was {passed.p99_ms:.1f} ms; the limit: "
              + limit(passed, args.cpu_quota))  # fmt: skip
    else:
        print(f"the bound was not passed up to --max-sessions {args.max_sessions}")


if __name__ == "__main__":
    try:
        import uvloop
    except ImportError:
        asyncio.run(main())
    else:  # the client is one of three busy processes: lean, as the server is
        uvloop.run(main())
