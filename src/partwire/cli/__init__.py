"""The command line: ``partwire serve`` and ``partwire run``. Parse, call, render."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys
from pathlib import Path

import httpx
from rich.console import Console

from partwire import __version__
from partwire.config import DEFAULT_HOST, DEFAULT_PORT, load_settings
from partwire.errors import PartwireError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="partwire", description=__doc__)
    parser.add_argument("--version", action="version", version=f"partwire {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="serve the API on a port (default 127.0.0.1:4096)")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT)
    serve.add_argument("--hostname", default=DEFAULT_HOST)
    serve.add_argument("--project", type=Path, default=None, help="project directory (cwd)")

    run = commands.add_parser("run", help="send one prompt and render the answer live")
    run.add_argument("message", nargs="+", help="the prompt text")
    run.add_argument("--attach", metavar="URL", help="use a running server instead of a new one")
    run.add_argument("-m", "--model", metavar="PROVIDER/MODEL", help="e.g. openai/gpt-4o")
    run.add_argument("--agent", default=None)
    run.add_argument("--session", metavar="ID", help="continue this session")
    run.add_argument("--yes", action="store_true", help="allow every permission ask once")
    run.add_argument("--project", type=Path, default=None, help="project directory (cwd)")
    models = commands.add_parser("models", help="list the models that are configured and usable")
    models.add_argument("--project", type=Path, default=None, help="project directory (cwd)")

    db = commands.add_parser("db", help="check or back up the database")
    db_commands = db.add_subparsers(dest="db_command", required=True)
    db_commands.add_parser("check", help="integrity and schema version of the database")
    backup = db_commands.add_parser("backup", help="copy the database (safe while serving)")
    backup.add_argument("path", type=Path, help="the new file")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    err = Console(stderr=True)
    try:
        settings = load_settings(project_dir=getattr(args, "project", None))
        if args.command == "serve":
            from partwire.server.auth import is_loopback
            from partwire.server.runner import serve

            if not is_loopback(args.hostname) and not settings.server_password:
                err.print(
                    f"[red]error:[/red] refusing to listen on {args.hostname} without a password: "
                    "anyone who can reach it could run commands in your project. "
                    "Set PARTWIRE_SERVER_PASSWORD, or keep the default 127.0.0.1.",
                    highlight=False,
                )
                return 2

            def banner() -> None:
                err.print(f"partwire {__version__} on http://{args.hostname}:{args.port}")
                err.print(f"data: {settings.database_path}  project: {settings.project_dir}")

            if not is_loopback(args.hostname) and args.hostname not in ("0.0.0.0", "::"):
                hosts = (*settings.allowed_hosts, args.hostname)
                settings = dataclasses.replace(settings, allowed_hosts=hosts)
            serve(settings, args.hostname, args.port, on_start=banner)
            return 0
        if args.command == "db":
            from partwire.cli import db

            out = Console(highlight=False, soft_wrap=True)
            if args.db_command == "check":
                return db.check(settings, out)
            return db.backup_to(settings, args.path, out)
        if args.command == "models":
            from partwire.cli.models import print_models

            return print_models(settings, Console(highlight=False))
        from partwire.cli.run import run_prompt

        if not settings.providers and not args.model and not args.attach:
            err.print(
                "[dim]No provider is configured: using the offline demo model "
                "(see the README to add one).[/dim]"
            )
        return asyncio.run(run_prompt(args, settings))
    except PartwireError as exc:
        err.print(f"[red]error:[/red] {exc.message}", highlight=False, soft_wrap=True)
        return 1
    except httpx.HTTPError as exc:
        err.print(f"[red]error:[/red] cannot reach the server: {exc}", highlight=False)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
