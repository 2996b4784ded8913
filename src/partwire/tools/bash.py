"""bash: run a command in the project directory, streaming its output into the part.

The command runs in its own process group, so a timeout or an abort kills it
and every child it started.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from pydantic import BaseModel, Field

from partwire import processes
from partwire.errors import ToolError
from partwire.tools.base import Tool, ToolContext, ToolResult
from partwire.tools.paths import resolve_path
from partwire.tools.shell_permission import ask_for_line

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
METADATA_EVERY_S = 0.1
METADATA_TAIL = 30_000


class BashParams(BaseModel):
    command: str = Field(min_length=1, description="The command to run")
    timeout: int | None = Field(
        default=None,
        ge=1,
        le=MAX_TIMEOUT_MS,
        description="Timeout in milliseconds (default 120000)",
    )
    workdir: str | None = Field(
        default=None, description="Directory to run in (default: the project directory)"
    )
    description: str = Field(description="What the command does, in 5-10 words")


async def _pump(
    process: asyncio.subprocess.Process, ctx: ToolContext, description: str, chunks: list[str]
) -> None:
    assert process.stdout is not None
    last_update = 0.0
    while data := await process.stdout.read(4096):
        chunks.append(data.decode(errors="replace"))
        now = time.monotonic()
        if now - last_update >= METADATA_EVERY_S:
            last_update = now
            tail = "".join(chunks)[-METADATA_TAIL:]
            await ctx.metadata(output=tail, description=description)
    await process.wait()


async def execute(args: BashParams, ctx: ToolContext) -> ToolResult:
    cwd = await resolve_path(ctx, args.workdir, directory=True) if args.workdir else ctx.project_dir
    metadata: dict[str, Any] = {"description": args.description, "command": args.command}
    await ask_for_line(
        ctx.ask, args.command, cwd=cwd, project_dir=ctx.project_dir, metadata=metadata
    )
    if not cwd.is_dir():
        raise ToolError(f"workdir {args.workdir} is not a directory.")
    process = await processes.start_shell(args.command, cwd)
    chunks: list[str] = []
    timeout_ms = args.timeout or DEFAULT_TIMEOUT_MS
    timed_out = False
    try:
        await asyncio.wait_for(_pump(process, ctx, args.description, chunks), timeout_ms / 1000)
    except TimeoutError:
        timed_out = True
    finally:
        if process.returncode is None:
            await processes.stop(process, group=True)
    output = "".join(chunks)
    notes = []
    if timed_out:
        notes.append(f"The command timed out after {timeout_ms} ms and was killed.")
    if process.returncode not in (0, None) and not timed_out:
        notes.append(f"Exit code {process.returncode}.")
    body = output + ("\n\n" + " ".join(notes) if notes else "")
    return ToolResult(
        title=args.description or args.command,
        output=body or "(no output)",
        metadata={
            "output": output[-METADATA_TAIL:],
            "exit": process.returncode,
            "description": args.description,
            "timedOut": timed_out,
        },
    )


TOOL = Tool(
    id="bash",
    description=(
        "Run a bash command in the project directory. Output (stdout and stderr) streams "
        "as it runs; the default timeout is 2 minutes (timeout in ms, at most 10 minutes)."
    ),
    parameters=BashParams,
    execute=execute,
)
