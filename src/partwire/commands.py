"""Custom commands: named prompt templates, run by ``POST /session/{id}/command``.

Defined as markdown files — the front matter may set ``description``, ``agent``,
``model`` (``provider/model``) and ``subtask``; the body is the template — in the user's
config dir (``command/`` or ``commands/``) and the project (``.partwire/command(s)/``,
``.opencode/command(s)/``), nested folders naming ``team/review``; or in partwire.json
under ``command`` (``{"name": {"template": …, …}}``). The project's win over the user's,
and files over the config of the same name.

A template takes the arguments as ``$ARGUMENTS`` (all of them) and ``$1``, ``$2`` …
(one each, split like a shell line; the highest-numbered placeholder takes the rest).
``!`command` `` is replaced by what the command prints, run in the project after the
arguments are put in, under bash, and only as the session's permissions allow: each
line is read and asked for as the bash tool's are (``tools/shell_permission.py``): the
rules decide, or the user is asked (see ``server/routes/actions.py``).
"""

from __future__ import annotations

import asyncio
import logging
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from partwire import processes, skills
from partwire.config import Settings, user_config_dir
from partwire.errors import ConfigError
from partwire.frontmatter import split

PROJECT_DIRS = (
    ".partwire/command",
    ".partwire/commands",
    ".opencode/command",
    ".opencode/commands",
)
USER_DIRS = ("command", "commands")
PLACEHOLDER = re.compile(r"\$(ARGUMENTS|\d+)")
SHELL = re.compile(r"!`([^`\n]+)`")
SHELL_TIMEOUT_S = 60
SHELL_OUTPUT_CHARS = 30_000
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Command:
    name: str
    template: str
    description: str | None = None
    agent: str | None = None
    model: str | None = None
    subtask: bool = False
    source: str = "command"  # or "skill": a skill offered as a command, as opencode does

    @property
    def hints(self) -> list[str]:
        """The placeholders the template uses, as opencode lists them ($1 …, $ARGUMENTS)."""
        found = {f"${m.group(1)}" for m in PLACEHOLDER.finditer(self.template)}
        numbered = sorted((h for h in found if h[1:].isdigit()), key=lambda h: int(h[1:]))
        return numbered + (["$ARGUMENTS"] if "$ARGUMENTS" in found else [])

    def wire(self) -> dict[str, Any]:
        """opencode's Command (GET /command)."""
        body: dict[str, Any] = {"name": self.name, "template": self.template}
        body |= {"source": self.source, "hints": self.hints}
        for key in ("description", "agent", "model"):
            if getattr(self, key) is not None:
                body[key] = getattr(self, key)
        if self.subtask:
            body["subtask"] = True
        return body

    def expand(self, arguments: str) -> str:
        """The prompt: the template with the arguments put in."""
        try:
            words = shlex.split(arguments)
        except ValueError:  # an unclosed quote: plain words
            words = arguments.split()
        numbers = [
            int(m.group(1)) for m in PLACEHOLDER.finditer(self.template) if m.group(1)[0] != "A"
        ]
        last = max(numbers, default=0)

        def value(match: re.Match[str]) -> str:
            key = match.group(1)
            if key == "ARGUMENTS":
                return arguments
            n = int(key)
            if n == last:
                return " ".join(words[n - 1 :])
            return words[n - 1] if n <= len(words) else ""

        text = PLACEHOLDER.sub(value, self.template)
        if not PLACEHOLDER.search(self.template) and arguments.strip():
            text = f"{text}\n\n{arguments}"  # arguments to a template without a place for them
        return text


def _field(fields: dict[str, Any], key: str, source: str) -> str | None:
    value = fields.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ConfigError(f"{source}: {key} must be text")
    return value


def _from_fields(name: str, fields: dict[str, Any], template: str, source: str) -> Command:
    subtask = fields.get("subtask", False)
    if not isinstance(subtask, bool):
        raise ConfigError(f"{source}: subtask must be true or false")
    if not template.strip():
        raise ConfigError(f"{source}: the template is empty")
    return Command(
        name=name,
        template=template,
        description=_field(fields, "description", source),
        agent=_field(fields, "agent", source),
        model=_field(fields, "model", source),
        subtask=subtask,
    )


def _files(folder: Path) -> list[Command]:
    if not folder.is_dir():
        return []
    found = []
    for path in sorted(folder.rglob("*.md")):
        name = path.relative_to(folder).with_suffix("").as_posix()
        try:
            fields, body = split(path.read_text(errors="replace"), path)
            found.append(_from_fields(name, fields, body, str(path)))
        except (OSError, ConfigError) as exc:
            log.warning("command %s skipped: %s", path, exc)
    return found


def _configured(config: dict[str, Any]) -> list[Command]:
    table = config.get("command") or {}
    if not isinstance(table, dict):
        log.warning("the config's command is not an object: skipped")
        return []
    found = []
    for name, entry in table.items():
        source = f"partwire.json command.{name}"
        try:
            if not isinstance(entry, dict):
                raise ConfigError(f"{source} must be an object with a template")
            found.append(_from_fields(str(name), entry, str(entry.get("template") or ""), source))
        except ConfigError as exc:
            log.warning("command skipped: %s", exc)
    return found


async def of_project(settings: Settings) -> list[Command]:
    """The commands a project (``settings.project_dir``) offers, read from disk now: its
    own, then its skills (running one puts the skill's instructions in the prompt)."""
    user_dir = user_config_dir(settings.source_env)
    return await asyncio.to_thread(
        _with_skills, settings.project_dir, user_dir, settings.raw_config
    )


def _with_skills(project_dir: Path, user_dir: Path, config: dict[str, Any]) -> list[Command]:
    found = discover(project_dir, user_dir, config)
    names = {c.name for c in found}
    for skill in skills.discover(project_dir, user_dir):
        if skill.name not in names:
            template = f"{skill.content}\n\n$ARGUMENTS"
            found.append(Command(skill.name, template, skill.description, source="skill"))
    return sorted(found, key=lambda c: c.name)


def discover(project_dir: Path, user_config_dir: Path, config: dict[str, Any]) -> list[Command]:
    """Every command, by name."""
    by_name: dict[str, Command] = {c.name: c for c in _configured(config)}
    for folder in [user_config_dir / d for d in USER_DIRS]:
        by_name.update((c.name, c) for c in _files(folder))
    for folder in [project_dir / d for d in PROJECT_DIRS]:
        by_name.update((c.name, c) for c in _files(folder))
    return sorted(by_name.values(), key=lambda c: c.name)


def shell_commands(text: str) -> list[str]:
    """The ``!`command` `` substitutions of an expanded template, in order."""
    return [m.group(1).strip() for m in SHELL.finditer(text)]


async def run_shell(command: str, cwd: Path) -> str:
    """What ``command`` prints (stdout and stderr), trailing newlines dropped; cut short
    past ``SHELL_OUTPUT_CHARS`` or ``SHELL_TIMEOUT_S``."""
    process = await processes.start_shell(command, cwd)
    try:
        out, _ = await processes.finish(process, limit_s=SHELL_TIMEOUT_S, group=True)
        note = ""
    except TimeoutError:
        out, _ = await process.communicate()  # what it printed before it was stopped
        note = f"\n(stopped after {SHELL_TIMEOUT_S} s)"
    text = out.decode(errors="replace").rstrip("\n")
    if len(text) > SHELL_OUTPUT_CHARS:
        text = text[:SHELL_OUTPUT_CHARS] + "\n(output cut short)"
    return text + note


def fill_shell(text: str, outputs: list[str]) -> str:
    """The template with each ``!`command` `` replaced by its output, in order."""
    found = iter(outputs)
    return SHELL.sub(lambda _: next(found), text)
