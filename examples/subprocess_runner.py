"""An agent runner in another process, streamed into a running partwire server.

    partwire serve &                       # or any server URL
    python examples/subprocess_runner.py http://127.0.0.1:4096

The runner (here a small inline script; in practice your agent, any language) prints one
JSON event per line: partwire's ingest vocabulary. Each line is sent on as it is printed,
so the web UI shows the message while the runner works. `partwire ingest --from partwire
-- COMMAND` does the same from the shell; --from claude-code, openai-chat, … convert
other runtimes' output.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from typing import Any

from partwire import PartwireClient

RUNNER = r"""
import json, time
def emit(**event): print(json.dumps(event), flush=True); time.sleep(0.05)
emit(type="step-start")
for word in "Let me check the files.".split(" "):
    emit(type="text-delta", delta=word + " ")
emit(type="tool-call", callID="call_1", tool="bash", input={"command": "ls"})
emit(type="tool-result", callID="call_1", output="README.md\nsrc", title="ls")
emit(type="text-delta", delta="There are two entries.")
emit(type="step-finish", tokens={"input": 120, "output": 24}, cost=0.0004)
"""


async def runner_events(process: asyncio.subprocess.Process) -> AsyncIterator[dict[str, Any]]:
    yield {"type": "start", "prompt": "What is in this project?"}
    assert process.stdout is not None
    while line := await process.stdout.readline():
        yield json.loads(line)


async def main(url: str) -> None:
    async with PartwireClient(url) as client:
        session = await client.create_session("Subprocess runner")
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-c", RUNNER, stdout=asyncio.subprocess.PIPE
        )
        answer = await client.ingest(session.id, runner_events(process))
        await process.wait()
        print(f"{session.id}: {[part.type for part in answer.parts]}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:4096"))
