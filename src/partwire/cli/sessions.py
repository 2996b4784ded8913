"""``partwire sessions``: the project's recent sessions, newest first."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from partwire import clock
from partwire.cli.run import connected
from partwire.config import Settings


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
