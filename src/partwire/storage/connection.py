"""What the writer, the readers and recovery need of a database connection.

sqlite3's own API: ``?`` parameters, ``with conn:`` commits (or rolls back) the statements
since the last commit. A ``sqlite3.Connection`` is one; ``storage/postgres.py`` wraps a
psycopg connection to be one, so the same writes, reads and recovery run on both.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from types import TracebackType
from typing import Any, Protocol


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...
    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...
    def __iter__(self) -> Iterator[Any]: ...


class Conn(Protocol):
    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Cursor: ...
    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Cursor: ...
    def executescript(self, sql_script: str, /) -> Any: ...
    def close(self) -> None: ...
    def __enter__(self) -> Any: ...
    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
        /,
    ) -> bool | None: ...
