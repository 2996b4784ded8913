"""Sandbox git worktrees of a project (opencode's ``/experimental/worktree``).

Each lives in the data dir under ``worktree/<project id>/<name>`` on a branch
``partwire/<name>`` made from the project's HEAD, so an agent can work there without
touching the user's checkout. These functions block (git runs in a subprocess): call
them from a worker thread.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from partwire.errors import NamedError
from partwire.session.sessions import project_id, random_slug

BRANCH_PREFIX = "partwire/"
GIT_TIMEOUT_S = 120


@dataclass(frozen=True)
class Worktree:
    name: str
    branch: str
    directory: Path

    def wire(self) -> dict[str, str]:
        return {"name": self.name, "branch": self.branch, "directory": str(self.directory)}


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True,
            timeout=GIT_TIMEOUT_S, check=False,
        )  # fmt: skip
    except FileNotFoundError:
        return subprocess.CompletedProcess(["git", *args], 127, "", "git is not installed")
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(["git", *args], 124, "", "git took too long")


def resolved(given: str, failure: str) -> Path:
    """``given`` as an absolute path; one the OS refuses (too long, say) is ``failure``."""
    try:
        path = Path(given).expanduser().resolve()
        path.exists()  # raises for a name the OS cannot look up
    except (OSError, ValueError, RuntimeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise NamedError(failure, f"{given[:200]}: {reason}") from None
    return path


def _failure(done: subprocess.CompletedProcess[str]) -> str:
    return (done.stderr or done.stdout).strip() or f"git exited with {done.returncode}"


def primary(project: Path) -> Path:
    """The top of the project's main work tree; WorktreeNotGitError outside git."""
    done = _git(project, "rev-parse", "--path-format=absolute", "--git-common-dir")
    if done.returncode != 0:
        raise NamedError("WorktreeNotGitError", f"{project} is not in a git repository")
    return Path(done.stdout.strip()).parent


def root(project: Path, data_dir: Path) -> Path:
    return data_dir / "worktree" / project_id(str(primary(project)))


def _listed(top: Path) -> dict[Path, str]:
    """Every work tree of the repository: its directory → its branch ("" when detached)."""
    done = _git(top, "worktree", "list", "--porcelain")
    if done.returncode != 0:
        raise NamedError("WorktreeListFailedError", _failure(done))
    found: dict[Path, str] = {}
    current: Path | None = None
    for line in done.stdout.splitlines():
        if line.startswith("worktree "):
            current = Path(line[len("worktree ") :]).resolve()
            found[current] = ""
        elif line.startswith("branch ") and current is not None:
            found[current] = line[len("branch ") :].removeprefix("refs/heads/")
    return found


def list_worktrees(project: Path, data_dir: Path) -> list[str]:
    """The sandbox worktrees partwire made for this project (not the user's own); none
    outside git."""
    try:
        top = primary(project)
    except NamedError:
        return []
    base = root(project, data_dir).resolve()
    return sorted(str(p) for p in _listed(top) if p.parent == base)


def _name(wanted: str | None) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", (wanted or "").lower()).strip("-")[:60]
    return slug or random_slug()


def create(project: Path, data_dir: Path, wanted: str | None) -> Worktree:
    top = primary(project)
    base = root(project, data_dir)
    name = _name(wanted)
    branches = _git(top, "branch", "--list", "--format=%(refname:short)").stdout.split()
    while (base / name).exists() or f"{BRANCH_PREFIX}{name}" in branches:
        name = f"{name}-{random_slug()}"
    base.mkdir(parents=True, exist_ok=True)
    tree = Worktree(name, f"{BRANCH_PREFIX}{name}", base / name)
    done = _git(top, "worktree", "add", "-b", tree.branch, str(tree.directory), "HEAD")
    if done.returncode != 0:
        raise NamedError("WorktreeCreateFailedError", _failure(done))
    return tree


def _own(project: Path, data_dir: Path, directory: str, verb: str) -> tuple[Path, Path, str]:
    """(primary, worktree, branch) for one of this project's sandboxes; for the primary
    work tree or anything else, Worktree<Verb>FailedError."""
    failure = f"Worktree{verb.title()}FailedError"
    top = primary(project)
    target = resolved(directory, failure)
    if target == top.resolve():
        raise NamedError(failure, f"Cannot {verb} the primary workspace")
    listed = _listed(top)
    if target not in listed or target.parent != root(project, data_dir).resolve():
        raise NamedError(failure, f"{directory} is not a worktree partwire made for this project")
    return top, target, listed[target]


def remove(project: Path, data_dir: Path, directory: str) -> bool:
    """Remove the worktree and its branch. One that is gone already is removed."""
    if not resolved(directory, "WorktreeRemoveFailedError").exists():
        return True
    top, target, branch = _own(project, data_dir, directory, "remove")
    done = _git(top, "worktree", "remove", "--force", str(target))
    if done.returncode != 0:
        raise NamedError("WorktreeRemoveFailedError", _failure(done))
    if branch.startswith(BRANCH_PREFIX):
        _git(top, "branch", "-D", branch)
    return True


def changes(directory: Path) -> bool:
    """Whether the work tree has changes not committed (untracked files too)."""
    done = _git(directory, "status", "--porcelain")
    return done.returncode != 0 or bool(done.stdout.strip())


def _default_branch(top: Path) -> str:
    remote = _git(top, "symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD")
    if remote.returncode == 0 and remote.stdout.strip():
        return remote.stdout.strip()
    for candidate in ("main", "master"):
        if _git(top, "rev-parse", "--verify", "--quiet", candidate).returncode == 0:
            return candidate
    return _git(top, "rev-parse", "--abbrev-ref", "HEAD").stdout.strip() or "HEAD"


def reset(project: Path, data_dir: Path, directory: str) -> bool:
    """Point the worktree's branch at the project's default branch and drop every change
    in it, untracked files too."""
    top, target, _ = _own(project, data_dir, directory, "reset")
    for args in (("reset", "--hard", _default_branch(top)), ("clean", "-fd")):
        done = _git(target, *args)
        if done.returncode != 0:
            raise NamedError("WorktreeResetFailedError", _failure(done))
    return True


def run_start(directory: Path, commands: list[str]) -> str | None:
    """Run the start commands in the new worktree, one after another; the first
    failure's message, or None."""
    for command in commands:
        try:
            done = subprocess.run(
                command, shell=True, cwd=directory, capture_output=True, text=True,
                timeout=600, check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            return f"{command!r} took longer than 10 minutes"
        if done.returncode != 0:
            output = (done.stderr or done.stdout).strip()[-2000:]
            return f"{command!r} exited with {done.returncode}: {output}"
    return None
