"""Recorder benchmark: an external loop's message through ``runtime.record()``, in process.

    python bench/recorder.py [--deltas 2000] [--prefix-kb 20 20480] [--args-deltas 1000]

Two tables:

- CPU per 1,000 text deltas of 2 KB, after 20 KB and after 20 MB of text already streamed
  into the same part (the CPU of the prefix alone is taken off). The cost of a delta must
  not grow with the text before it: the two rows stay within 2x of each other.
- bytes handed to the store per streamed tool-argument delta (part rows, event payloads
  and text deltas), for a call whose arguments arrive in ``--args-deltas`` deltas of 100
  characters. Linear arguments cost a constant number of bytes per delta.

The process's CPU time (every thread, the SQLite writer's too) is measured; the store is
SQLite in a temporary directory.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from partwire.config import load_settings  # noqa: E402
from partwire.runtime import Runtime  # noqa: E402
from partwire.schema.input import SessionCreateInput  # noqa: E402
from partwire.storage.batch import Together  # noqa: E402
from partwire.storage.sqlite import SqliteStore  # noqa: E402
from partwire.storage.writes import DeltaAppend, PartPut, Write  # noqa: E402

DELTA_CHARS = 2048
PREFIX_CHUNK = 512 * 1024


async def _text_run(runtime: Runtime, prefix_kb: int, deltas: int) -> float:
    """CPU seconds for one recorded message: ``prefix_kb`` of text, then ``deltas``."""
    session = (await runtime.sessions.create(SessionCreateInput())).id
    delta = ("w " * DELTA_CHARS)[:DELTA_CHARS]
    started = time.process_time()
    async with runtime.record(session, prompt="bench") as msg:
        await msg.start_step()
        left = prefix_kb * 1024
        while left > 0:
            size = min(left, PREFIX_CHUNK)
            left -= size
            await msg.add_text_delta("x" * size)
        for _ in range(deltas):
            await msg.add_text_delta(delta)
        await msg.finish_step({"input": 1, "output": 1})
    return time.process_time() - started


class _Counter:
    """Bytes of what is handed to the store: part rows and their events, text deltas.
    Every write reaches the store's queue, whichever call made it (a batch, a delta)."""

    def __init__(self) -> None:
        self.bytes = 0
        self._queue = SqliteStore._queue

    def install(self) -> None:
        counter = self

        def queue(store: SqliteStore, write: Write) -> None:
            counter.bytes += _bytes_of(write)
            counter._queue(store, write)

        SqliteStore._queue = queue  # type: ignore[method-assign]


def _bytes_of(write: Write) -> int:
    if isinstance(write, Together):
        return sum(_bytes_of(one) for one in write.writes)
    if isinstance(write, PartPut):
        return len(write.part.wire_json()) * (1 + len(write.events))
    if isinstance(write, DeltaAppend) and write.delta is not None:
        return len(write.delta.delta)
    return 0


async def _args_run(runtime: Runtime, counter: _Counter, deltas: int) -> float:
    """Bytes handed to the store per argument delta of one tool call."""
    session = (await runtime.sessions.create(SessionCreateInput())).id
    piece = "a" * 100
    async with runtime.record(session, prompt="bench") as msg:
        await msg.start_tool_call("call_1", "write")
        before = counter.bytes
        await msg.add_tool_args_delta("call_1", '{"content": "')
        for _ in range(deltas):
            await msg.add_tool_args_delta("call_1", piece)
        await msg.add_tool_args_delta("call_1", '"}')
        written = counter.bytes - before
        await msg.add_tool_call("call_1", "write", None)
        await msg.add_tool_result("call_1", "ok")
    return written / (deltas + 2)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=2000)
    parser.add_argument("--prefix-kb", type=int, nargs="*", default=[20, 20480])
    parser.add_argument("--args-deltas", type=int, nargs="*", default=[100, 1000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="partwire-recorder-") as state:
        env = {"PARTWIRE_CONFIG_DIR": f"{state}/config"}
        settings = load_settings(project_dir=Path(state), data_dir=Path(state) / "data", env=env)
        runtime = Runtime.build(settings)
        await runtime.start()
        counter = _Counter()
        counter.install()
        try:
            await _text_run(runtime, 20, 200)  # warm up: imports, first pages, caches
            print(f"recorder: CPU per 1k text deltas of {DELTA_CHARS} chars")
            print(f"{'after text KB':>14} {'deltas':>7} {'CPU ms/1k':>9}")
            for prefix in args.prefix_kb:
                alone = min([await _text_run(runtime, prefix, 0) for _ in range(args.repeat)])
                both = min(
                    [await _text_run(runtime, prefix, args.deltas) for _ in range(args.repeat)]
                )
                per_1k = max(0.0, both - alone) * 1e6 / args.deltas
                print(f"{prefix:>14,} {args.deltas:>7} {per_1k:>9.0f}")
            print("\nrecorder: bytes to the store per tool-argument delta (100 chars each)")
            print(f"{'arg deltas':>10} {'bytes/delta':>11}")
            for deltas in args.args_deltas:
                per_delta = await _args_run(runtime, counter, deltas)
                print(f"{deltas:>10,} {per_delta:>11,.0f}")
        finally:
            await runtime.stop()


if __name__ == "__main__":
    asyncio.run(main())
