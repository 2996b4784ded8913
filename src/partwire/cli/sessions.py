"""``partwire sessions``, ``parts`` and ``fork``: the project's recent sessions, one
session's parts (the points a fork or a rewind can take), and a fork at one of them."""

from __future__ import annotations

from typing import Literal

from rich.console import Console
from rich.table import Table

from partwire import clock
from partwire.cli.run import connected
from partwire.config import Settings
from partwire.schema.part import Part, ReasoningPart, TextPart, ToolPart


def ago(updated_ms: int, now_ms: int | None = None) -> str:
    """A short relative time: "just now", "5 min ago", "3 h ago", "2 d ago"."""
    seconds = max(0, ((now_ms or clock.now_ms()) - updated_ms) // 1000)
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{seconds // 60} min ago"
    if seconds < 86400:
        return f"{seconds // 3600} h ago"
    return f"{seconds // 86400} d ago"


async def list_sessions(settings: Settings, attach: str | None, limit: int) -> int:
    out = Console(highlight=False, soft_wrap=True)
    async with connected(attach, settings, Console(stderr=True)) as client:
        project = str(settings.project_dir)
        found = [
            s for s in await client.list_sessions() if s.directory == project and not s.parent_id
        ]
        found.sort(key=lambda s: s.time.updated, reverse=True)
        if not found:
            Console(stderr=True).print(f"no sessions yet in {project}")
            return 0
        table = Table(box=None, pad_edge=False)
        for column in ("id", "updated", "messages", "title"):
            table.add_column(column, no_wrap=column != "title")
        for session in found[:limit]:
            count = len(await client.messages(session.id))
            table.add_row(session.id, ago(session.time.updated), str(count), session.title)
        out.print(table)
    return 0


def part_summary(part: Part, width: int = 60) -> str:
    """One line saying what a part holds: its text's start, a tool's name and status."""
    if isinstance(part, TextPart | ReasoningPart):
        text = " ".join(part.text.split())
        return text if len(text) <= width else text[: width - 1] + "…"
    if isinstance(part, ToolPart):
        return f"{part.tool} ({part.state.status})"
    return ""


async def list_parts(settings: Settings, attach: str | None, session_id: str) -> int:
    out = Console(highlight=False, soft_wrap=True)
    async with connected(attach, settings, Console(stderr=True)) as client:
        messages = await client.messages(session_id)
        table = Table(box=None, pad_edge=False)
        for column in ("part", "role", "type", "holds"):
            table.add_column(column, no_wrap=column != "holds")
        for entry in messages:
            for part in entry.parts:
                table.add_row(part.id, entry.info.role, part.type, part_summary(part))
        out.print(table)
    return 0


async def fork_session(
    settings: Settings, attach: str | None, session_id: str, at: str | None, before: bool
) -> int:
    """Print the new session's id (alone on stdout, for scripts), say what it holds."""
    async with connected(attach, settings, Console(stderr=True)) as client:
        fork = await client.fork(session_id, part_id=at, cut="before" if before else None)
        count = len(await client.messages(fork.id))
    Console(stderr=True, highlight=False).print(
        f"[dim]forked {session_id}{f' at {at}' if at else ''}: {count} messages[/dim]"
    )
    print(fork.id)
    return 0


async def session_access(
    settings: Settings,
    attach: str | None,
    session_id: str,
    user: str | None,
    role: Literal["read", "write"] | None,
    take: bool,
) -> int:
    """Print who may use the session, after giving (or taking) ``user`` access."""
    out = Console(highlight=False, soft_wrap=True)
    async with connected(attach, settings, Console(stderr=True)) as client:
        if user is not None:
            access = await client.grant(session_id, user, None if take else role)
        else:
            access = await client.access(session_id)
    for grant in access["grants"]:
        out.print(f"{grant['user']}  {grant['role']}")
    out.print(f"share link: {'live' if access['shared'] else 'none'}")
    return 0


async def share_session(settings: Settings, attach: str | None, session_id: str, end: bool) -> int:
    """Print a new share link (alone on stdout), or end the session's links."""
    async with connected(attach, settings, Console(stderr=True)) as client:
        if end:
            await client.unshare(session_id)
            Console(stderr=True).print(f"ended the share links of {session_id}")
            return 0
        shared = await client.share(session_id)
    assert shared.share is not None
    print(shared.share.url)
    return 0
