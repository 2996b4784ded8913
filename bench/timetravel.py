"""Time-travel benchmark: the server's time to fork a long session and to replay one.

    python bench/timetravel.py [--messages 2000] [--prompts 20] [--repeat 3]

A session of ``--messages`` messages is made from one real exchange of the demo model
(a prompt, a bash call with its output, an answer), repeated. Then, in process, the
session is forked whole, at a part halfway (after it) and just before its last tool call:
wall time and the process's CPU time (every thread, the SQLite writer's too), from
reading the history to the fork's commit. Then a session of ``--prompts`` such
exchanges is replayed with the demo model and recorded tools (every call answered from
the recording): the time from the replay's start to its last answer, and per prompt.
Each row is the best of ``--repeat`` runs.
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

from partwire import ids  # noqa: E402
from partwire.config import load_settings  # noqa: E402
from partwire.replays import start_replay  # noqa: E402
from partwire.runtime import Runtime  # noqa: E402
from partwire.schema.export import SessionExport  # noqa: E402
from partwire.schema.input import PromptInput, SessionCreateInput  # noqa: E402
from partwire.schema.message import AssistantMessage, MessageWithParts  # noqa: E402
from partwire.schema.part import ModelRef  # noqa: E402
from partwire.session.forking import Cut  # noqa: E402


def _repeated(
    exchange: list[MessageWithParts], messages: int, session_id: str
) -> list[MessageWithParts]:
    """``exchange`` again and again, with new ids, until ``messages`` messages."""
    history: list[MessageWithParts] = []
    while len(history) < messages:
        renamed: dict[str, str] = {}
        for entry in exchange:
            renamed[entry.info.id] = ids.message_id()
            update: dict[str, object] = {"id": renamed[entry.info.id], "session_id": session_id}
            if isinstance(entry.info, AssistantMessage):
                update["parent_id"] = renamed.get(entry.info.parent_id, entry.info.parent_id)
            info = entry.info.model_copy(update=update)
            parts = [
                p.model_copy(
                    update={"id": ids.part_id(), "message_id": info.id, "session_id": session_id}
                )
                for p in entry.parts
            ]
            history.append(MessageWithParts(info=info, parts=parts))
    return history[:messages]


async def _long_session(runtime: Runtime, messages: int) -> str:
    sessions = runtime.sessions
    first = await sessions.create(SessionCreateInput(title="exchange"))
    prompt = PromptInput.model_validate({"parts": [{"type": "text", "text": "bash echo hi"}]})
    await runtime.loop.prompt(first.id, prompt)
    exchange = await runtime.store.list_messages(first.id)
    info = first.model_copy(update={"id": ids.session_id(), "title": "long"})
    history = _repeated(exchange, messages, info.id)
    export = SessionExport(info=info, messages=history)
    return (await sessions.import_session(export)).id


async def _timed_fork(
    runtime: Runtime, session_id: str, part_id: str | None, cut: Cut | None
) -> tuple[float, float, int]:
    wall, cpu = time.perf_counter(), time.process_time()
    fork = await runtime.sessions.fork(session_id, None, part_id, cut)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    copied = len(await runtime.store.list_messages(fork.id))
    return wall * 1000, cpu * 1000, copied


async def _timed_replay(runtime: Runtime, session_id: str, prompts: int) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    demo = ModelRef(providerID="demo", modelID="demo")
    replay = await start_replay(runtime, session_id, demo, "recorded")
    while True:
        messages = await runtime.store.list_messages(replay.id)
        asked = sum(1 for m in messages if m.info.role == "user")
        answered = messages[-1].info.role == "assistant" if messages else False
        if asked == prompts and answered and not runtime.loop.is_busy(replay.id):
            break  # (a prompt stored and its run not yet started: not done)
        await asyncio.sleep(0.001)
    return (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--prompts", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="partwire-fork-") as state:
        env = {"PARTWIRE_CONFIG_DIR": f"{state}/config", "PARTWIRE_DEMO_DELAY_MS": "0"}
        settings = load_settings(project_dir=Path(state), data_dir=Path(state) / "data", env=env)
        runtime = Runtime.build(settings)
        await runtime.start()
        try:
            session_id = await _long_session(runtime, args.messages)
            history = await runtime.store.list_messages(session_id)
            halfway = history[len(history) // 2].parts[-1].id
            last_tool = [p.id for m in history for p in m.parts if p.type == "tool"][-1]
            cases: list[tuple[str, str | None, Cut | None]] = [
                ("whole", None, None),
                ("at a part halfway", halfway, "after"),
                ("before the last tool call", last_tool, "before"),
            ]
            parts = sum(len(m.parts) for m in history)
            print(f"fork: a session of {len(history):,} messages, {parts:,} parts (SQLite)")
            print(f"{'fork':<26} {'messages':>8} {'wall ms':>8} {'CPU ms':>7}")
            for name, part_id, cut in cases:
                runs = [
                    await _timed_fork(runtime, session_id, part_id, cut) for _ in range(args.repeat)
                ]
                wall, cpu, copied = min(runs)
                print(f"{name:<26} {copied:>8,} {wall:>8.0f} {cpu:>7.0f}")
            recorded = await _long_session(runtime, args.prompts * 3)
            replays = [
                await _timed_replay(runtime, recorded, args.prompts) for _ in range(args.repeat)
            ]
            wall, cpu = min(replays)
            print(f"\nreplay: {args.prompts} prompts, demo model, recorded tools")
            print(f"{'replay':<26} {'prompts':>8} {'wall ms':>8} {'CPU ms':>7} {'ms/prompt':>9}")
            each = wall / args.prompts
            print(f"{'recorded tools':<26} {args.prompts:>8} {wall:>8.0f} {cpu:>7.0f} {each:>9.1f}")
        finally:
            await runtime.stop()


if __name__ == "__main__":
    asyncio.run(main())
