"""Event fan-out through Redis Streams, beside the Postgres store (``PARTWIRE_REDIS_URL``).

Every server's writer appends what it committed to one stream, after the commit (durable
before visible), and every server reads the stream and publishes in the log's order. An
entry carries its events' sequence numbers, types and payloads, so a server learns other
servers' events without reading them back from Postgres, and commits need no NOTIFY.

Postgres stays the truth. Commits take the log's lock in turn, so sequence numbers have
no holes and commit in order; a reader therefore knows which event comes next. It reads
the rows from the table instead when the stream cannot say:

- seq n+2 arrived and n+1 has not for GAP_WAIT_S (two servers' appends raced, or a
  writer died between its commit and its append);
- the stream was trimmed past the reader's position;
- nothing arrived for POLL_S (the newest commit's append was lost, or Redis is down).

Commands between servers (aborts, replies to asks) go through a second stream; while
Redis is away they are lost (the rows are not: readers read the table every POLL_S).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from partwire import ids
from partwire.errors import ConfigError, StorageError
from partwire.schema.event import Event
from partwire.storage.pg_connection import PgConnection, redacted
from partwire.storage.pg_notify import Row, hand_rows_after

if TYPE_CHECKING:
    import redis
    from redis.connection import AbstractConnection

log = logging.getLogger(__name__)

POLL_S = 1.0  # a reader also reads the table after this long without an entry
GAP_WAIT_S = 0.05  # how long a reader waits for a missing event before reading the table
PAGE = 2_000
LOG_ENTRIES_KEPT = 10_000  # commits the log stream keeps (approximately)
COMMANDS_KEPT = 1_000
DOWN_PAUSE_S = 1.0  # after a failed append, a writer leaves Redis alone this long
TIMEOUT_S = 2.0


def client(url: str) -> redis.Redis:
    try:
        import redis
    except ImportError:
        raise ConfigError(
            "PARTWIRE_REDIS_URL is set but the redis client is not installed: "
            "pip install 'partwire[redis]'"
        ) from None
    return redis.Redis.from_url(url, socket_timeout=TIMEOUT_S, socket_connect_timeout=TIMEOUT_S)


def check(url: str) -> None:
    """Refuse to start when Redis cannot be reached (blocking: call it off the loop)."""
    import redis

    connection = client(url)
    try:
        connection.ping()
    except redis.RedisError as exc:
        raise StorageError(f"Redis at {redacted(url)} cannot be reached: {exc}") from None
    finally:
        connection.close()


class Keys:
    """The two streams of one database's servers: named after its log's epoch, so that
    servers of different databases can share one Redis."""

    def __init__(self, epoch: int) -> None:
        self.log = f"partwire:{epoch:x}:log"
        self.commands = f"partwire:{epoch:x}:commands"


def entries(events: list[Event], epoch: int) -> list[dict[str, str | int]]:
    """One stream entry per run of consecutive sequence numbers: ``s`` is the first,
    ``t<i>`` and ``p<i>`` the i-th event's type and payload."""
    runs: list[dict[str, str | int]] = []
    previous = -1
    for event in events:
        seq = ids.logged_event_seq(event.id, epoch)
        assert seq is not None, event.id
        if seq != previous + 1 or not runs:
            runs.append({"s": seq})
        run = runs[-1]
        index = (len(run) - 1) // 2
        run[f"t{index}"] = event.type
        run[f"p{index}"] = event.properties_json
        previous = seq
    return runs


def rows_of(fields: dict[bytes, bytes]) -> list[Row]:
    first = int(fields[b"s"])
    return [
        (first + i, fields[b"t%d" % i].decode(), fields[b"p%d" % i].decode())
        for i in range((len(fields) - 1) // 2)
    ]


class Appender:
    """The writer's side: appends each commit's events (on the writer's thread), on one
    connection of its own, with the client's command layer left out (it halves the CPU
    of an append). A failed append is logged and skipped for DOWN_PAUSE_S: the readers
    find those events in the table."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.keys: Keys | None = None
        self.epoch = 0
        self._client: redis.Redis | None = None
        self._connection: AbstractConnection | None = None
        self._paused_until = 0.0

    def bind(self, epoch: int) -> None:
        self.epoch, self.keys = epoch, Keys(epoch)

    def append(self, events: list[Event]) -> None:
        if self.keys is None or time.monotonic() < self._paused_until:
            return
        try:
            connection = self._connected()
            commands = [
                ("XADD", self.keys.log, "MAXLEN", "~", LOG_ENTRIES_KEPT, "*", *_flat(entry))
                for entry in entries(events, self.epoch)
            ]
            packed = connection.pack_commands(commands)  # type: ignore[no-untyped-call]
            connection.send_packed_command(packed, False)  # type: ignore[no-untyped-call]
            for _ in commands:
                connection.read_response()  # raises an error reply
        except Exception as exc:  # Redis is down or slow: the readers read the table
            log.warning("could not append to Redis at %s (%s)", redacted(self.url), exc)
            self._paused_until = time.monotonic() + DOWN_PAUSE_S
            self.close()

    def _connected(self) -> AbstractConnection:
        if self._connection is None:
            self._client = client(self.url)
            self._connection = self._client.connection_pool.get_connection()
        return self._connection

    def close(self) -> None:
        with contextlib.suppress(Exception):
            if self._connection is not None:
                self._connection.disconnect()  # type: ignore[no-untyped-call]
            if self._client is not None:
                self._client.close()
        self._connection = self._client = None


def _flat(entry: dict[str, str | int]) -> list[str | int]:
    return [item for pair in entry.items() for item in pair]


def send_command(url: str, keys: Keys, command: dict[str, Any]) -> None:
    connection = client(url)
    try:
        connection.xadd(
            keys.commands, {"c": json.dumps(command)}, maxlen=COMMANDS_KEPT, approximate=True
        )
    finally:
        connection.close()


def _newest(stream: redis.Redis, key: str) -> bytes:
    found: Any = stream.xrevrange(key, count=1)
    return found[0][0] if found else b"0-0"


class Reader:
    """A thread that hands the log's rows on in order, and other servers' commands: rows
    from the stream while it keeps up, from the table where it cannot say (see the
    module's docstring); it follows again from the last row it handed on when it loses
    a connection."""

    def __init__(
        self,
        url: str,
        keys: Keys,
        table: Callable[[], PgConnection],
        after: int,
        hand: Callable[[list[Row]], object],
        command: Callable[[str], object],
    ) -> None:
        self.url, self.keys = url, keys
        self._table = table
        self._early: dict[int, Row] = {}  # rows past a missing one
        self._gap_since: float | None = None
        self.after = after  # the newest row handed on
        self._hand, self._command = hand, command
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="partwire-redis", daemon=True)

    def start(self) -> None:
        self._thread.start()

    async def close(self) -> None:
        await asyncio.to_thread(self._stop)

    def _stop(self) -> None:
        self._stopping = True
        with contextlib.suppress(Exception):  # now rather than at its next poll
            self._wake()
        self._thread.join(POLL_S * 5)

    def _run(self) -> None:
        while not self._stopping:
            try:
                self._follow()
            except Exception as exc:  # a server went away: follow again from `after`
                if self._stopping:
                    return
                log.warning("the event log's follower lost a connection (%s); retrying", exc)
                time.sleep(POLL_S)

    def _wake(self) -> None:
        connection = client(self.url)
        connection.xadd(self.keys.commands, {"wake": "1"}, maxlen=COMMANDS_KEPT)
        connection.close()

    def _follow(self) -> None:
        table = self._table()  # a failure of the database's ends this and follows anew
        try:
            while not self._stopping:
                try:
                    self._follow_stream(table)
                except self._redis_errors() as exc:  # Redis is away: the table meanwhile
                    log.warning("the Redis event stream is away (%s); reading the table", exc)
                    self._read_table(table)
                    self._pause(POLL_S)
        finally:
            table.close()

    def _follow_stream(self, table: PgConnection) -> None:
        stream = client(self.url)
        try:
            # from the streams' newest entries on; what was committed before is in the table
            positions = {key: _newest(stream, key) for key in (self.keys.log, self.keys.commands)}
            self._read_table(table)
            while not self._stopping:
                wait = GAP_WAIT_S if self._early else POLL_S
                reply: Any = stream.xread(positions, count=PAGE, block=int(wait * 1000))  # type: ignore[arg-type]
                if not reply:
                    self._read_table(table)
                    continue
                for key, found in reply:
                    positions[key.decode()] = found[-1][0]
                    if key.decode() == self.keys.commands:
                        self._obey(found)
                    else:
                        self._take(found)
                if self._gap_waited_out():
                    self._read_table(table)
        finally:
            stream.close()

    @staticmethod
    def _redis_errors() -> type[Exception]:
        import redis

        return redis.RedisError

    def _pause(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not self._stopping and time.monotonic() < deadline:
            time.sleep(0.05)

    def _obey(self, found: list[tuple[bytes, dict[bytes, bytes]]]) -> None:
        for _, fields in found:
            if b"c" in fields:
                self._command(fields[b"c"].decode())

    def _take(self, found: list[tuple[bytes, dict[bytes, bytes]]]) -> None:
        for _, fields in found:
            for row in rows_of(fields):
                if row[0] > self.after:
                    self._early[row[0]] = row
        self._hand_in_order()

    def _hand_in_order(self) -> None:
        rows: list[Row] = []
        while (row := self._early.pop(self.after + 1, None)) is not None:
            rows.append(row)
            self.after = row[0]
        if rows:
            self._hand(rows)
        if not self._early:
            self._gap_since = None
        elif self._gap_since is None or rows:
            self._gap_since = time.monotonic()

    def _gap_waited_out(self) -> bool:
        return self._gap_since is not None and time.monotonic() - self._gap_since >= GAP_WAIT_S

    def _read_table(self, table: PgConnection) -> None:
        """The rows after the last one handed on, from the database."""
        self.after = hand_rows_after(table, self.after, self._hand)
        self._early = {seq: row for seq, row in self._early.items() if seq > self.after}
        self._hand_in_order()
