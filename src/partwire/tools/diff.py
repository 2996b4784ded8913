"""Unified diffs and line counts for the tools that change files."""

from __future__ import annotations

import difflib
from typing import Any


def unified(path: str, before: str, after: str) -> str:
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=f"a/{path}",
            tofile=f"b/{path}",
        )
    )


def file_diff(path: str, before: str | None, after: str | None) -> dict[str, Any]:
    """A SnapshotFileDiff-shaped summary: file, patch, additions, deletions, status."""
    patch = unified(path, before or "", after or "")
    lines = patch.splitlines()
    additions = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
    deletions = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
    status = "added" if before is None else "deleted" if after is None else "modified"
    return {
        "file": path,
        "patch": patch,
        "additions": additions,
        "deletions": deletions,
        "status": status,
    }
