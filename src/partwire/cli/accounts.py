"""``partwire users …`` and ``partwire token …``: a team's users and their tokens, written
straight to the database (SQLite's file or PARTWIRE_DATABASE_URL), a server running or
not. A token is printed once; only its SHA-256 is kept."""

from __future__ import annotations

import contextlib
import re
import sqlite3
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rich.console import Console

from partwire import ids
from partwire.access import Scope
from partwire.clock import now_ms
from partwire.config import Settings
from partwire.errors import BadRequestError, StorageError
from partwire.storage import accounts as sql
from partwire.storage.connection import Conn
from partwire.storage.migrations import LATEST_VERSION

USER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")
_SPAN = re.compile(r"^(\d+)([mhd])$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days"}


def expiry_ms(text: str | None, now: int) -> int | None:
    """``--expires``: ``30d``, ``12h``, ``90m``, or a date (``2027-01-31``, UTC)."""
    if text is None:
        return None
    span = _SPAN.match(text.strip())
    if span is not None:
        delta = timedelta(**{_UNITS[span.group(2)]: int(span.group(1))})
        return now + int(delta.total_seconds() * 1000)
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise BadRequestError(
            f"--expires {text!r}: give 30d, 12h, 90m or a date such as 2027-01-31"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    found = int(when.timestamp() * 1000)
    if found <= now:
        raise BadRequestError(f"--expires {text!r} is in the past")
    return found


def check_name(name: str) -> str:
    if not USER_NAME.match(name):
        raise BadRequestError(
            f"user name {name!r}: use letters, digits and . _ @ - (up to 64), "
            "starting with a letter or digit"
        )
    return name


@contextlib.contextmanager
def database(settings: Settings) -> Iterator[Conn]:
    """A connection to the server's database, at the newest schema, committing on exit."""
    if settings.database_url:
        from partwire.storage.pg_connection import connect
        from partwire.storage.postgres import schema_version

        conn = connect(settings.database_url)
        try:
            if schema_version(conn) < LATEST_VERSION:
                raise StorageError(
                    "the database is not at this partwire's schema yet: start "
                    "`partwire serve` once with it, then add users"
                )
            with conn:
                yield conn
        finally:
            conn.close()
        return
    from partwire.storage.health import schema_version as sqlite_version
    from partwire.storage.sqlite import _connect, prepare

    path = settings.database_path
    if not path.exists() or _version(path, sqlite_version) < LATEST_VERSION:
        prepare(path)  # made, or migrated, as a server would
    lite = _connect(path)
    try:
        with lite:
            yield lite
    finally:
        lite.close()


def _version(path: Path, read: Callable[[sqlite3.Connection], int]) -> int:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return read(conn)


def add_user(settings: Settings, name: str, out: Console) -> int:
    with database(settings) as conn:
        sql.add_user(conn, check_name(name), now_ms())
    out.print(f"added user {name}; give them a token: partwire token create --user {name}")
    return 0


def remove_user(settings: Settings, name: str, out: Console) -> int:
    with database(settings) as conn:
        sql.remove_user(conn, name)
    out.print(f"removed user {name}, their tokens and what was shared with them")
    return 0


def list_users(settings: Settings, out: Console) -> int:
    with database(settings) as conn:
        users = sql.list_users(conn)
    if not users:
        out.print("no users: on loopback, partwire serve needs no sign-in")
    for name, created in users:
        out.print(f"{name}  added {_when(created)}")
    return 0


def create_token(settings: Settings, user: str, scope: Scope, expires: str | None) -> int:
    now = now_ms()
    row = sql.TokenRow(
        id=ids.ascending("tok"),
        user=user,
        scope=scope,
        session_id=None,
        created_ms=now,
        expires_ms=expiry_ms(expires, now),
        revoked_ms=None,
    )
    secret = sql.new_secret()
    with database(settings) as conn:
        if not sql.user_exists(conn, user):
            raise BadRequestError(f"no user {user!r}: partwire users add {user}")
        sql.add_token(conn, row, secret)
    print(secret)  # alone on stdout, for scripts: TOKEN=$(partwire token create …)
    until = f", until {_when(row.expires_ms)}" if row.expires_ms else ""
    Console(stderr=True, highlight=False).print(
        f"[dim]token {row.id} for {user} ({scope}{until}); shown once: keep it now. "
        "Send it as Authorization: Bearer, or set PARTWIRE_TOKEN for the CLI.[/dim]",
    )
    return 0


def list_tokens(settings: Settings, user: str | None, out: Console) -> int:
    with database(settings) as conn:
        tokens = sql.list_tokens(conn, user)
    now = now_ms()
    for token in tokens:
        whose = token.user or f"share link of {token.session_id}"
        state = "live" if token.live(now) else "revoked" if token.revoked_ms else "expired"
        until = f" until {_when(token.expires_ms)}" if token.expires_ms else ""
        out.print(f"{token.id}  {whose}  {token.scope}  {state}{until}")
    if not tokens:
        out.print("no tokens")
    return 0


def revoke_token(settings: Settings, token_id: str, out: Console) -> int:
    with database(settings) as conn:
        token = sql.revoke_token(conn, token_id, now_ms())
    out.print(f"revoked {token.id} ({token.user or 'share link'}); servers refuse it within 1 s")
    return 0


def _when(ms: int | None) -> str:
    if ms is None:
        return "never"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M UTC")
