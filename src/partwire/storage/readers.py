"""Where a store's reads run: on worker threads, each with a read connection of its own,
and (SQLite) a point read on the loop's thread.

A point read (a session, one message: rows found by their keys) runs on a read connection
of the loop's own: SQLite answers it from its page cache in a few microseconds, where
handing it to a worker thread and back costs about 90 µs of CPU, and an answer makes about
ten. It never waits for a lock (busy timeout 0: a reader in WAL mode waits only while the
log is recovered); if it would, it goes to a thread, which waits. A read that may be
short or long (a history) checks on the loop and says when it is too long for it
(``read_point_if``); the long ones, and reads of the log, stay on worker threads.
Postgres reads over the network: always on threads.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from typing import TypeVar

from partwire.storage.connection import Conn
from partwire.storage.writer import locked

T = TypeVar("T")


class Readers:
    """A store's read connections; ``begin`` opens each read's one transaction (its
    statements see one state of the database)."""

    def __init__(self, connect: Callable[[], Conn], begin: str, *, on_loop: bool) -> None:
        self._connect = connect
        self._begin = begin
        self._on_loop = on_loop
        self._threads = threading.local()
        self._conns: list[Conn] = []
        self._loop_conn: Conn | None = None

    async def open(self) -> None:
        if self._on_loop:
            self._loop_conn = await asyncio.to_thread(self._connect_loop)

    def _connect_loop(self) -> Conn:
        conn = self._connect()
        conn.execute("PRAGMA busy_timeout = 0")
        self._conns.append(conn)
        return conn

    def close(self) -> None:
        self._loop_conn = None
        for conn in self._conns:
            conn.close()
        self._conns.clear()

    def _thread_conn(self) -> Conn:
        """This worker thread's read connection."""
        conn: Conn | None = getattr(self._threads, "conn", None)
        if conn is None:
            conn = self._connect()
            self._threads.conn = conn
            self._conns.append(conn)
        return conn

    def _in_read(self, conn: Conn, query: Callable[[Conn], T]) -> T:
        conn.execute(self._begin)
        try:
            return query(conn)
        finally:
            conn.execute("COMMIT")

    async def read(self, query: Callable[[Conn], T]) -> T:
        """``query`` on a worker thread."""
        return await asyncio.to_thread(lambda: self._in_read(self._thread_conn(), query))

    async def read_point(self, query: Callable[[Conn], T]) -> T:
        """``query``, a read of a few rows by their keys: on the loop where it may run."""
        if self._loop_conn is not None:
            try:
                return self._in_read(self._loop_conn, query)
            except sqlite3.OperationalError as exc:
                if not locked(exc):
                    raise
        return await self.read(query)

    async def read_point_if(self, query: Callable[[Conn], T | None]) -> T | None:
        """``query`` on the loop, which returns None when the read is too large for it
        (the caller then reads on a thread); None at once where no read runs on the loop."""
        if self._loop_conn is None:
            return None
        return await self.read_point(query)
