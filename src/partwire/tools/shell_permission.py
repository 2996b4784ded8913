"""The permission asks a shell line needs before it runs: one ``bash`` subject for each
simple command it holds, and each file its redirections write: ``edit`` inside the
project, ``external_directory`` outside it. The bash tool and command templates
(``!`…` ``) both ask through here, so one line gets the same asks wherever it comes from.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from partwire.tools.base import Asker
from partwire.tools.paths import inside
from partwire.tools.shell_words import analyze, prefix_pattern


async def ask_for_line(
    ask: Asker,
    line: str,
    *,
    cwd: Path,
    project_dir: Path,
    metadata: dict[str, Any] | None = None,
) -> None:
    """Return once every command and write of ``line`` is allowed; raise otherwise."""
    shell = analyze(line)
    details = dict(metadata or {})
    if shell.opaque:
        details["reason"] = f"asked every time: {shell.opaque}"
    await ask(
        "bash",
        shell.commands,
        always=sorted({prefix_pattern(c) for c in shell.commands if c.split()}),
        metadata=details,
        must_ask=shell.opaque is not None,
    )
    targets = await asyncio.to_thread(_where, shell.writes, cwd, project_dir)
    for path, name in targets:
        await _ask_for_write(ask, path, name)


def _where(writes: list[str], cwd: Path, project_dir: Path) -> list[tuple[Path, str | None]]:
    """Each written file's real path (symlinks followed), and its name in the project
    (None outside it)."""
    root = project_dir.resolve()
    found: list[tuple[Path, str | None]] = []
    for target in writes:
        path = (cwd / target).resolve()
        found.append((path, path.relative_to(root).as_posix() if inside(root, path) else None))
    return found


async def _ask_for_write(ask: Asker, path: Path, name: str | None) -> None:
    if name is not None:
        await ask("edit", [name], metadata={"filepath": str(path), "redirect": True})
        return
    folder = path.parent
    await ask(
        "external_directory",
        [f"{folder}/*"],
        always=[f"{folder}/*"],
        metadata={"filepath": str(path), "parentDir": str(folder)},
    )
