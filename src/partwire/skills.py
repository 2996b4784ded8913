"""Skills: folders with a ``SKILL.md`` (front matter ``name`` and ``description``, then
instructions) that the model loads through the ``skill`` tool when a task matches.

Found, as opencode and Claude Code place them, in the project (``.partwire/skills``,
``.opencode/skill(s)``, ``.claude/skills``) and in the user's config dir (``skills``); a
project's skill wins over the user's of the same name. A SKILL.md without a name or a
description, or with front matter that does not parse, is skipped with a warning.
"""

from __future__ import annotations

import logging
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


def system_text(skills: list[Skill]) -> str:
    """What the system prompt says of the skills (empty when there are none)."""
    if not skills:
        return ""
    lines = [f"- {skill.name}: {skill.description}" for skill in skills]
    return "Skills you can load with the skill tool when a task matches one:\n" + "\n".join(lines)
