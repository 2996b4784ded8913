"""Tool output over the size limit is cut, and the whole of it is kept in a file."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol, TypeVar


class _Result(Protocol):
    """What a tool's result holds that truncation reads (tools.base.ToolResult)."""

    @property
    def output(self) -> str: ...
    @property
    def metadata(self) -> dict[str, Any]: ...


R = TypeVar("R", bound=_Result)

MAX_LINES = 2000
MAX_BYTES = 50 * 1024


_CHUNK = 1 << 20  # characters a slice: no single call holds the interpreter for long


def _head(text: str) -> str:
    """The first MAX_LINES lines within MAX_BYTES, found without splitting the whole text."""
    end = 0
    size = 0
    for _ in range(MAX_LINES):
        newline = text.find("\n", end, end + MAX_BYTES + 1)
        if newline < 0 and len(text) - end > MAX_BYTES:
            break  # the next line alone is over the limit
        stop = len(text) if newline < 0 else newline + 1
        line_size = len(text[end:stop].encode())
        if size + line_size > MAX_BYTES or end >= len(text):
            break
        size += line_size
        end = stop
    return text[:end]


def _fits(text: str) -> bool:
    if len(text) > MAX_BYTES:  # every character is at least one byte
        return False
    return len(text.encode()) <= MAX_BYTES and text.count("\n") < MAX_LINES


def _keep(path: Path, text: str) -> None:
    with path.open("w", encoding="utf-8") as file:
        for start in range(0, len(text), _CHUNK):
            file.write(text[start : start + _CHUNK])


def _size(text: str) -> int:
    return sum(len(text[i : i + _CHUNK].encode()) for i in range(0, len(text), _CHUNK))


def truncate(result: R, output_dir: Path | None, call_id: str) -> R:
    """The result itself when small enough; otherwise its head and a note on where the rest
    is (``output_dir``/``call_id``.txt). Runs on a worker thread: it works in slices so the
    event loop keeps its turns."""
    output = result.output
    if _fits(output):
        return result
    head = _head(output)
    where = "it was not kept"
    if output_dir is not None:
        output_dir.mkdir(parents=True, exist_ok=True)
        path = output_dir / f"{call_id}.txt"
        _keep(path, output)
        where = f"the full output is in {path}"
    note = (
        f"\n\n[output truncated: showed {len(head.encode())} of {_size(output)} bytes; "
        f"{where}. Use grep, or read with offset/limit, to see the rest.]"
    )
    metadata = {**result.metadata, "truncated": True}
    return replace(result, output=head + note, metadata=metadata)  # type: ignore[type-var]
