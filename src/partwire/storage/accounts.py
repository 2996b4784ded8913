"""Users, tokens and session grants in SQL: functions of one connection, run by the
server's store (``Store.read_with`` / ``write_with``) and by the CLI on its own
connection. Only a SHA-256 of a token is stored."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from partwire.access import Grants, Role, Scope, best_role
from partwire.errors import BadRequestError, NotFoundError
from partwire.storage.connection import Conn

TOKEN_PREFIX = "pwt_"
_LINEAGE_LIMIT = 64  # parents followed at most (a cycle cannot be made, but never loop)


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def new_secret() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


@dataclass(frozen=True)
class TokenRow:
    id: str
    user: str | None
    scope: Scope
    session_id: str | None  # a share link's session
    created_ms: int
    expires_ms: int | None
    revoked_ms: int | None

    def live(self, now: int) -> bool:
        return self.revoked_ms is None and (self.expires_ms is None or now < self.expires_ms)


_TOKEN_COLUMNS = "id, user_name, scope, session_id, created_ms, expires_ms, revoked_ms"


def has_users(conn: Conn) -> bool:
    return conn.execute("SELECT 1 FROM app_user LIMIT 1").fetchone() is not None


def user_exists(conn: Conn, name: str) -> bool:
    return conn.execute("SELECT 1 FROM app_user WHERE name = ?", (name,)).fetchone() is not None


def add_user(conn: Conn, name: str, now: int) -> None:
    if user_exists(conn, name):
        raise BadRequestError(f"user {name!r} exists already", field="name")
    conn.execute("INSERT INTO app_user (name, created_ms) VALUES (?, ?)", (name, now))


def remove_user(conn: Conn, name: str) -> None:
    """The user, their tokens and their grants (sessions they own stay, for admins)."""
    if not user_exists(conn, name):
        raise NotFoundError("User", name)
    conn.execute("DELETE FROM api_token WHERE user_name = ?", (name,))
    conn.execute("DELETE FROM session_grant WHERE user_name = ?", (name,))
    conn.execute("DELETE FROM app_user WHERE name = ?", (name,))


def list_users(conn: Conn) -> list[tuple[str, int]]:
    return [
        (r[0], int(r[1]))
        for r in conn.execute("SELECT name, created_ms FROM app_user ORDER BY name")
    ]


def add_token(conn: Conn, row: TokenRow, secret: str) -> None:
    conn.execute(
        f"INSERT INTO api_token ({_TOKEN_COLUMNS}, digest) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            row.id,
            row.user,
            row.scope,
            row.session_id,
            row.created_ms,
            row.expires_ms,
            None,
            digest(secret),
        ),
    )


def _token(values: tuple[object, ...]) -> TokenRow:
    token_id, user, scope, session_id, created, expires, revoked = values
    return TokenRow(
        id=str(token_id),
        user=None if user is None else str(user),
        scope=str(scope),  # type: ignore[arg-type]
        session_id=None if session_id is None else str(session_id),
        created_ms=int(str(created)),
        expires_ms=None if expires is None else int(str(expires)),
        revoked_ms=None if revoked is None else int(str(revoked)),
    )


def find_token(conn: Conn, secret: str) -> TokenRow | None:
    row = conn.execute(
        f"SELECT {_TOKEN_COLUMNS} FROM api_token WHERE digest = ?", (digest(secret),)
    ).fetchone()
    return None if row is None else _token(tuple(row))


def list_tokens(conn: Conn, user: str | None = None) -> list[TokenRow]:
    sql = f"SELECT {_TOKEN_COLUMNS} FROM api_token"
    rows = (
        conn.execute(sql + " WHERE user_name = ? ORDER BY created_ms", (user,))
        if user is not None
        else conn.execute(sql + " ORDER BY created_ms")
    )
    return [_token(tuple(r)) for r in rows]


def revoke_token(conn: Conn, token_id: str, now: int) -> TokenRow:
    row = conn.execute(
        f"SELECT {_TOKEN_COLUMNS} FROM api_token WHERE id = ?", (token_id,)
    ).fetchone()
    if row is None:
        raise NotFoundError("Token", token_id)
    conn.execute(
        "UPDATE api_token SET revoked_ms = COALESCE(revoked_ms, ?) WHERE id = ?", (now, token_id)
    )
    return _token(tuple(row))


def revoke_share(conn: Conn, session_id: str, now: int) -> int:
    """Every share link of the session stops working; how many did."""
    return conn.execute(
        "UPDATE api_token SET revoked_ms = ? WHERE session_id = ? AND revoked_ms IS NULL",
        (now, session_id),
    ).rowcount


def live_share(conn: Conn, session_id: str, now: int) -> TokenRow | None:
    rows = conn.execute(
        f"SELECT {_TOKEN_COLUMNS} FROM api_token WHERE session_id = ? AND revoked_ms IS NULL",
        (session_id,),
    ).fetchall()
    found = [t for t in (_token(tuple(r)) for r in rows) if t.live(now)]
    return found[0] if found else None


def grants(conn: Conn, session_id: str) -> Grants | None:
    """The session's lineage and the best role each user holds on it or above it; None
    when there is no such session."""
    lineage: list[str] = []
    current: str | None = session_id
    while current is not None and current not in lineage and len(lineage) < _LINEAGE_LIMIT:
        row = conn.execute("SELECT parent_id FROM session WHERE id = ?", (current,)).fetchone()
        if row is None:
            break
        lineage.append(current)
        current = row[0]
    if not lineage:
        return None
    held: dict[str, list[Role]] = {}
    marks = ",".join("?" * len(lineage))
    for user, role in conn.execute(
        f"SELECT user_name, role FROM session_grant WHERE session_id IN ({marks})", lineage
    ):
        held.setdefault(str(user), []).append(role)
    roles = {user: r for user, found in held.items() if (r := best_role(found)) is not None}
    return Grants(lineage=tuple(lineage), roles=roles)


def granted_sessions(conn: Conn, user: str) -> set[str]:
    """The sessions given to the user directly (their sub-agents' are reached through
    the parent)."""
    rows = conn.execute("SELECT session_id FROM session_grant WHERE user_name = ?", (user,))
    return {str(r[0]) for r in rows}


def set_grant(conn: Conn, session_id: str, user: str, role: Role | None) -> None:
    conn.execute(
        "DELETE FROM session_grant WHERE session_id = ? AND user_name = ?", (session_id, user)
    )
    if role is not None:
        conn.execute(
            "INSERT INTO session_grant (session_id, user_name, role) VALUES (?, ?, ?)",
            (session_id, user, role),
        )


def session_grants(conn: Conn, session_id: str) -> list[tuple[str, Role]]:
    rows = conn.execute(
        "SELECT user_name, role FROM session_grant WHERE session_id = ? ORDER BY user_name",
        (session_id,),
    )
    return [(str(r[0]), r[1]) for r in rows]


def readable_sessions(conn: Conn, user: str | None, shared: str | None) -> set[str]:
    """The sessions given to the user (or the share link's one) and every session under
    them."""
    roots = {shared} if shared is not None else granted_sessions(conn, user) if user else set()
    if not roots:
        return set()
    children: dict[str, list[str]] = {}
    for session_id, parent_id in conn.execute(
        "SELECT id, parent_id FROM session WHERE parent_id IS NOT NULL"
    ):
        children.setdefault(str(parent_id), []).append(str(session_id))
    found: set[str] = set()
    pending = [r for r in roots]
    while pending:
        current = pending.pop()
        if current in found:
            continue
        found.add(current)
        pending.extend(children.get(current, ()))
    exists = {str(r[0]) for r in conn.execute("SELECT id FROM session")}
    return found & exists
