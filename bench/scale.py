"""Scale-out benchmark: one server, or several sharing one Postgres database.

    python bench/scale.py [--instances 1 3] [--sessions 50 150] [--rate 100] [--tokens 200]

For each number of servers and of sessions: a throwaway Postgres cluster's fresh
database, that many servers on it (bench/_server.py, the mock model of
bench/_mock_paced.py as their provider, in its own process), the sessions spread over
the servers and prompted at once, each streaming ``--tokens`` tokens at ``--rate``
tokens/s. One client follows GET /event on the first server: it sees every server's
deltas (the servers share one log), so its latency (from the processor taking a delta
off the model stream, on whichever server, to this client reading it) includes the trip
through Postgres. The table shows p50/p99 and the servers' CPU per 1k deltas. Needs
Postgres installed (``make test`` installs it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from tests.postgres_server import PostgresServer, server_bin  # noqa: E402

from capacity import _cpu_s, _EventReader  # noqa: E402
from stream import _free_port, _wait_ready, aligned  # noqa: E402


@asynccontextmanager
async def _server(model_port: int, database: str) -> AsyncIterator[tuple[str, int]]:
    port = _free_port()
    config = {
        "model": "mock/paced",
        "provider": {"mock": {"options": {"baseURL": f"http://127.0.0.1:{model_port}/v1"}}},
    }
    with (
        tempfile.TemporaryDirectory(prefix="partwire-scale-") as data,
        tempfile.TemporaryDirectory(prefix="partwire-scale-project-") as project,
    ):
        await asyncio.to_thread(Path(project, "partwire.json").write_text, json.dumps(config))
        process = await asyncio.create_subprocess_exec(
            sys.executable, str(ROOT / "bench" / "_server.py"), "--port", str(port),
            "--data", data, "--project", project, "--database-url", database,
            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        )  # fmt: skip
        try:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
                await _wait_ready(http)
            yield f"http://127.0.0.1:{port}", process.pid
        finally:
            process.terminate()
            await asyncio.wait_for(process.wait(), 10)


async def _follow(url: str, prompts: list[tuple[str, str]], received: dict[str, int]) -> None:
    """Prompt every (server, session) at once; read GET /event on ``url`` until all idle."""
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    events = _EventReader()
    try:
        writer.write(b"GET /event HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        await writer.drain()
        while not any(b'"server.connected"' in line for line in events.lines):
            events.parser.feed_data(await reader.read(65536))
        events.lines.clear()
        body = {"parts": [{"type": "text", "text": "stream please"}]}
        async with httpx.AsyncClient(timeout=120) as http:
            await asyncio.gather(
                *(
                    http.post(f"{server}/session/{sid}/prompt_async", json=body)
                    for server, sid in prompts
                )
            )
        waiting = {sid for _, sid in prompts}
        while waiting:
            data = await reader.read(262144)
            if not data:
                raise RuntimeError("the server closed GET /event")
            now = time.time_ns()
            events.parser.feed_data(data)
            for line in events.lines:
                if b'"message.part.delta"' in line:
                    received[json.loads(line[5:])["properties"]["delta"]] = now
                elif b'"session.idle"' in line:
                    waiting.discard(json.loads(line[5:])["properties"]["sessionID"])
            events.lines.clear()
    finally:
        writer.close()


async def run(instances: int, sessions: int, model_port: int, pg: PostgresServer) -> list[str]:
    database = pg.new_database()
    async with AsyncExitStack() as stack:
        servers = [
            await stack.enter_async_context(_server(model_port, database)) for _ in range(instances)
        ]
        urls = [url for url, _ in servers]
        async with httpx.AsyncClient(timeout=120) as http:
            for url in urls:  # one answer each first, not measured: SDKs load, pools open
                warm = (await http.post(f"{url}/session", json={})).json()["id"]
                await _follow(urls[0], [(url, warm)], {})
            prompts = []
            for n in range(sessions):
                url = urls[n % instances]
                prompts.append((url, (await http.post(f"{url}/session", json={})).json()["id"]))
            received: dict[str, int] = {}
            cpu_before = sum(_cpu_s(pid) for _, pid in servers)
            await _follow(urls[0], prompts, received)
            cpu = sum(_cpu_s(pid) for _, pid in servers) - cpu_before
            emits: dict[str, int] = {}
            for url in urls:
                emits |= (await http.get(f"{url}/bench/stats", params={"emits": "true"})).json()[
                    "emits"
                ]
    latencies = sorted((received[d] - emits[d]) / 1e6 for d in received if d in emits)
    p99 = latencies[max(0, int(len(latencies) * 0.99) - 1)]
    return [
        str(instances), str(sessions), str(len(received)),
        f"{statistics.median(latencies):.1f}", f"{p99:.1f}", f"{cpu * 1e6 / len(received):.0f}",
    ]  # fmt: skip


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--sessions", type=int, nargs="+", default=[50, 150])
    parser.add_argument("--rate", type=float, default=100, help="tokens/s of each stream")
    parser.add_argument("--tokens", type=int, default=200, help="tokens of each answer")
    args = parser.parse_args()
    bindir = server_bin()
    if bindir is None:
        sys.exit("Postgres is not installed (make test installs it)")
    pg = PostgresServer(bindir)
    pg.start()
    model_port = _free_port()
    model = await asyncio.create_subprocess_exec(
        sys.executable, str(ROOT / "bench" / "_mock_paced.py"),
        "--port", str(model_port), "--tokens", str(args.tokens), "--rate", str(args.rate),
        cwd=ROOT, env={**os.environ, "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"},
    )  # fmt: skip
    rows = [["servers", "sessions", "deltas", "p50 ms", "p99 ms", "CPU ms/1k deltas"]]
    try:
        await asyncio.sleep(1.0)  # the mock binds its port
        for instances in args.instances:
            for sessions in args.sessions:
                rows.append(await run(instances, sessions, model_port, pg))
    finally:
        model.terminate()
        await model.wait()
        pg.stop()
    print(
        f"partwire scale-out on one Postgres database — {os.cpu_count()} cores, "
        f"{args.rate:g} tokens/s a session, {args.tokens} tokens an answer "
        "(a test cluster: fsync off)"
    )
    print(aligned([tuple(row) for row in rows]))


if __name__ == "__main__":
    asyncio.run(main())
