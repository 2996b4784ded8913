"""grep: search file contents by regular expression (ripgrep when installed)."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from pydantic import BaseModel, Field

from partwire import processes
from partwire.errors import ToolError
from partwire.tools.base import Tool, ToolContext, ToolResult
from partwire.tools.paths import relative, resolve_path
from partwire.tools.textsearch import Deadline, PatternError, compile_pattern, finditer, text_files

LIMIT = 100
MAX_LINE = 2000

Match = tuple[Path, int, str]


class GrepParams(BaseModel):
    pattern: str = Field(description="Regular expression to search for")
    path: str | None = Field(default=None, description="Directory to search (default: project)")
    include: str | None = Field(default=None, description='File glob to search, e.g. "*.py"')


RIPGREP_SECONDS = 60.0


async def _ripgrep(rg: str, pattern: str, root: Path, include: str | None) -> list[Match]:
    command = [rg, "--line-number", "--with-filename", "--no-heading", "--color", "never"]
    if include:
        command += ["--glob", include]
    process = await processes.start(
        *command, "--regexp", pattern, str(root),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:  # ripgrep's engine is linear-time, but a huge tree still gets a time limit
        out, err = await processes.finish(process, limit_s=RIPGREP_SECONDS)
    except TimeoutError:
        raise ToolError(f"grep took longer than {RIPGREP_SECONDS:g} s; narrow the path") from None
    if process.returncode not in (0, 1):
        raise ToolError(f"grep failed: {err.decode(errors='replace').strip()}")
    found: list[Match] = []
    for line in out.decode(errors="replace").splitlines():
        file, _, rest = line.partition(":")
        number, _, text = rest.partition(":")
        if number.isdigit():
            found.append((Path(file), int(number), text))
    return found


def _python(pattern: str, root: Path, include: str | None) -> list[Match]:
    try:
        compiled = compile_pattern(pattern)
        deadline = Deadline()
        found: list[Match] = []
        for path in text_files(root, include or "*"):
            data = path.read_bytes()
            if b"\0" in data[:8192]:
                continue
            for number, text in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
                if next(finditer(compiled, text, deadline), None) is not None:
                    found.append((path, number, text))
        return found
    except PatternError as exc:
        raise ToolError(f"grep {pattern!r}: {exc}") from None


def _render(matches: list[Match], ctx: ToolContext) -> str:
    if not matches:
        return "No files found"
    by_mtime = sorted({m[0] for m in matches}, key=lambda p: p.stat().st_mtime, reverse=True)
    shown = 0
    lines = [f"Found {len(matches)} matches"]
    for path in by_mtime:
        if shown >= LIMIT:
            break
        lines.append(f"{relative(ctx.project_dir, path)}:")
        for _, number, text in (m for m in matches if m[0] == path):
            if shown >= LIMIT:
                break
            lines.append(f"  Line {number}: {text[:MAX_LINE]}")
            shown += 1
    if len(matches) > LIMIT:
        lines.append(f"\n(Showing {LIMIT} of {len(matches)} matches; narrow the pattern or path.)")
    return "\n".join(lines)


async def execute(args: GrepParams, ctx: ToolContext) -> ToolResult:
    root = await resolve_path(ctx, args.path or ".", directory=True)
    await ctx.ask("grep", [args.pattern], metadata={"path": str(root), "include": args.include})
    if not root.exists():
        raise ToolError(f"{args.path} does not exist in the project.")
    rg = shutil.which("rg")
    if rg is not None:
        matches = await _ripgrep(rg, args.pattern, root, args.include)
    else:
        matches = await asyncio.to_thread(_python, args.pattern, root, args.include)
    return ToolResult(
        title=args.pattern,
        output=await asyncio.to_thread(_render, matches, ctx),  # a stat per file
        metadata={"matches": len(matches), "truncated": len(matches) > LIMIT},
    )


TOOL = Tool(
    id="grep",
    description=(
        "Search file contents in the project with a regular expression; "
        "include filters files by glob (e.g. *.py). Results are grouped by file, newest first."
    ),
    parameters=GrepParams,
    execute=execute,
)
