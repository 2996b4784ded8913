"""Read-only views of the project for the file, find, vcs and project routes.

Blocking (file system, git) by design: callers run these in a worker thread.
"""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

from partwire.errors import BadRequestError, NamedError, NotFoundError
from partwire.file_index import project_dirs, project_files
from partwire.tools.paths import IGNORED_DIRS
from partwire.tools.textsearch import (
    Deadline,
    PatternError,
    compile_pattern,
    finditer,
    text_files,
)

if TYPE_CHECKING:
    import regex

MAX_FILE_BYTES = 5 * 1024 * 1024
FIND_LIMIT = 200


def inside(project: Path, relative: str) -> Path:
    """``relative`` resolved inside the project; anything else is a 400."""
    root = project.resolve()
    try:
        target = (root / relative).resolve()
    except (ValueError, OSError) as exc:  # e.g. an embedded NUL byte
        raise BadRequestError(f"path: {exc}", field="path", kind="Query") from None
    if not target.is_relative_to(root):
        raise BadRequestError(f"{relative} is outside the project", field="path", kind="Query")
    return target


def git(project: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args], cwd=project, capture_output=True, text=True, timeout=10, check=False
        )
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def worktree(project: Path) -> Path:
    top = git(project, "rev-parse", "--show-toplevel")
    return Path(top.strip()) if top else project


def list_dir(project: Path, relative: str) -> list[dict[str, Any]]:
    folder = inside(project, relative or ".")
    if not _is_dir(folder):
        raise NotFoundError("Directory", relative)
    root = project.resolve()
    nodes = []
    for entry in sorted(folder.iterdir(), key=lambda p: (not p.is_dir(), p.name)):
        nodes.append(
            {
                "name": entry.name,
                "path": entry.relative_to(root).as_posix(),
                "absolute": str(entry),
                "type": "directory" if entry.is_dir() else "file",
                "ignored": entry.name in IGNORED_DIRS,
            }
        )
    return nodes


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:  # e.g. a name too long for the file system
        return False


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:
        return False


def read_file(project: Path, relative: str) -> dict[str, Any]:
    path = inside(project, relative)
    if not _is_file(path):
        raise NotFoundError("File", relative)
    data = path.read_bytes()[:MAX_FILE_BYTES]
    if b"\0" in data[:8192]:
        return {"type": "binary", "content": base64.b64encode(data).decode()}
    return {"type": "text", "content": data.decode("utf-8", errors="replace")}


def _numstat(project: Path, base: str) -> list[dict[str, Any]] | None:
    """Tracked files changed against ``base`` with line counts (None outside git)."""
    numstat = git(project, "diff", "--numstat", base, "--", ".")
    if numstat is None:
        return None
    changed = []
    for line in numstat.splitlines():
        added, removed, name = line.split("\t", 2)
        exists = (project / name).exists()
        changed.append(
            {
                "path": name,
                "added": int(added) if added.isdigit() else 0,
                "removed": int(removed) if removed.isdigit() else 0,
                "status": "modified" if exists else "deleted",
            }
        )
    return changed


def status(project: Path) -> list[dict[str, Any]]:
    """Files changed against HEAD, with line counts (empty outside git)."""
    changed = _numstat(project, "HEAD")
    if changed is None:
        return []
    untracked = git(project, "ls-files", "--others", "--exclude-standard") or ""
    for name in untracked.splitlines():
        lines = len((project / name).read_bytes().splitlines()) if (project / name).is_file() else 0
        changed.append({"path": name, "added": lines, "removed": 0, "status": "added"})
    return changed


def fuzzy_window(query: str, name: str) -> int | None:
    """The length of a short window of ``name`` holding ``query``'s characters in order,
    or None. Linear in the name's length: no regex, so no pattern can be slow."""
    end = 0
    for char in query:
        found = name.find(char, end)
        if found < 0:
            return None
        end = found + 1
    start = end
    for char in reversed(query):  # walk back from the end for the tightest start
        start = name.rfind(char, 0, start)
    return end - start


def find_files(project: Path, query: str, *, dirs: bool, limit: int) -> list[str]:
    """Paths whose name contains the query's characters in order (fuzzy), best first:
    the project's files (``file_index``: what .gitignore leaves), and with ``dirs``
    their folders."""
    files = project_files(project)
    names = [*project_dirs(files), *files] if dirs else files
    wanted = query.lower()
    scored = []
    for name in names:
        window = fuzzy_window(wanted, name.lower())
        if window is not None:
            scored.append((window, len(name), name))
    return [name for _, _, name in sorted(scored)[:limit]]


def find_text(project: Path, pattern: str) -> list[dict[str, Any]]:
    """Lines matching ``pattern`` (time-limited, see tools/textsearch); call from a worker."""
    try:
        compiled = compile_pattern(pattern)
        return _find_text(project, compiled, Deadline())
    except PatternError as exc:
        raise BadRequestError(f"pattern: {exc}", field="pattern", kind="Query") from None


def _find_text(
    project: Path, compiled: regex.Pattern[str], deadline: Deadline
) -> list[dict[str, Any]]:
    root = project.resolve()
    matches: list[dict[str, Any]] = []
    for path in text_files(root):
        if len(matches) >= FIND_LIMIT:
            break
        data = path.read_bytes()
        if b"\0" in data[:8192]:
            continue
        offset = 0
        for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(True), 1):
            found = list(finditer(compiled, line, deadline))
            if found:
                matches.append(
                    {
                        "path": {"text": path.relative_to(root).as_posix()},
                        "lines": {"text": line},
                        "line_number": number,
                        "absolute_offset": offset,
                        "submatches": [
                            {"match": {"text": m.group(0)}, "start": m.start(), "end": m.end()}
                            for m in found
                        ],
                    }
                )
            offset += len(line.encode())
    return matches[:FIND_LIMIT]


def branch(project: Path) -> dict[str, str]:
    name = git(project, "rev-parse", "--abbrev-ref", "HEAD")
    return {"branch": name.strip()} if name else {}


def vcs_status(project: Path) -> list[dict[str, Any]]:
    """``status`` in opencode's VcsFileStatus shape."""
    return [
        {
            "file": c["path"],
            "additions": c["added"],
            "deletions": c["removed"],
            "status": c["status"],
        }
        for c in status(project)
    ]


def _diff_base(project: Path, mode: str) -> str:
    """``git``: HEAD. ``branch``: where this branch left the default branch (the remote's
    HEAD, else main or master), so the diff is everything the branch changed."""
    if mode == "git":
        return "HEAD"
    remote = git(project, "symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD")
    for candidate in [remote.strip()] if remote else ["main", "master"]:
        base = git(project, "merge-base", "HEAD", candidate)
        if base:
            return base.strip()
    return "HEAD"


def _patches(text: str) -> dict[str, str]:
    """A unified diff cut into one patch per file (keyed by the new path)."""
    patches: dict[str, str] = {}
    current: list[str] = []
    name = ""
    for line in text.splitlines(keepends=True):
        if line.startswith("diff --git "):
            if current:
                patches[name] = "".join(current)
            current, name = [], line.rstrip("\n").rsplit(" b/", 1)[-1]
        current.append(line)
    if current:
        patches[name] = "".join(current)
    return patches


def vcs_diff(project: Path, mode: str, context: int | None) -> list[dict[str, Any]]:
    """Each changed file with its patch (opencode's VcsFileDiff), against ``_diff_base``;
    untracked files count as added. Empty outside git."""
    base = _diff_base(project, mode)
    lines = [f"--unified={context}"] if context is not None else []
    text = git(project, "diff", *lines, base, "--", ".")
    if text is None:
        return []
    patches = _patches(text)
    changed = []
    for entry in status(project) if mode == "git" else _branch_status(project, base):
        patch = patches.get(entry["path"])
        if patch is None and entry["status"] == "added":
            patch = _added_patch(project, entry["path"])
        changed.append(
            {
                "file": entry["path"],
                "patch": patch or "",
                "additions": entry["added"],
                "deletions": entry["removed"],
                "status": entry["status"],
            }
        )
    return changed


def _branch_status(project: Path, base: str) -> list[dict[str, Any]]:
    entries = _numstat(project, base) or []
    tracked = {e["path"] for e in entries}
    return entries + [
        e for e in status(project) if e["status"] == "added" and e["path"] not in tracked
    ]


def _added_patch(project: Path, name: str) -> str:
    """An untracked file as a patch that adds it."""
    path = project / name
    if not path.is_file():
        return ""
    lines = path.read_text(errors="replace").splitlines()
    body = "".join(f"+{line}\n" for line in lines)
    return f"--- /dev/null\n+++ b/{name}\n@@ -0,0 +1,{len(lines)} @@\n{body}"


def apply_patch(project: Path, patch: str) -> None:
    """Apply a unified diff to the working tree, all of it or nothing (VcsApplyError)."""
    if git(project, "rev-parse", "--is-inside-work-tree") is None:
        raise NamedError("VcsApplyError", f"{project} is not a git work tree", reason="non-git")
    top = worktree(project)
    for check in (["--check"], []):
        try:
            done = subprocess.run(
                ["git", "apply", "--whitespace=nowarn", *check, "-"], cwd=top, input=patch,
                capture_output=True, text=True, timeout=60, check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            raise NamedError(
                "VcsApplyError", "git apply took too long", reason="not-clean"
            ) from None
        if done.returncode != 0:
            detail = done.stderr.strip() or "the patch does not apply"
            message = f"Patch can't be applied: {detail}"
            raise NamedError("VcsApplyError", message, reason="not-clean")


def init_git(project: Path) -> None:
    """``git init`` the project unless it is inside a work tree already."""
    if git(project, "rev-parse", "--is-inside-work-tree") is not None:
        return
    if git(project, "init", "-q") is None:
        raise BadRequestError(f"git init failed in {project} (is git installed?)")


PROJECTS_FILE = "projects.json"


def project_settings(data_dir: Path) -> dict[str, dict[str, Any]]:
    """What users set on projects (PATCH /project/{id}: name, icon, commands), by id."""
    path = data_dir / PROJECTS_FILE
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return (
        {str(k): v for k, v in data.items() if isinstance(v, dict)}
        if isinstance(data, dict)
        else {}
    )


def save_project_settings(data_dir: Path, project_id: str, fields: dict[str, Any]) -> None:
    """Merge ``fields`` into the project's settings (written to a new file, then moved)."""
    known = project_settings(data_dir)
    known[project_id] = {**known.get(project_id, {}), **fields}
    data_dir.mkdir(parents=True, exist_ok=True)
    fresh = data_dir / (PROJECTS_FILE + ".tmp")
    fresh.write_text(json.dumps(known, indent=2) + "\n")
    fresh.replace(data_dir / PROJECTS_FILE)
