"""Servers sharing a Postgres database learn of each other's commits by NOTIFY: each
commit notifies ``partwire_log`` with its rows (when they fit; a notification is delivered
to every listener at commit, in commit order), and each server's tail thread hands them on.
A tail reads the table instead when a notification comes without rows (too large), when
its rows do not follow the last it handed on, and once a second without any notification.
Commands between servers go on ``partwire_commands``. (With Redis: ``storage/redis_log.py``.)

Without the rows, every commit cost each server's tail a query (two: the rows, then the
empty page that ends them), so Postgres' work grew with servers times commits.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable

from partwire.schema.event import Event
from partwire.storage.pg_connection import PgConnection, connect

log = logging.getLogger(__name__)

CHANNEL = "partwire_log"  # NOTIFY'd by every commit; each server's tail LISTENs
COMMANDS = "partwire_commands"  # a server asks the one that holds a run or an ask
TAIL_PAGE = 2_000
NOTIFY_PAYLOAD_BYTES = 7_000  # Postgres refuses a NOTIFY payload of 8,000 bytes or more
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
        if rows:
            after = rows[-1][0]
            hand([(row[0], row[1], row[2]) for row in rows])
        if len(rows) < TAIL_PAGE:
            return after


def notices_of(events: list[Event], last_seq: int) -> list[str]:
    """One commit's log rows (its ``events``, numbered up to ``last_seq``) as NOTIFY
    payloads, in order: a line a row, ``seq type properties`` (JSON has no raw line break),
    as many rows to a payload as fit. A row too large for a payload of its own makes an
    empty one (its listeners read the table); none when there are no rows. A group commit
    of a loaded server's deltas is larger than one payload: split, no tail reads it back."""
    first = last_seq - len(events) + 1
    notices: list[str] = []
    lines: list[str] = []
    size = 0
    for n, event in enumerate(events):
        line = f"{first + n} {event.type} {event.properties_json}"
        length = _payload_bytes(line)
        if lines and size + 1 + length >= NOTIFY_PAYLOAD_BYTES:
            notices.append("\n".join(lines))
            lines, size = [], 0
        if length >= NOTIFY_PAYLOAD_BYTES:
            if not notices or notices[-1]:  # one empty payload says it (repeats fold)
                notices.append("")
            continue
        size += length + (1 if lines else 0)
        lines.append(line)
    if lines:
        notices.append("\n".join(lines))
    return notices


def _payload_bytes(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode())


def rows_of(notice: str) -> list[Row]:
    """The rows a NOTIFY payload holds (``notices_of``); none when it holds none, or
    something else (a bare NOTIFY, another version's): the table is read instead."""
    rows: list[Row] = []
    for line in notice.split("\n") if notice else ():
        fields = line.split(" ", 2)
        if len(fields) != 3 or not fields[0].isdigit() or not all(fields):
            return []
        rows.append((int(fields[0]), fields[1], fields[2]))
    return rows


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
            self._drain(conn)  # what was committed before this connection listened
            while not self._stopping:
                notices = list(conn.raw.notifies(timeout=TAIL_POLL_S, stop_after=1))
                if not notices:
                    self._drain(conn)  # a quiet second: look anyway
                for notice in notices:
                    if notice.channel == COMMANDS:
                        self._command(notice.payload)
                    elif not self._take(rows_of(notice.payload)):
                        self._drain(conn)
        finally:
            conn.close()

    def _take(self, rows: list[Row]) -> bool:
        """Hand on a notification's rows; False when they do not follow the last handed on
        (none came with it, or some commit's rows are missing between)."""
        fresh = [row for row in rows if row[0] > self.after]
        if not rows or (fresh and fresh[0][0] != self.after + 1):
            return False
        if fresh:
            self._hand(fresh)
            self.after = fresh[-1][0]
        return True

    def _drain(self, conn: PgConnection) -> None:
        self.after = hand_rows_after(conn, self.after, self._hand)
