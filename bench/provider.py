"""Provider benchmark: 10,000 tokens from the mock OpenAI-compatible server, end to end.

    python bench/provider.py [--words 10000] [--repeat 3]

Three processes on loopback: the mock OpenAI server (streaming one-word chunks as
fast as it can), a partwire server configured with it as provider ``mock``, and
this SSE client. Prints the same table as bench/stream.py: deltas/s end to end,
p50/p99 latency from the processor taking a delta off the provider stream to the
client reading it, SQLite bytes per text byte, and the server's peak RSS.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from stream import TARGET_P99_MS, _free_port, measure, table  # noqa: E402


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    port = _free_port()
    mock = await asyncio.create_subprocess_exec(
        sys.executable, str(ROOT / "bench" / "_mock_openai.py"),
        "--port", str(port), "--words", str(args.words),
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"},
    )  # fmt: skip
    try:
        with tempfile.TemporaryDirectory(prefix="partwire-provider-bench-") as project:
            config = {
                "model": "mock/mock-model",
                "provider": {"mock": {"options": {"baseURL": f"http://127.0.0.1:{port}/v1"}}},
            }
            await asyncio.to_thread(Path(project, "partwire.json").write_text, json.dumps(config))
            await asyncio.sleep(1.0)  # let the mock bind its port
            runs = [
                await measure(args.words, prompt="stream please", project=Path(project))
                for _ in range(args.repeat)
            ]
    finally:
        mock.terminate()
        await mock.wait()
    runs.sort(key=lambda r: r.rate)
    result = runs[len(runs) // 2]
    print(f"partwire provider benchmark (mock OpenAI-compatible) — {os.cpu_count()} cores")
    print(table([result], first="tokens"))
    verdict = "ok" if result.p99_ms < TARGET_P99_MS else "ABOVE"
    print(f"p99 {verdict} (the stream benchmark's target: < {TARGET_P99_MS:.0f} ms)")


if __name__ == "__main__":
    asyncio.run(main())
