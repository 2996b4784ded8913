"""The project's files, listed once for a burst of lookups: what ``@`` completes in the
web UI and ``GET /find/file`` searches.

The listing is ripgrep's (``rg --files``: it skips what ``.gitignore`` and ``.ignore``
say, and never walks a symlinked folder), else git's (``git ls-files``, tracked and
untracked but not ignored), else a walk; the usual build and dependency folders
(``IGNORED_DIRS``) are left out either way, and so is a link that leads out of the
project. A listing is reused for ``INDEX_TTL_S``, so typing ``@READ`` costs one walk of
the tree, not one a keystroke.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from pathlib import Path, PurePosixPath

from partwire.tools.paths import IGNORED_DIRS, is_ignored
from partwire.tools.textsearch import contained

INDEX_TTL_S = 1.0
LIST_TIMEOUT_S = 20.0
_KEPT = 64  # projects whose listing is kept

_lock = threading.Lock()
_listings: dict[Path, tuple[float, tuple[str, ...]]] = {}


def project_files(project: Path) -> tuple[str, ...]:
    """The project's files (relative POSIX names, sorted); call from a worker thread."""
    root = project.resolve()
    now = time.monotonic()
    with _lock:
        kept = _listings.get(root)
    if kept is not None and now - kept[0] < INDEX_TTL_S:
        return kept[1]
    files = _listed(root)
    with _lock:
        _listings.pop(root, None)
        _listings[root] = (now, files)
        while len(_listings) > _KEPT:
            del _listings[next(iter(_listings))]
    return files


def project_dirs(files: tuple[str, ...]) -> list[str]:
    """The folders that hold ``files``."""
    found: set[str] = set()
    for name in files:
        found.update(str(parent) for parent in PurePosixPath(name).parents if str(parent) != ".")
    return sorted(found)


def _listed(root: Path) -> tuple[str, ...]:
    names = _ripgrep(root)
    if names is None:
        names = _git(root)
    if names is None:
        names = _walk(root)
    return tuple(sorted(name for name in names if _kept(root, name)))


def _kept(root: Path, name: str) -> bool:
    if not name or is_ignored(PurePosixPath(name)):
        return False
    path = root / name
    return not os.path.islink(path) or contained(root, path)


def _run(command: list[str], root: Path) -> list[str] | None:
    try:
        done = subprocess.run(
            command, cwd=root, capture_output=True, timeout=LIST_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode not in (0, 1):  # 1: rg found no file at all
        return None
    return [n for n in done.stdout.decode(errors="replace").split("\0") if n]


def _ripgrep(root: Path) -> list[str] | None:
    rg = shutil.which("rg")
    if rg is None:
        return None
    command = [rg, "--files", "--hidden", "--no-require-git", "--null", "--no-messages"]
    return _run([*command, "--glob", "!.git"], root)


def _git(root: Path) -> list[str] | None:
    git = shutil.which("git")
    if git is None:
        return None
    return _run([git, "ls-files", "-z", "--cached", "--others", "--exclude-standard"], root)


def _walk(root: Path) -> list[str]:
    names: list[str] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in IGNORED_DIRS]
        base = Path(folder).relative_to(root)
        names.extend((base / name).as_posix() for name in files)
    return names
