"""Searching text with patterns a client or a model wrote, without letting one stall us.

Patterns run in the ``regex`` module with a time limit, and with the GIL released
(``concurrent=True``), from a worker thread: a catastrophic pattern such as
``(a+)+$`` costs at most the limit and never holds up the event loop. Files are
searched only where their real path stays inside the searched folder: a symlink
that leads out of the project is never followed.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from partwire.tools.paths import is_ignored

SEARCH_SECONDS = 5.0  # the whole search's budget
MAX_PATTERN_CHARS = 1_000

if TYPE_CHECKING:
    import regex


class PatternError(ValueError):
    """The pattern is invalid, too long, or took longer than the search may."""


def compile_pattern(pattern: str) -> regex.Pattern[str]:
    if len(pattern) > MAX_PATTERN_CHARS:
        raise PatternError(f"the pattern is longer than {MAX_PATTERN_CHARS} characters")
    import regex  # on the first search, not with the server

    try:
        return regex.compile(pattern)
    except regex.error as exc:
        raise PatternError(f"Invalid regular expression: {exc}") from None


class Deadline:
    def __init__(self, seconds: float = SEARCH_SECONDS) -> None:
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        remaining = self.end - time.monotonic()
        if remaining <= 0:
            raise PatternError(
                f"the search took longer than {SEARCH_SECONDS:g} s; use a simpler pattern"
            )
        return remaining


def finditer(
    pattern: regex.Pattern[str], text: str, deadline: Deadline
) -> Iterator[regex.Match[str]]:
    try:
        yield from pattern.finditer(text, concurrent=True, timeout=deadline.left())
    except TimeoutError:
        deadline.left()  # raises PatternError
        raise


def contained(root: Path, path: Path) -> bool:
    """True when ``path`` (symlinks followed) is inside ``root``."""
    try:
        return path.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError):  # a symlink loop, a name too long
        return False


def text_files(root: Path, include: str = "*") -> Iterator[Path]:
    """Regular files under ``root`` whose real path stays inside it."""
    base = root.resolve()
    for path in base.rglob(include):
        try:
            relative = path.relative_to(base)
            if is_ignored(relative) or not path.is_file() or not contained(base, path):
                continue
        except OSError:
            continue
        yield path
