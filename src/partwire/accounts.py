"""Users, tokens, grants and share links, as the server sees them (storage/accounts.py's
SQL through the store; partwire/access.py's rule).

A token is looked up at most once a second per token (the CLI that revokes one is
another process: a revoked token stops working within ``TOKEN_TTL_S``). Grants are read
fresh for each check; streams keep their own answers until a ``session.access`` event
says a session's grants changed.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from partwire import ids
from partwire.access import Grants, Principal, Role
from partwire.clock import now_ms
from partwire.errors import NotFoundError
from partwire.schema.event import Draft, SessionAccessChanged, SessionRef
from partwire.storage import accounts as sql
from partwire.storage.connection import Conn

if TYPE_CHECKING:
    from partwire.storage.base import Store

TOKEN_TTL_S = 1.0


class Accounts:
    def __init__(self, store: Store) -> None:
        self.store = store
        self._tokens: dict[str, tuple[float, Principal | None]] = {}
        self._users: tuple[float, bool] = (0.0, False)

    async def has_users(self) -> bool:
        checked, found = self._users
        if time.monotonic() - checked > TOKEN_TTL_S:
            found = await self.store.read_with(sql.has_users)
            self._users = (time.monotonic(), found)
        return found

    async def principal(self, secret: str) -> Principal | None:
        """Who holds this token: None when it is unknown, revoked or expired."""
        cached = self._tokens.get(secret)
        if cached is not None and time.monotonic() - cached[0] <= TOKEN_TTL_S:
            return cached[1]
        row = await self.store.read_with(lambda c: sql.find_token(c, secret))
        found = _principal_of(row)
        if len(self._tokens) > 10_000:
            self._tokens.clear()
        self._tokens[secret] = (time.monotonic(), found)
        return found

    async def grants(self, session_id: str) -> Grants | None:
        return await self.store.read_with(lambda c: sql.grants(c, session_id))

    async def granted_sessions(self, user: str) -> set[str]:
        return await self.store.read_with(lambda c: sql.granted_sessions(c, user))

    async def set_grant(self, session_id: str, user: str, role: Role | None) -> None:
        def change(conn: Conn) -> None:
            if not sql.user_exists(conn, user):
                raise NotFoundError("User", user)
            sql.set_grant(conn, session_id, user, role)

        await self.store.write_with(change, [_changed(session_id)])

    async def session_grants(self, session_id: str) -> list[tuple[str, Role]]:
        return await self.store.read_with(lambda c: sql.session_grants(c, session_id))

    async def share(self, session_id: str) -> str:
        """A read-only share link's secret for the session (a new one each time: the
        stored digest cannot give an old one back)."""
        secret = sql.new_secret()
        row = sql.TokenRow(
            id=ids.ascending("tok"),
            user=None,
            scope="read",
            session_id=session_id,
            created_ms=now_ms(),
            expires_ms=None,
            revoked_ms=None,
        )
        await self.store.write_with(lambda c: sql.add_token(c, row, secret), [])
        return secret

    async def unshare(self, session_id: str) -> int:
        revoked = await self.store.write_with(
            lambda c: sql.revoke_share(c, session_id, now_ms()), [_changed(session_id)]
        )
        self._tokens = {
            k: v for k, v in self._tokens.items() if v[1] is None or v[1].shared != session_id
        }
        return revoked

    async def shared(self, session_id: str) -> bool:
        return (
            await self.store.read_with(lambda c: sql.live_share(c, session_id, now_ms()))
            is not None
        )


def _principal_of(row: sql.TokenRow | None) -> Principal | None:
    if row is None or not row.live(now_ms()):
        return None
    if row.session_id is not None:
        return Principal(name="share", scope="read", shared=row.session_id)
    if row.user is None:
        return None
    return Principal(name=row.user, scope=row.scope, user=row.user)


def _changed(session_id: str) -> Draft:
    return SessionAccessChanged(SessionRef(session_id=session_id))


async def readable(accounts: Accounts, principal: Principal) -> set[str]:
    """The sessions a principal that is no admin may read."""
    user, shared = principal.user, principal.shared
    return await accounts.store.read_with(lambda c: sql.readable_sessions(c, user, shared))
