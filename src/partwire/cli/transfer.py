"""``partwire export`` and ``partwire import``: a whole session to a file and back."""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError
from rich.console import Console

from partwire.cli.run import connected
from partwire.config import Settings
from partwire.errors import BadRequestError
from partwire.schema.export import SessionExport
from partwire.schema.message import AssistantMessage
from partwire.schema.part import FilePart, Part, ReasoningPart, TextPart, ToolPart
from partwire.schema.tool_state import ToolStateCompleted, ToolStateError


def _stamp(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _fence(text: str, lang: str = "") -> str:
    ticks = "```"
    while ticks in text:  # a fence longer than any run of backticks inside
        ticks += "`"
    return f"{ticks}{lang}\n{text.rstrip()}\n{ticks}"


def _tool_markdown(part: ToolPart) -> str:
    state = part.state
    title = getattr(state, "title", None) or ""
    lines = [f"**Tool: {part.tool}** ({state.status}){' — ' + title if title else ''}"]
    if state.input:
        lines.append(_fence(json.dumps(state.input, indent=2, ensure_ascii=False), "json"))
    if isinstance(state, ToolStateCompleted) and state.output.strip():
        lines.append(_fence(state.output))
    if isinstance(state, ToolStateError):
        lines.append(f"> error: {state.error}")
    return "\n\n".join(lines)


def _part_markdown(part: Part) -> str | None:
    if isinstance(part, TextPart) and not part.synthetic and part.text.strip():
        return part.text.strip()
    if isinstance(part, ReasoningPart) and part.text.strip():
        return "\n".join(f"> {line}" for line in ("_Thinking_", "", *part.text.splitlines()))
    if isinstance(part, ToolPart):
        return _tool_markdown(part)
    if isinstance(part, FilePart):
        return f"📎 {part.filename or part.url} ({part.mime})"
    return None


def markdown_of(export: SessionExport) -> str:
    """The session as a readable document: who said what, tools with input and output."""
    info = export.info
    blocks = [
        f"# {info.title}\n\n"
        f"- session: `{info.id}`\n- directory: `{info.directory}`\n"
        f"- created: {_stamp(info.time.created)}\n- updated: {_stamp(info.time.updated)}",
    ]
    for entry in export.messages:
        message = entry.info
        if isinstance(message, AssistantMessage):
            heading = f"## Assistant ({message.provider_id}/{message.model_id})"
        else:
            heading = "## User"
        body = [text for part in entry.parts if (text := _part_markdown(part)) is not None]
        blocks.append("\n\n".join([heading, *body]))
    return "\n\n---\n\n".join(blocks) + "\n"


def read_export(path: str) -> SessionExport:
    """An export file (``-`` is standard input), checked before anything is sent."""
    name = "standard input" if path == "-" else path
    try:
        raw = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BadRequestError(f"cannot read {name}: {exc}") from None
    try:
        return SessionExport.model_validate_json(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the file"
        raise BadRequestError(
            f"{name} is not a partwire export: {where}: {first['msg']}"
            " (write one with `partwire export ID`)"
        ) from None


async def export_session(
    settings: Settings, attach: str | None, session_id: str, fmt: str, output: Path | None
) -> int:
    async with connected(attach, settings, Console(stderr=True)) as client:
        export = await client.export(session_id)
    text = (
        markdown_of(export)
        if fmt == "markdown"
        else export.model_dump_json(by_alias=True, exclude_none=True, indent=2) + "\n"
    )
    if output is None:
        sys.stdout.write(text)
    else:
        try:
            await asyncio.to_thread(output.write_text, text, encoding="utf-8")
        except OSError as exc:
            raise BadRequestError(f"cannot write {output}: {exc.strerror}") from None
        Console(stderr=True, highlight=False).print(f"wrote {session_id} to {output}")
    return 0


async def import_session(settings: Settings, attach: str | None, export: SessionExport) -> int:
    err = Console(stderr=True, highlight=False)
    async with connected(attach, settings, err) as client:
        session = await client.import_session(export)
    copy = " as a copy (its ids were already here)" if session.id != export.info.id else ""
    err.print(f"imported {len(export.messages)} messages{copy}")
    print(session.id)
    return 0
