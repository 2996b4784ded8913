"""Work-tree snapshots in a git repository, kept apart from the user's own git state.

Snapshots live in a separate git directory under the data dir (its own objects
and index), with the project as work tree: ``git add -A`` + ``write-tree``
records the tree without touching the project's ``.git``. A step records a
snapshot at its start and end; the files that changed in between become a
patch part, and revert restores them from the snapshot before the change.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from partwire import processes

log = logging.getLogger(__name__)


class SnapshotError(Exception):
    pass


@dataclass
class Snapshots:
    project_dir: Path
    data_dir: Path
    _enabled: bool | None = None
    _lock: asyncio.Lock | None = None

    @property
    def git_dir(self) -> Path:
        key = hashlib.sha1(str(self.project_dir.resolve()).encode()).hexdigest()[:16]
        return self.data_dir / "snapshot" / key

    async def _git(self, *args: str, check: bool = True) -> str:
        process = await processes.start(
            "git", f"--git-dir={self.git_dir}", f"--work-tree={self.project_dir}", *args,
            cwd=self.project_dir,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await processes.finish(process)
        if check and process.returncode != 0:
            raise SnapshotError(f"git {args[0]} failed: {err.decode(errors='replace').strip()}")
        return out.decode(errors="replace")

    async def enabled(self) -> bool:
        """True in a git repository (the project or one of its parents) when git is installed."""
        if self._enabled is None:
            self._enabled = await self._detect()
        return self._enabled

    async def _detect(self) -> bool:
        try:
            process = await processes.start(
                "git", "rev-parse", "--is-inside-work-tree",
                cwd=self.project_dir,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL,
            )  # fmt: skip
        except FileNotFoundError:
            return False
        out, _ = await processes.finish(process)
        return process.returncode == 0 and out.strip() == b"true"

    async def _init(self) -> None:
        if (self.git_dir / "HEAD").exists():
            return
        self.git_dir.mkdir(parents=True, exist_ok=True)
        await self._git("init", "--quiet")
        for key, value in (("core.autocrlf", "false"), ("core.quotepath", "false")):
            await self._git("config", key, value)

    def _serial(self) -> asyncio.Lock:
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    async def track(self) -> str | None:
        """Record the work tree; returns the tree hash (None outside a git repository)."""
        if not await self.enabled():
            return None
        async with self._serial():
            try:
                await self._init()
                await self._git("add", "--all", "--", ".")
                return (await self._git("write-tree")).strip()
            except SnapshotError as exc:
                log.warning("snapshot skipped: %s", exc)
                return None

    async def changed_files(self, since: str) -> list[str]:
        """Project-relative paths that differ between the snapshot ``since`` and now."""
        if not await self.enabled():
            return []
        async with self._serial():
            await self._git("add", "--all", "--", ".")
            out = await self._git(
                "diff", "--cached", "--name-only", "--no-renames", since, "--", "."
            )
        return [line for line in out.splitlines() if line]

    async def diff(self, since: str) -> list[dict[str, Any]]:
        """SnapshotFileDiff-shaped entries from ``since`` to the current work tree."""
        async with self._serial():
            await self._git("add", "--all", "--", ".")
            numstat = await self._git(
                "diff", "--cached", "--numstat", "--no-renames", since, "--", "."
            )
            status = await self._git(
                "diff", "--cached", "--name-status", "--no-renames", since, "--", "."
            )
            diffs: list[dict[str, Any]] = []
            kinds = dict(
                (line.split("\t", 1)[1], line[0]) for line in status.splitlines() if "\t" in line
            )
            for line in numstat.splitlines():
                added, deleted, name = line.split("\t", 2)
                patch = await self._git("diff", "--cached", "--no-renames", since, "--", name)
                diffs.append(
                    {
                        "file": name,
                        "patch": patch,
                        "additions": int(added) if added.isdigit() else 0,
                        "deletions": int(deleted) if deleted.isdigit() else 0,
                        "status": {"A": "added", "D": "deleted"}.get(
                            kinds.get(name, "M"), "modified"
                        ),
                    }
                )
        return diffs

    async def restore_files(self, snapshot: str, files: list[str]) -> None:
        """Put each file back as it was in ``snapshot`` (deleting it if it did not exist).

        Only files inside the project are touched, and never through a symlink: a name
        with ``..``, an absolute one, or one whose folders include a link is skipped, and
        a file is deleted only when the snapshot's own index lists it (git never lists a
        path beyond a symbolic link)."""
        async with self._serial():
            await self._git("add", "--all", "--", ".")  # the index lists the work tree now
            for name in files:
                if not await asyncio.to_thread(within_project, self.project_dir, name):
                    log.warning("revert skipped %s: not a path inside the project", name)
                    continue
                present = await self._git("ls-tree", "--name-only", snapshot, "--", name)
                if present.strip():
                    await self._git("checkout", snapshot, "--", name)
                    continue
                listed = await self._git("ls-files", "--", name, check=False)
                if listed.splitlines() == [name]:
                    (self.project_dir / name).unlink(missing_ok=True)


def within_project(project_dir: Path, name: str) -> bool:
    """Whether ``name`` (relative to the project) is inside it with no symlink on the way:
    every folder on its path is a real folder of the project (the file itself may be a
    link: deleting one removes the link, not what it points to)."""
    path = PurePosixPath(name)
    if not name or path.is_absolute() or any(step in ("..", ".", "") for step in path.parts):
        return False
    folder = project_dir.resolve()
    for step in path.parts[:-1]:
        folder = folder / step
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            return False
    return True
