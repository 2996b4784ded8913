"""What partwire's event log costs SQLite per commit of deltas, against a bare table.

    python bench/log_append.py [--rows 1,64] [--gap-ms 0,10] [--commits 200] [--rounds 6]
                               [--against OTHER/src]

One process, no server: the thread CPU of committing ``--rows`` delta rows at once
(a paced stream commits one, a loaded server's group commit dozens), with ``--gap-ms``
of sleep before each commit (a paced token wakes a cooled CPU; 0 is back to back), to

- ``bare table``: the log's table (seq, type, payload) alone in its database, no index,
  on a plain connection with bench/floor.py's pragmas (WAL, 1 KiB pages,
  synchronous=NORMAL), BEGIN and COMMIT around the statements partwire's writer uses
  (storage/writes.py: up to 64 rows a statement);
- ``partwire log``: a database made by partwire's own migrations, its writer's
  connection (storage/sqlite.py), the same statements in its writer's transaction: a
  lone row between its own BEGIN and COMMIT, as the writer commits a paced token
  (``Writer._commit_delta``), more rows in ``with conn``, as it commits a batch;
- ``implicit BEGIN``: the same log, every commit in ``with conn`` alone, as the writer
  committed a lone row before: sqlite3 issues the BEGIN before the first INSERT, and
  the COMMIT at the block's end, each parsed anew (its own statements are kept prepared).

With ``--against``, a third: a database made by another build's migrations (run in a
subprocess with that ``src`` first on its path), written the same way: this build's schema
against that one's, in one process (figures taken in separate processes minutes apart
differ by more than most schema changes save).

Each round runs every variant, in rotating order, for each size and gap; the table shows
each one's median µs per commit and partwire over the bare table, over the implicit
BEGIN (and over the other build's log).
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from partwire.storage.migrations import migrate
from partwire.storage.sqlite import PAGE_SIZE, _connect_writer
from partwire.storage.writes import _INSERT

sys.path.insert(0, str(Path(__file__).resolve().parent))

from stream import aligned

PAYLOAD = '{"sessionID":"ses_1","messageID":"msg_1","partID":"prt_1","field":"text","delta":"w "}'
Commit = Callable[[int, int], None]  # (first seq, rows)
OTHER = "other build's log"
IMPLICIT = "implicit BEGIN"


def bare_table(path: Path) -> Commit:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    for pragma in (f"page_size={PAGE_SIZE}", "journal_mode=WAL", "synchronous=NORMAL"):
        conn.execute(f"PRAGMA {pragma}")
    conn.execute(
        "CREATE TABLE event_log "
        "(seq INTEGER PRIMARY KEY, type TEXT NOT NULL, payload TEXT NOT NULL)"
    )

    def commit(first: int, rows: int) -> None:
        conn.execute("BEGIN")
        _append(conn, first, rows)
        conn.execute("COMMIT")

    return commit


def made_by(src: Path, path: Path) -> Path:
    """A database made by the migrations of the build whose package is under ``src``."""
    script = (
        "import sys; from pathlib import Path; "
        "from partwire.storage.migrations import migrate; "
        "from partwire.storage.sqlite import _connect_writer; "
        "migrate(_connect_writer(Path(sys.argv[1])))"
    )
    env = {**os.environ, "PYTHONPATH": str(src)}
    subprocess.run([sys.executable, "-c", script, str(path)], env=env, check=True)
    return path


def partwire_log(path: Path, migrated: bool = False, implicit: bool = False) -> Commit:
    conn = _connect_writer(path)
    if not migrated:
        migrate(conn)

    def commit(first: int, rows: int) -> None:
        with conn:
            if rows == 1 and not implicit:
                conn.execute("BEGIN")
                _append(conn, first, rows)
                conn.execute("COMMIT")
            else:
                _append(conn, first, rows)

    return commit


def _append(conn: sqlite3.Connection, first: int, rows: int) -> None:
    """``rows`` delta rows, in the statements WriteContext.insert_rows uses."""
    values: list[object] = []
    for n in range(rows):
        values += (first + n, "message.part.delta", PAYLOAD)
    start = 0
    for size in sorted(_INSERT, reverse=True):
        while len(values) - start >= size * 3:
            conn.execute(_INSERT[size], values[start : start + size * 3])
            start += size * 3


def per_commit_us(commit: Commit, rows: int, gap_s: float, commits: int, seq: int) -> float:
    spent = 0.0
    for n in range(commits):
        if gap_s:
            time.sleep(gap_s)
        before = time.thread_time()
        commit(seq + n * rows, rows)
        spent += time.thread_time() - before
    return spent / commits * 1e6


def _numbers(text: str) -> list[float]:
    try:
        values = [float(item) for item in text.split(",")]
    except ValueError:
        values = [-1.0]
    if any(value < 0 for value in values):
        raise argparse.ArgumentTypeError(f"not a list of non-negative numbers: {text!r}")
    return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=_numbers, default=[1.0, 64.0], help="rows a commit")
    parser.add_argument("--gap-ms", type=_numbers, default=[0.0, 10.0], help="sleep before each")
    parser.add_argument("--commits", type=int, default=200, help="commits a run")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--against", type=Path, help="another build's src folder")
    args = parser.parse_args()
    if args.against is not None and not (args.against / "partwire" / "__init__.py").is_file():
        parser.error(f"{args.against} is no src folder (no partwire/ in it)")
    rows_list = [max(1, int(rows)) for rows in args.rows]
    with tempfile.TemporaryDirectory(prefix="partwire-log-append-") as tmp:
        variants = {"bare table": bare_table(Path(tmp) / "bare.db")}
        variants["partwire log"] = partwire_log(Path(tmp) / "partwire.db")
        variants[IMPLICIT] = partwire_log(Path(tmp) / "implicit.db", implicit=True)
        if args.against is not None:
            other = made_by(args.against.resolve(), Path(tmp) / "other.db")
            variants[OTHER] = partwire_log(other, migrated=True)
        spent = measured(variants, rows_list, args.gap_ms, args.commits, args.rounds)
    print(
        f"CPU µs per commit of delta rows (the committing thread); medians of {args.rounds} "
        f"rounds of {args.commits} commits"
    )
    print(aligned(table(list(variants), spent, rows_list, args.gap_ms)))


def measured(
    variants: dict[str, Commit],
    rows_list: list[int],
    gaps_ms: list[float],
    commits: int,
    rounds: int,
) -> dict[tuple[str, int, float], list[float]]:
    """µs per commit of each variant, size and gap: a figure a round."""
    seqs = dict.fromkeys(variants, 1)
    spent: dict[tuple[str, int, float], list[float]] = {}
    for round_ in range(rounds):
        for rows in rows_list:
            for gap in gaps_ms:
                turn = round_ % len(variants)
                for name in list(variants)[turn:] + list(variants)[:turn]:
                    figure = per_commit_us(variants[name], rows, gap / 1000, commits, seqs[name])
                    seqs[name] += rows * commits
                    spent.setdefault((name, rows, gap), []).append(figure)
    return spent


def table(
    names: list[str],
    spent: dict[tuple[str, int, float], list[float]],
    rows_list: list[int],
    gaps_ms: list[float],
) -> list[tuple[str, ...]]:
    ratios = ["bare table", IMPLICIT] + ([OTHER] if OTHER in names else [])
    lines: list[tuple[str, ...]] = [
        ("rows", "gap ms", *names, *(f"partwire / {name}" for name in ratios))
    ]
    for rows in rows_list:
        for gap in gaps_ms:
            us = {name: statistics.median(spent[(name, rows, gap)]) for name in names}
            ours = us["partwire log"]
            lines.append(
                (
                    str(rows),
                    f"{gap:g}",
                    *(f"{us[name]:.0f}" for name in names),
                    *(f"{ours / us[name]:.2f}x" for name in ratios),
                )
            )
    return lines


if __name__ == "__main__":
    main()
