"""Start-up benchmark: from `partwire serve` being run to its first 200s.

    python bench/start.py [--repeat 5]

Each run spawns `python -m partwire serve` on a free port with a fresh data dir and
polls GET /global/health every 10 ms until it answers (the server answers it as soon as
it listens, while the app is built behind it), then times GET /session, the first request
the built app serves (requests made earlier wait for it). Two cases: no provider (the
demo model) and an OpenAI key set (a configured provider; nothing is sent to it). Prints
the medians and every run, in seconds.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import httpx

CASES = {"demo model only": {}, "OPENAI_API_KEY set": {"OPENAI_API_KEY": "sk-bench"}}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def once(extra: dict[str, str]) -> tuple[float, float]:
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="partwire-start-") as state:
        env = {
            **os.environ,
            "PARTWIRE_DATA_DIR": f"{state}/data",
            "PARTWIRE_CONFIG_DIR": f"{state}/config",
            **extra,
        }
        started = time.perf_counter()
        server = subprocess.Popen(
            [sys.executable, "-m", "partwire", "serve", "--port", str(port), "--project", state],
            env=env,
            stderr=subprocess.DEVNULL,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            while True:
                try:
                    if httpx.get(f"{url}/global/health", timeout=1).is_success:
                        health = time.perf_counter() - started
                        break
                except httpx.TransportError:
                    time.sleep(0.01)
                if server.poll() is not None:
                    raise RuntimeError("partwire serve exited before answering")
            httpx.get(f"{url}/session", timeout=30).raise_for_status()
            return health, time.perf_counter() - started
        finally:
            server.terminate()
            server.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"partwire start-up — {os.cpu_count()} cores, Python {sys.version.split()[0]}")
    print(f"{'case':<20}  {'health s':>8}  {'app s':>6}  runs (health/app)")
    for name, extra in CASES.items():
        runs = [once(extra) for _ in range(args.repeat)]
        health = statistics.median(h for h, _ in runs)
        app = statistics.median(a for _, a in runs)
        shown = " ".join(f"{h:.2f}/{a:.2f}" for h, a in runs)
        print(f"{name:<20}  {health:>8.2f}  {app:>6.2f}  {shown}")


if __name__ == "__main__":
    main()
