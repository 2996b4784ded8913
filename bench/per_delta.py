"""Where the server's CPU per streamed delta goes, function by function.

    python bench/per_delta.py [--sessions 1] [--tokens 2000] [--rate 100] [--stagger-ms 5]
                            [--watch event|session] [--via loop|ingest] [--cpu-quota C]
                            [--top 40] [--save FILE]

One bench/capacity.py step (the same mock model, server and client), with the server's
event loop under cProfile over the window where every session streams (from the last
start to the first end; the server's other threads are not profiled). Each function's
calls, own time and time with its callees are divided by the deltas streamed in that
window, counted as the calls of the session writer's ``text_delta`` (one a delta, from
partwire's loop or from an external loop through ingest), and the ``--top`` functions by
own time are printed, then the calls a delta made in all. Times are wall-clock as
cProfile keeps them: a write that wakes the client can be descheduled, and the profiler
costs about as much again as the code it measures, so the figures rank functions; the
server's true CPU per delta is bench/capacity.py's. ``--save`` keeps the profile for
``python -m pstats``.
"""

from __future__ import annotations

import argparse
import asyncio
import pstats
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from _processes import paced_model_process  # noqa: E402
from capacity import Step, _measuring  # noqa: E402
from stream import aligned  # noqa: E402

# (file, name) of the one call a streamed text delta makes, whoever produced it
PER_DELTA = ("partwire/session/writer.py", "text_delta")
PACKAGES = ("/site-packages/", "/src/")

Key = tuple[str, int, str]
Row = tuple[int, int, float, float, object]  # pstats: calls, primitive calls, own, cumulative


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1)
    parser.add_argument("--tokens", type=int, default=2000, help="tokens of each answer")
    parser.add_argument("--rate", type=float, default=100, help="tokens/s of each stream")
    parser.add_argument("--stagger-ms", type=float, default=5, help="between the starts")
    parser.add_argument("--watch", choices=["event", "session"], default="event")
    parser.add_argument("--via", choices=["loop", "ingest"], default="loop")
    parser.add_argument("--cpu-quota", type=float, help="CPUs the server may use (root)")
    parser.add_argument("--top", type=int, default=40, help="functions shown")
    parser.add_argument("--save", type=Path, help="keep the profile (pstats format) here")
    parser.set_defaults(loop_lag=False)  # capacity.py's step, as its arguments say
    args = parser.parse_args()
    if args.tokens / args.rate - args.stagger_ms / 1000 * (args.sessions - 1) < 1.1:
        parser.error("every session must stream together for a second at least: more --tokens")
    return args


async def _profiled_step(args: argparse.Namespace, path: Path) -> Step:
    async with paced_model_process(args.tokens, args.rate) as mock:
        return await _measuring(args, mock, args.tokens, profile=path)(args.sessions)


def label(key: Key) -> str:
    """``partwire/storage/writer.py:307 _commit``; a built-in as pstats names it."""
    path, line, name = key
    if path == "~":
        return name
    for marker in PACKAGES:
        if marker in path:
            path = path.rsplit(marker, 1)[1]
            break
    return f"{path}:{line} {name}"


def deltas_in(stats: dict[Key, Row]) -> int:
    """The deltas the profile saw: the calls of the writer's ``text_delta``."""
    path, name = PER_DELTA
    return sum(row[1] for key, row in stats.items() if key[0].endswith(path) and key[2] == name)


def per_delta(stats: dict[Key, Row], deltas: int, top: int) -> str:
    """The ``top`` functions by own time, each figure per delta, and the calls in all."""
    ranked = sorted(stats.items(), key=lambda item: -item[1][2])[:top]
    figures = [("calls/delta", "own µs/delta", "with callees µs/delta")]
    figures += [
        (f"{calls / deltas:.2f}", f"{own * 1e6 / deltas:.2f}", f"{cum * 1e6 / deltas:.2f}")
        for _, (_, calls, own, cum, _callers) in ranked
    ]
    names = ["function", "--------", *(label(key) for key, _ in ranked)]
    lines = [
        f"{line}  {name}" for line, name in zip(aligned(figures).splitlines(), names, strict=True)
    ]
    python = sum(row[1] for key, row in stats.items() if key[0] != "~")
    builtin = sum(row[1] for key, row in stats.items() if key[0] == "~")
    own = sum(row[2] for row in stats.values())
    summary = (
        f"{deltas} deltas in the window: {(python + builtin) / deltas:.0f} calls a delta "
        f"({python / deltas:.0f} of Python functions, {builtin / deltas:.0f} into C), "
        f"{own * 1e6 / deltas:.1f} µs own time a delta under the profiler"
    )
    return "\n".join([*lines, summary])


def main() -> None:
    args = _arguments()
    with tempfile.TemporaryDirectory(prefix="partwire-per-delta-") as tmp:
        path = args.save or Path(tmp, "server.prof")
        measured = asyncio.run(_profiled_step(args, path))
        stats: dict[Key, Row] = pstats.Stats(str(path)).stats  # type: ignore[attr-defined]
    deltas = deltas_in(stats)
    if not deltas:
        sys.exit("the profile saw no delta: is the window too short?")
    print(
        f"partwire per delta — {args.sessions} sessions at {args.rate:g} tokens/s, "
        f"{'a client per session' if args.watch == 'session' else 'one client on /event'}, "
        f"{'external loops through ingest' if args.via == 'ingest' else 'partwire loop'}; "
        f"the step (profiled): p99 {measured.p99_ms:.1f} ms, "
        f"{measured.cpu_ms_per_1k:.0f} ms CPU per 1k deltas"
    )
    print(per_delta(stats, deltas, args.top))


if __name__ == "__main__":
    main()
