"""Session leases in Postgres: which of the servers sharing a database runs which session,
and which prompts no server may answer (``noReply``). The session layer's view of them is
``session/ownership.py``."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

from partwire.clock import now_ms
from partwire.storage.connection import Conn, Cursor
from partwire.storage.pg_connection import PgConnection, connect

# Which server runs which session (session_lease, migration 5): a row per session while a
# server runs it, renewed while it runs; a row past its expiry belongs to a server that is
# gone.
LEASE_S = 6.0  # renewed every LEASE_S / 3 while held: a dead server's sessions move on
# within LEASE_S plus one sweep


def _ms() -> int:
    return now_ms()


def others_live_leases(conn: Conn, server_id: str) -> list[str]:
    """The sessions other servers run now. This server's own leases (from before a
    restart: it holds its data dir, so no other process of it is alive) are dropped."""
    mine = f"{server_id}:%"
    conn.execute("DELETE FROM session_lease WHERE owner LIKE ?", (mine,))
    rows = conn.execute(
        "SELECT session_id FROM session_lease WHERE expires_ms > ? AND owner NOT LIKE ?",
        (_ms(), mine),
    )
    return [row[0] for row in rows.fetchall()]


class PgLeases:
    """Session leases in the database, one autocommit connection (used from worker
    threads, one statement at a time)."""

    def __init__(self, url: str, owner: str) -> None:
        self.url = url
        self.owner = owner
        self._conn: PgConnection | None = None
        self._lock = threading.Lock()

    def _execute(self, sql: str, parameters: Sequence[Any]) -> Cursor:
        with self._lock:
            if self._conn is None:
                self._conn = connect(self.url, autocommit=True)
            self._conn._reconnect_if_dropped()  # autocommit: no transaction to lose
            return self._conn.execute(sql, parameters)

    async def acquire(self, session_id: str) -> bool:
        """Take the session's lease unless a live server holds it (ours is renewed)."""
        now = _ms()
        sql = (
            "INSERT INTO session_lease (session_id, owner, expires_ms) VALUES (?, ?, ?) "
            "ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner, "
            "expires_ms = excluded.expires_ms "
            "WHERE session_lease.owner = excluded.owner OR session_lease.expires_ms < ?"
        )
        params = (session_id, self.owner, now + int(LEASE_S * 1000), now)
        cursor = await asyncio.to_thread(self._execute, sql, params)
        return cursor.rowcount == 1

    async def renew(self, session_ids: list[str]) -> None:
        if session_ids:
            sql = "UPDATE session_lease SET expires_ms = ? WHERE owner = ? AND session_id = ANY(?)"
            params = (_ms() + int(LEASE_S * 1000), self.owner, session_ids)
            await asyncio.to_thread(self._execute, sql, params)

    async def release(self, session_id: str) -> None:
        sql = "DELETE FROM session_lease WHERE session_id = ? AND owner = ?"
        await asyncio.to_thread(self._execute, sql, (session_id, self.owner))

    async def held_elsewhere(self, session_id: str) -> bool:
        """Whether another live server runs the session."""
        sql = "SELECT 1 FROM session_lease WHERE session_id = ? AND owner <> ? AND expires_ms > ?"
        cursor = await asyncio.to_thread(self._execute, sql, (session_id, self.owner, _ms()))
        return cursor.fetchone() is not None

    async def expired(self) -> list[str]:
        sql = "SELECT session_id FROM session_lease WHERE expires_ms < ?"
        cursor = await asyncio.to_thread(self._execute, sql, (_ms(),))
        return [row[0] for row in cursor.fetchall()]

    async def mark_no_reply(self, session_id: str, message_id: str) -> None:
        sql = (
            "INSERT INTO prompt_no_reply (message_id, session_id) VALUES (?, ?) "
            "ON CONFLICT DO NOTHING"
        )
        await asyncio.to_thread(self._execute, sql, (message_id, session_id))

    async def no_reply(self, session_id: str) -> set[str]:
        sql = "SELECT message_id FROM prompt_no_reply WHERE session_id = ?"
        cursor = await asyncio.to_thread(self._execute, sql, (session_id,))
        return {row[0] for row in cursor.fetchall()}

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
