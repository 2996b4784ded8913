"""The WAL's checkpoints, on a thread of their own: the writer never copies the WAL into
the database itself (see ``writer.CHECKPOINT_PAGES``)."""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable

from partwire.storage.connection import Conn

log = logging.getLogger(__name__)


class Checkpointer:
    """A thread that runs a PASSIVE WAL checkpoint each time it is asked to."""

    def __init__(self, connect: Callable[[], Conn]) -> None:
        self._connect = connect
        self._wake = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self.runs = 0

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="partwire-wal", daemon=True)
        self._thread.start()

    def request(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        if self._thread is not None:
            self._stopping = True
            self._wake.set()
            self._thread.join()
            self._thread = None

    def _run(self) -> None:
        conn = self._connect()
        try:
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._stopping:
                    return
                try:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
                    self.runs += 1
                except sqlite3.Error as exc:  # the next request tries again
                    log.warning("WAL checkpoint failed: %s", exc)
        finally:
            conn.close()
