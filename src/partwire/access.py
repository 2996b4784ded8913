"""Who may do what: the one rule every route and transport asks (``server/authorize.py``).

A request is made by a :class:`Principal`: a user holding a token of some scope, the
server's password (an admin), anyone on loopback while no user exists (the local admin),
or a share link (read-only, one session). A session's :class:`Grants` say which users
may read or write it; a sub-agent's session is reached through its parent's.

- ``admin`` scope: everything, every session.
- ``write`` scope: create sessions (owned by the user), read and drive the sessions the
  user owns or was given ``write`` on, read those given ``read``.
- ``read`` scope: read the sessions the user owns or was given, change nothing.
- A share link reads its one session and the sessions under it.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Literal

Scope = Literal["read", "write", "admin"]
Role = Literal["owner", "write", "read"]
SCOPES: tuple[Scope, ...] = ("read", "write", "admin")
ROLES: tuple[Role, ...] = ("owner", "write", "read")
Action = Literal["read", "write"]

_RANK = {"read": 0, "write": 1, "admin": 2, "owner": 2}


@dataclass(frozen=True)
class Principal:
    """Who a request comes from. ``user`` is None for the password and the local admin;
    ``shared`` is a share link's session."""

    name: str
    scope: Scope
    user: str | None = None
    shared: str | None = None

    @property
    def is_admin(self) -> bool:
        return self.scope == "admin" and self.shared is None

    @property
    def may_create(self) -> bool:
        return self.shared is None and _RANK[self.scope] >= _RANK["write"]


LOCAL_ADMIN = Principal(name="local", scope="admin")


@dataclass(frozen=True)
class Actor:
    """Who is acting in this request, and with what client (web, cli, acp, …)."""

    principal: Principal
    client: str


# set for each request by the server's authentication: who answers an ask, say
acting: ContextVar[Actor | None] = ContextVar("partwire_acting", default=None)


def password_admin(username: str) -> Principal:
    return Principal(name=username, scope="admin")


@dataclass(frozen=True)
class Grants:
    """Who was given a session, itself and the sessions above it (its root last)."""

    lineage: tuple[str, ...]  # the session, its parent, …, its root
    roles: dict[str, Role] = field(default_factory=dict)  # user → the best role held

    def role_of(self, user: str | None) -> Role | None:
        return None if user is None else self.roles.get(user)


def can(principal: Principal, grants: Grants, action: Action) -> bool:
    if principal.is_admin:
        return True
    if principal.shared is not None:
        return action == "read" and principal.shared in grants.lineage
    role = grants.role_of(principal.user)
    if role is None:
        return False
    if action == "read":
        return True
    return _RANK[role] >= _RANK["write"] and _RANK[principal.scope] >= _RANK["write"]


def best_role(roles: list[Role]) -> Role | None:
    return max(roles, key=lambda role: _RANK[role], default=None)
