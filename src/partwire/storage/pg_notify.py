"""Servers sharing a Postgres database learn of each other's commits by NOTIFY: each
commit notifies ``partwire_log`` and each server's tail thread reads the new rows. Commands
between servers go on ``partwire_commands``. (With Redis: ``storage/redis_log.py``.)"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable

from partwire.storage.pg_connection import PgConnection, connect

log = logging.getLogger(__name__)

CHANNEL = "partwire_log"  # NOTIFY'd by every commit; each server's tail LISTENs
COMMANDS = "partwire_commands"  # a server asks the one that holds a run or an ask
TAIL_PAGE = 2_000
TAIL_POLL_S = 1.0  # a tail also looks without a notification this often

Row = tuple[int, str, str]  # seq, type, payload: an event_log row


def hand_rows_after(conn: PgConnection, after: int, hand: Callable[[list[Row]], object]) -> int:
    """Hand on the log's rows after ``after``, in order, a page at a time; returns the
    newest one handed on (``after`` when there were none)."""
    while True:
        rows = conn.execute(
            "SELECT seq, type, payload FROM event_log WHERE seq > ? ORDER BY seq LIMIT ?",
            (after, TAIL_PAGE),
        ).fetchall()
        if not rows:
            return after
        after = rows[-1][0]
        hand([(row[0], row[1], row[2]) for row in rows])


class LogFollower:
    """A thread that hands on the log's rows in order, and other servers' commands, and
    follows again from the last row it handed on when it loses a connection."""

    thread_name = "partwire-tail"

    def __init__(
        self,
        after: int,
        hand: Callable[[list[Row]], object],
        command: Callable[[str], object],
    ) -> None:
        self.after = after  # the newest row handed on
        self._hand = hand
        self._command = command
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping = True
        with contextlib.suppress(Exception):  # now rather than at its next poll
            self._wake()
        self._thread.join(TAIL_POLL_S * 5)

    def _run(self) -> None:
        while not self._stopping:
            try:
                self._follow()
            except Exception as exc:  # a server went away: follow again from `after`
                if self._stopping:
                    return
                log.warning("the event log's follower lost a connection (%s); retrying", exc)
                time.sleep(TAIL_POLL_S)

    def _follow(self) -> None:
        raise NotImplementedError

    def _wake(self) -> None:
        raise NotImplementedError


class NotifyTail(LogFollower):
    """Reads the log's new rows whenever any server commits (NOTIFY)."""

    def __init__(
        self,
        url: str,
        after: int,
        hand: Callable[[list[Row]], object],
        command: Callable[[str], object],
    ) -> None:
        self.url = url
        super().__init__(after, hand, command)

    def _wake(self) -> None:
        waker = connect(self.url, autocommit=True)
        waker.execute(f"NOTIFY {CHANNEL}")
        waker.close()

    def _follow(self) -> None:
        conn = connect(self.url, autocommit=True)
        try:
            conn.execute(f"LISTEN {CHANNEL}")
            conn.execute(f"LISTEN {COMMANDS}")
            while not self._stopping:
                self._drain(conn)
                for notice in conn.raw.notifies(timeout=TAIL_POLL_S, stop_after=1):
                    if notice.channel == COMMANDS:
                        self._command(notice.payload)
        finally:
            conn.close()

    def _drain(self, conn: PgConnection) -> None:
        self.after = hand_rows_after(conn, self.after, self._hand)
