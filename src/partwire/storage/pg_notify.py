"""Servers sharing a Postgres database learn of each other's commits by NOTIFY: each
commit notifies ``partwire_log`` with its rows (when they fit; a notification is delivered
to every listener at commit, in commit order), and each server's tail hands them on.
A tail reads the table instead when a notification comes without rows (too large), when
its rows do not follow the last it handed on, and once a second without any notification.
Commands between servers go on ``partwire_commands``. (With Redis: ``storage/redis_log.py``.)

Without the rows, every commit cost each server's tail a query (two: the rows, then the
empty page that ends them), so Postgres' work grew with servers times commits.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from partwire.schema.event import Event
from partwire.storage.pg_connection import PgConnection, connect

if TYPE_CHECKING:
    from psycopg.pq.abc import PGconn

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


class NotifyTail:
    """Follows the log on the event loop: the loop itself watches the LISTEN connection's
    socket, so a notification costs no thread's wake-up and no hand-over between threads
    (a quarter of what following a busy server cost: bench/follow.py).
    Rows are handed on, and commands obeyed, in the order they were notified; the table is
    read (on a worker thread, over a connection of its own) when a
    notification comes without rows or with rows that do not follow the last handed on,
    and after a second without any notification. What is notified meanwhile waits."""

    def __init__(
        self,
        url: str,
        after: int,
        hand: Callable[[list[Row]], object],
        command: Callable[[str], object],
    ) -> None:
        self.url = url
        self.after = after  # the newest row handed on
        self._hand, self._command = hand, command
        self._pending: deque[tuple[str, str]] = deque()  # (channel, payload) not yet taken
        self._behind = True  # the table is to be read before what is pending is taken
        self._heard = False  # a notification came since the last look
        self._lost: BaseException | None = None
        self._wake = asyncio.Event()
        self._stopping = False
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="partwire-tail")

    async def close(self) -> None:
        self._stopping = True
        self._wake.set()
        if self._task is None:
            return
        done, _ = await asyncio.wait({self._task}, timeout=TAIL_POLL_S * 5)
        if not done:  # still connecting to a database that does not answer
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        while not self._stopping:
            try:
                await self._follow()
            except Exception as exc:  # a server went away: follow again from `after`
                if self._stopping:
                    return
                log.warning("the event log's follower lost a connection (%s); retrying", exc)
                await asyncio.sleep(TAIL_POLL_S)

    async def _follow(self) -> None:
        listener, table = await asyncio.to_thread(self._connect)
        loop = asyncio.get_running_loop()
        socket = listener.raw.pgconn.socket
        self._lost, self._behind = None, True
        loop.add_reader(
            socket, self._readable, listener.raw.pgconn, socket, listener.raw.info.encoding
        )
        try:
            while not self._stopping:
                if self._behind or not self._heard:
                    await self._catch_up(table)  # the first time: what came before LISTEN
                self._heard = False
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), TAIL_POLL_S)
                self._wake.clear()
                if self._lost is not None:
                    raise self._lost
        finally:
            loop.remove_reader(socket)
            await asyncio.to_thread(_close_both, listener, table)

    def _connect(self) -> tuple[PgConnection, PgConnection]:
        listener = connect(self.url, autocommit=True)
        try:
            listener.execute(f"LISTEN {CHANNEL}")
            listener.execute(f"LISTEN {COMMANDS}")
            return listener, connect(self.url, autocommit=True)
        except BaseException:
            listener.close()
            raise

    def _readable(self, pgconn: PGconn, socket: int, encoding: str) -> None:
        """On the loop, when the LISTEN connection has something to read."""
        try:
            pgconn.consume_input()
        except Exception as exc:  # the connection is gone: _follow ends and follows anew
            asyncio.get_running_loop().remove_reader(socket)
            self._lost = exc
            self._wake.set()
            return
        while (notice := pgconn.notifies()) is not None:
            self._pending.append((notice.relname.decode(encoding), notice.extra.decode(encoding)))
            self._heard = True
        if not self._behind and not self._take_pending():
            self._behind = True
            self._wake.set()

    async def _catch_up(self, table: PgConnection) -> None:
        """Read the table, then take what was notified meanwhile; again while that does
        not follow."""
        self._behind = True
        while True:
            rows: list[Row] = []  # read on a worker thread, handed on here
            self.after = await asyncio.to_thread(hand_rows_after, table, self.after, rows.extend)
            if rows:
                self._hand(rows)
            if self._take_pending():
                self._behind = False
                return

    def _take_pending(self) -> bool:
        """Take the notifications received, in order; False at one that needs the table
        (it is dropped: the table holds its rows)."""
        while self._pending:
            channel, payload = self._pending.popleft()
            if channel == COMMANDS:
                self._obey(payload)
            elif not self._take(rows_of(payload)):
                return False
        return True

    def _obey(self, payload: str) -> None:
        try:
            self._command(payload)
        except Exception:  # another server's (or a stranger's) command: never this tail's end
            log.exception("a command from another server could not be obeyed: %.200s", payload)

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


def _close_both(listener: PgConnection, table: PgConnection) -> None:
    for conn in (listener, table):
        with contextlib.suppress(Exception):
            conn.close()
