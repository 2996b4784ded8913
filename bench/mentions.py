"""@-mention benchmark: how long GET /find/file takes on a tree like a fresh clone's.

    python bench/mentions.py [--ignored 24000] [--tracked 400] [--repeat 5]

Builds a git work tree with ``--tracked`` files of its own and ``--ignored`` files under
``.venv`` and ``node_modules`` (listed in .gitignore), starts `partwire serve` on it and
times GET /find/file for the queries one types on the way to ``@README`` (``R``, ``RE``,
``REA``, ``READ``): the first (its listing made) and the rest (answered from the listing
while it is fresh), then again after the listing has expired. Prints milliseconds:
median and slowest of ``--repeat`` rounds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from start import _free_port

QUERIES = ("R", "RE", "REA", "READ")


def make_tree(root: Path, tracked: int, ignored: int) -> None:
    (root / ".gitignore").write_text(".venv/\nnode_modules/\n")
    (root / "README.md").write_text("# bench\n")
    for number in range(tracked):
        path = root / "src" / f"pkg{number % 20}" / f"module_{number}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n")
    for number in range(ignored):
        folder = ".venv/lib" if number % 2 else "node_modules"
        path = root / folder / f"dep{number % 300}" / f"file_{number}.js"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)


def timed(http: httpx.Client, query: str) -> float:
    started = time.perf_counter()
    http.get("/find/file", params={"query": query, "limit": 20}).raise_for_status()
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ignored", type=int, default=24_000)
    parser.add_argument("--tracked", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="partwire-mentions-") as state:
        project = Path(state) / "project"
        project.mkdir()
        make_tree(project, args.tracked, args.ignored)
        port = _free_port()
        env = {
            **os.environ,
            "PARTWIRE_DATA_DIR": f"{state}/data",
            "PARTWIRE_CONFIG_DIR": f"{state}/c",
        }
        command = [sys.executable, "-m", "partwire", "serve", "--port", str(port)]
        server = subprocess.Popen(
            [*command, "--project", str(project)], env=env, stderr=subprocess.DEVNULL
        )
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
                for _ in range(500):
                    try:
                        if http.get("/global/health").is_success:
                            break
                    except httpx.TransportError:
                        time.sleep(0.02)
                first: list[float] = []
                fresh: list[float] = []
                for _ in range(args.repeat):
                    time.sleep(1.2)  # the listing from the round before has expired
                    first.append(timed(http, QUERIES[0]))
                    fresh.extend(timed(http, query) for query in QUERIES[1:])
        finally:
            server.terminate()
            server.wait(10)
    print(
        f"@-mentions — {args.tracked} files of the project, {args.ignored} ignored, "
        f"{os.cpu_count()} cores"
    )
    print(f"{'lookup':<28}  {'median ms':>9}  {'max ms':>7}")
    for name, runs in (("first (lists the tree)", first), ("next keystrokes", fresh)):
        print(f"{name:<28}  {statistics.median(runs):>9.1f}  {max(runs):>7.1f}")


if __name__ == "__main__":
    main()
