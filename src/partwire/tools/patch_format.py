"""Parsing and applying the multi-file patch format of apply_patch (pure functions).

::

    *** Begin Patch
    *** Add File: path            followed by "+line" lines
    *** Delete File: path
    *** Update File: path
    *** Move to: new/path         optional, right after Update File
    @@ optional anchor line       then hunks of " context", "-removed", "+added"
    *** End Patch
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from partwire.errors import ToolError

BEGIN, END = "*** Begin Patch", "*** End Patch"
ADD, DELETE, UPDATE, MOVE = (
    "*** Add File: ",
    "*** Delete File: ",
    "*** Update File: ",
    "*** Move to: ",
)
END_OF_FILE = "*** End of File"


@dataclass
class Hunk:
    anchor: str | None
    old: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)


@dataclass
class FileChange:
    kind: str  # "add" | "delete" | "update"
    path: str
    content: str = ""
    move_to: str | None = None
    hunks: list[Hunk] = field(default_factory=list)


def parse(text: str) -> list[FileChange]:
    lines = text.strip().splitlines()
    if not lines or lines[0].strip() != BEGIN or lines[-1].strip() != END:
        raise ToolError(f"The patch must start with '{BEGIN}' and end with '{END}'.")
    changes: list[FileChange] = []
    body = lines[1:-1]
    index = 0
    while index < len(body):
        line = body[index]
        index += 1
        if line.startswith(ADD):
            change = FileChange("add", line[len(ADD) :].strip())
            added: list[str] = []
            while index < len(body) and body[index].startswith("+"):
                added.append(body[index][1:])
                index += 1
            change.content = "\n".join(added) + ("\n" if added else "")
            changes.append(change)
        elif line.startswith(DELETE):
            changes.append(FileChange("delete", line[len(DELETE) :].strip()))
        elif line.startswith(UPDATE):
            change = FileChange("update", line[len(UPDATE) :].strip())
            if index < len(body) and body[index].startswith(MOVE):
                change.move_to = body[index][len(MOVE) :].strip()
                index += 1
            index = _hunks(body, index, change)
            changes.append(change)
        elif line.strip():
            raise ToolError(f"Unexpected line in patch: {line!r}")
    if not changes:
        raise ToolError("The patch changes no files.")
    return changes


def _hunks(body: list[str], index: int, change: FileChange) -> int:
    hunk: Hunk | None = None
    while (index < len(body) and not body[index].startswith("*** ")) or (
        index < len(body) and body[index] == END_OF_FILE
    ):
        line = body[index]
        index += 1
        if line == END_OF_FILE:
            continue
        if line.startswith("@@"):
            hunk = Hunk(anchor=line[2:].strip() or None)
            change.hunks.append(hunk)
            continue
        if hunk is None:
            hunk = Hunk(anchor=None)
            change.hunks.append(hunk)
        prefix, rest = line[:1], line[1:]
        if prefix in (" ", ""):
            hunk.old.append(rest)
            hunk.new.append(rest)
        elif prefix == "-":
            hunk.old.append(rest)
        elif prefix == "+":
            hunk.new.append(rest)
        else:
            raise ToolError(f"Hunk lines start with ' ', '-' or '+'; got {line!r} in {change.path}")
    if not change.hunks and change.move_to is None:
        raise ToolError(f"Update of {change.path} has no hunks.")
    return index


def _find(lines: list[str], target: list[str], start: int) -> int:
    """Index where ``target`` occurs at or after ``start``: exact, then ignoring whitespace."""
    compare: list[Callable[[str], str]] = [lambda s: s, str.rstrip, str.strip]
    for norm in compare:
        wanted = [norm(t) for t in target]
        for i in range(start, len(lines) - len(target) + 1):
            if [norm(x) for x in lines[i : i + len(target)]] == wanted:
                return i
    return -1


def apply_hunks(content: str, hunks: list[Hunk], path: str) -> str:
    lines = content.splitlines()
    cursor = 0
    for hunk in hunks:
        if hunk.anchor is not None:
            at = _find(lines, [hunk.anchor], cursor)
            if at < 0:
                raise ToolError(f"Could not find the @@ line {hunk.anchor!r} in {path}.")
            cursor = at  # the hunk is searched from its anchor line on
        if not hunk.old:
            lines[cursor:cursor] = hunk.new
            cursor += len(hunk.new)
            continue
        at = _find(lines, hunk.old, cursor)
        if at < 0:
            preview = "\n".join(hunk.old[:5])
            raise ToolError(
                f"Could not find these lines in {path}:\n{preview}\nRead the file again."
            )
        lines[at : at + len(hunk.old)] = hunk.new
        cursor = at + len(hunk.new)
    return "\n".join(lines) + ("\n" if lines else "")
