"""The command line for a team: ``users``, ``token``, ``access`` and ``share`` (parsers
and dispatch; the work is in cli/accounts.py and cli/sessions.py, loaded when run)."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
from collections.abc import Callable
from typing import Any

from rich.console import Console

from partwire.config import Settings
from partwire.errors import BadRequestError


def add_team_commands(commands: Any, shared: Any) -> None:
    """The parsers; ``shared`` holds the option groups (logs, project, attach)."""
    users = commands.add_parser("users", help="a team's users (tokens: partwire token)")
    user_commands = users.add_subparsers(dest="users_command", required=True)
    add = user_commands.add_parser("add", parents=[shared.logs], help="add a user")
    add.add_argument("name", help="the user's name (letters, digits, . _ @ -)")
    remove = user_commands.add_parser(
        "remove", parents=[shared.logs], help="remove a user, their tokens and grants"
    )
    remove.add_argument("name", help="the user")
    user_commands.add_parser("list", parents=[shared.logs], help="list the users")
    token = commands.add_parser("token", help="make, list or revoke users' tokens")
    token_commands = token.add_subparsers(dest="token_command", required=True)
    create = token_commands.add_parser(
        "create", parents=[shared.logs], help="a new token, printed once"
    )
    create.add_argument("--user", required=True, help="whose token")
    create.add_argument(
        "--scope",
        choices=("read", "write", "admin"),
        default="write",
        help="read: read their sessions; write (default): also make and drive them; "
        "admin: everything on the server",
    )
    create.add_argument("--expires", help="30d, 12h, 90m or a date (default: never)")
    listed = token_commands.add_parser("list", parents=[shared.logs], help="list tokens")
    listed.add_argument("--user", help="only this user's")
    revoke = token_commands.add_parser("revoke", parents=[shared.logs], help="end a token")
    revoke.add_argument("id", help="the token's id (tok_…, see partwire token list)")
    parents = [shared.logs, shared.project, shared.attach]
    access = commands.add_parser(
        "access", parents=parents, help="who may read or write a session; give or take access"
    )
    access.add_argument("session", metavar="ID", help="the session")
    access.add_argument("--user", help="the user to give or take access")
    access.add_argument("--role", choices=("read", "write", "none"), help="with --user")
    share = commands.add_parser(
        "share", parents=parents, help="a read-only link to a session (--end: end its links)"
    )
    share.add_argument("session", metavar="ID", help="the session")
    share.add_argument("--end", action="store_true", help="end every link of the session")


def _users(args: argparse.Namespace, settings: Settings, err: Console) -> int:
    from partwire.cli import accounts

    out = Console(highlight=False, soft_wrap=True)
    if args.users_command == "add":
        return accounts.add_user(settings, args.name, out)
    if args.users_command == "remove":
        return accounts.remove_user(settings, args.name, out)
    return accounts.list_users(settings, out)


def _token(args: argparse.Namespace, settings: Settings, err: Console) -> int:
    from partwire.cli import accounts

    out = Console(highlight=False, soft_wrap=True)
    if args.token_command == "create":
        return accounts.create_token(settings, args.user, args.scope, args.expires)
    if args.token_command == "revoke":
        return accounts.revoke_token(settings, args.id, out)
    return accounts.list_tokens(settings, args.user, out)


def _access(args: argparse.Namespace, settings: Settings, err: Console) -> int:
    from partwire.cli.sessions import session_access

    if (args.user is None) != (args.role is None):
        raise BadRequestError("--user and --role go together")
    role = None if args.role in (None, "none") else args.role
    return asyncio.run(
        session_access(settings, args.attach, args.session, args.user, role, args.role == "none")
    )


def _share(args: argparse.Namespace, settings: Settings, err: Console) -> int:
    from partwire.cli.sessions import share_session

    return asyncio.run(share_session(settings, args.attach, args.session, args.end))


TEAM_COMMANDS: dict[str, Callable[[argparse.Namespace, Settings, Console], int]] = {
    "users": _users,
    "token": _token,
    "access": _access,
    "share": _share,
}


def has_users(settings: Settings) -> bool:
    from partwire.cli.accounts import database
    from partwire.storage.accounts import has_users

    with database(settings) as conn:
        return has_users(conn)


def settings_to_expose(settings: Settings, hostname: str, err: Console) -> Settings | None:
    """The settings to listen beyond loopback with (no one is the local admin there), or
    None, said why, without users or a password."""
    if not settings.server_password and not has_users(settings):
        err.print(
            f"[red]error:[/red] refusing to listen on {hostname} without a password "
            "or users: anyone who can reach it could run commands in your project. "
            "Add users (partwire users add NAME; partwire token create --user NAME), set "
            "PARTWIRE_SERVER_PASSWORD, or keep the default 127.0.0.1.",
            highlight=False,
        )
        return None
    return dataclasses.replace(settings, open_locally=False)
