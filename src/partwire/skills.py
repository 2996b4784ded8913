"""Skills: folders with a ``SKILL.md`` (front matter ``name`` and ``description``, then
instructions) that the model loads through the ``skill`` tool when a task matches.

Found, as opencode and Claude Code place them, in the project (``.partwire/skills``,
``.opencode/skill(s)``, ``.claude/skills``) and in the user's config dir (``skills``); a
project's skill wins over the user's of the same name. A SKILL.md without a name or a
description, or with front matter that does not parse, is skipped with a warning.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from pathlib import Path

from partwire.errors import ConfigError
from partwire.frontmatter import split

PROJECT_DIRS = (
    ".partwire/skills",
    ".partwire/skill",
    ".opencode/skills",
    ".opencode/skill",
    ".claude/skills",
)
USER_DIRS = ("skills", "skill")
# Every step of every session lists the skills; they are read from disk at most this often
# (a project's), so a SKILL.md added or edited is seen within it, and a busy server does
# not walk seven folders on a thread for each step.
FRESH_S = 1.0
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    location: Path  # the SKILL.md
    content: str

    def wire(self) -> dict[str, str]:
        """opencode's shape (GET /skill)."""
        return {
            "name": self.name,
            "description": self.description,
            "location": str(self.location),
            "content": self.content,
        }


def _load(path: Path) -> Skill | None:
    try:
        fields, body = split(path.read_text(errors="replace"), path)
    except (OSError, ConfigError) as exc:
        log.warning("skill %s skipped: %s", path, exc)
        return None
    name, description = fields.get("name"), fields.get("description")
    if not isinstance(name, str) or not name.strip():
        name = path.parent.name
    if not isinstance(description, str) or not description.strip():
        log.warning("skill %s skipped: its front matter has no description", path)
        return None
    return Skill(name.strip(), description.strip(), path, body)


def _in(folder: Path) -> list[Skill]:
    if not folder.is_dir():
        return []
    found = (_load(path) for path in sorted(folder.glob("*/SKILL.md")))
    return [skill for skill in found if skill is not None]


def discover(project_dir: Path, user_config_dir: Path) -> list[Skill]:
    """Every skill the project may use, by name (the project's over the user's)."""
    by_name: dict[str, Skill] = {}
    for folder in [user_config_dir / d for d in USER_DIRS]:
        by_name.update((s.name, s) for s in _in(folder))
    for folder in [project_dir / d for d in PROJECT_DIRS]:
        by_name.update((s.name, s) for s in _in(folder))
    return sorted(by_name.values(), key=lambda s: s.name)


class Shelf:
    """The skills as last read from disk, read again once older than ``fresh_s``; the
    steps asking while a read runs share it."""

    def __init__(self, fresh_s: float = FRESH_S) -> None:
        self.fresh_s = fresh_s
        self._read: tuple[tuple[Path, Path], float, list[Skill]] | None = None
        self._reading: dict[tuple[Path, Path], asyncio.Task[list[Skill]]] = {}

    async def skills(self, project_dir: Path, user_config_dir: Path) -> list[Skill]:
        where = (project_dir, user_config_dir)
        if self._read is not None:
            read_where, read_at, skills = self._read
            if read_where == where and time.monotonic() - read_at < self.fresh_s:
                return list(skills)
        reading = self._reading.get(where)
        if reading is None:
            reading = asyncio.ensure_future(self._read_disk(where))
            self._reading[where] = reading
        return list(await asyncio.shield(reading))

    async def _read_disk(self, where: tuple[Path, Path]) -> list[Skill]:
        try:
            skills = await asyncio.to_thread(discover, *where)
        finally:
            del self._reading[where]
        self._read = (where, time.monotonic(), skills)
        return skills


def system_text(skills: list[Skill]) -> str:
    """What the system prompt says of the skills (empty when there are none)."""
    if not skills:
        return ""
    lines = [f"- {skill.name}: {skill.description}" for skill in skills]
    return "Skills you can load with the skill tool when a task matches one:\n" + "\n".join(lines)
