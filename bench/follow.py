"""What a server pays to follow the others on one Postgres database.

    python bench/follow.py [--sessions 25] [--followers 2] [--rounds 3] [--tokens 500]
                           [--rate 100] [--builds SRC [SRC ...]]

Servers sharing a database each publish every server's events in log order, so each
follows every other's commits (``storage/pg_notify.py``). Here all sessions are on the
first server, each watched by a part-frame client of its own there, and ``--followers``
more servers on the same database have nothing to do but follow it. The table shows,
for each round, the busy server's CPU and each follower's, in ms a second, read over the
sessions' whole run (their prompts included: each follower sees every prompt stored).
An idle server with nothing to follow spends about 2 ms a second.

``--builds`` takes the ``src`` folders of several checkouts (``git worktree add
../before HEAD~1``, say; this tree's by default), each served by this tree's
bench/_server.py: each round runs every build once, in turn, in the opposite order each
round, on a fresh database of one throwaway Postgres cluster, with the mock model of
bench/_mock_paced.py. The last lines give each build's medians. Needs Postgres
installed (``make test`` installs it).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from tests.postgres_server import PostgresServer, server_bin  # noqa: E402

from _processes import cpu_s, paced_model_process, serving, warmed_sessions  # noqa: E402
from _watchers import watch_sessions  # noqa: E402
from stream import aligned  # noqa: E402

STAGGER_S = 0.005  # between two sessions' prompts


async def one_round(
    src: Path, url: str, model_port: int, sessions: int, followers: int
) -> tuple[float, list[float]]:
    """The busy server's CPU and each follower's, in ms a second."""
    database = ["--database-url", url]
    async with AsyncExitStack() as stack:
        servers = [
            await stack.enter_async_context(serving(model_port, *database, src=src))
            for _ in range(1 + followers)
        ]
        busy_url = servers[0][0]
        async with httpx.AsyncClient(base_url=busy_url, timeout=120) as http:
            ids = await warmed_sessions(http, busy_url, sessions)  # one answer first
            pids = [pid for _, pid in servers]
            before = [cpu_s(pid) for pid in pids]
            started = time.monotonic()
            await watch_sessions([(busy_url, sid) for sid in ids], {}, STAGGER_S)
            wall = time.monotonic() - started
            used = [(cpu_s(pid) - was) * 1000 / wall for pid, was in zip(pids, before, strict=True)]
    return used[0], used[1:]


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=25, help="on the busy server")
    parser.add_argument("--followers", type=int, default=2, help="idle servers following it")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=500, help="tokens of each answer")
    parser.add_argument("--rate", type=float, default=100, help="tokens/s of each stream")
    parser.add_argument(
        "--builds", type=Path, nargs="+", default=[ROOT / "src"], help="src folders"
    )
    args = parser.parse_args()
    for src in args.builds:
        if not (src / "partwire").is_dir():
            parser.error(f"--builds: {src} holds no partwire package")
    if min(args.sessions, args.followers, args.rounds) < 1:
        parser.error("--sessions, --followers and --rounds: at least 1")
    return args


async def main() -> None:
    args = _arguments()
    bindir = server_bin()
    if bindir is None:
        sys.exit("Postgres is not installed (make test installs it)")
    pg = PostgresServer(bindir)
    pg.start()
    names = [str(src) for src in args.builds]
    rows = [("build", "round", "busy ms/s", *(f"follower {n + 1}" for n in range(args.followers)))]
    busy: dict[str, list[float]] = {name: [] for name in names}
    following: dict[str, list[float]] = {name: [] for name in names}
    try:
        async with paced_model_process(args.tokens, args.rate) as model:
            for number in range(1, args.rounds + 1):
                order = args.builds if number % 2 else list(reversed(args.builds))
                for src in order:
                    spent, others = await one_round(
                        src, pg.new_database(), model.port, args.sessions, args.followers
                    )
                    busy[str(src)].append(spent)
                    following[str(src)] += others
                    rows.append(
                        (str(src), str(number), f"{spent:.0f}", *(f"{o:.1f}" for o in others))
                    )
    finally:
        pg.stop()
    print(
        f"following one busy server on one Postgres database — {args.sessions} sessions at "
        f"{args.rate:g} tokens/s on it ({args.tokens} tokens each, a client each), "
        f"{args.followers} idle servers following"
    )
    print(aligned(rows))
    for name in names:
        print(
            f"{name}: median busy {statistics.median(busy[name]):.0f} ms/s, "
            f"median follower {statistics.median(following[name]):.1f} ms/s"
        )


if __name__ == "__main__":
    asyncio.run(main())
