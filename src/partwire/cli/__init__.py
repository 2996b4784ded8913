"""The command line: ``partwire serve`` and ``partwire run``. Parse, call, render."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from rich.console import Console

from partwire import logs
from partwire.cli.team import TEAM_COMMANDS, add_team_commands, settings_to_expose
from partwire.config import DEFAULT_HOST, DEFAULT_PORT, Settings, load_settings
from partwire.errors import BadRequestError, ConfigError, PartwireError
from partwire.logs import LEVELS
from partwire.version import __version__


def _logging_options() -> argparse.ArgumentParser:
    """--log-level and --print-logs, as opencode names them, on every command."""
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument(
        "--log-level",
        choices=LEVELS,
        default="INFO",
        type=str.upper,
        help="least important log level written (INFO)",
    )
    options.add_argument(
        "--print-logs",
        action="store_true",
        help="print logs to standard error instead of the log file in the data dir",
    )
    return options


def _shared_option(*flags: str, **spec: Any) -> argparse.ArgumentParser:
    """A parent parser holding one option that several commands share."""
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument(*flags, **spec)
    return options


class _Shared:
    """The option groups commands take: logging on all, --project, --attach."""

    def __init__(self) -> None:
        self.logs = _logging_options()
        self.project = _shared_option(
            "--project", type=Path, default=None, help="project directory (cwd)"
        )
        self.attach = _shared_option(
            "--attach",
            metavar="URL",
            type=server_url,
            help="use a running server instead of starting one (http://host:port; host:port works)",
        )


def server_url(value: str) -> str:
    """``--attach``'s URL: ``host:port`` is taken as ``http://host:port``; anything that is
    not an http(s) URL with a host is refused with a line saying so."""
    url = value if "://" in value else f"http://{value}"
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = -1
    if parts.scheme not in ("http", "https") or not parts.hostname or port == -1:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a server address: give http://host:port, e.g. http://127.0.0.1:4096"
        )
    return url.rstrip("/")


Commands = Any  # argparse's _SubParsersAction, private in typeshed


def _add_serve(commands: Commands, shared: _Shared) -> None:
    serve = commands.add_parser(
        "serve",
        parents=[shared.logs, shared.project],
        help="serve the API on a port (default 127.0.0.1:4096)",
    )
    serve.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help="port (4096; 0 picks a free one)"
    )
    serve.add_argument("--hostname", default=DEFAULT_HOST, help="address to listen on (127.0.0.1)")


def _add_run(commands: Commands, shared: _Shared) -> None:
    run = commands.add_parser(
        "run",
        parents=[shared.logs, shared.project, shared.attach],
        help="send one prompt and render the answer live",
    )
    run.add_argument(
        "message", nargs="*", help="the prompt text (standard input, when piped, is appended)"
    )
    run.add_argument("-m", "--model", metavar="PROVIDER/MODEL", help="e.g. openai/gpt-4o")
    run.add_argument("--agent", default=None, help="build (default), plan, or another agent")
    run.add_argument("-s", "--session", metavar="ID", help="continue this session")
    run.add_argument(
        "-c",
        "--continue",
        dest="continue_",
        action="store_true",
        help="continue the last session of this project",
    )
    run.add_argument(
        "--at",
        metavar="PART",
        help="fork the session (-s or -c) at this part and prompt the fork",
    )
    run.add_argument("--title", help="the session's title")
    run.add_argument("--yes", action="store_true", help="allow every permission ask once")
    run.add_argument(
        "--watch",
        action="store_true",
        help="send nothing: render the session's next run (ours or an external loop's) "
        "live, answering its asks, until it ends (needs -s or -c)",
    )
    run.add_argument(
        "--format",
        choices=("default", "json"),
        default="default",
        help="default: the answer rendered; json: one JSON event a line (opencode's shape)",
    )


def _add_session_commands(commands: Commands, shared: _Shared) -> None:
    """sessions, export and import: they read or write stored sessions."""
    parents = [shared.logs, shared.project, shared.attach]
    sessions = commands.add_parser(
        "sessions", parents=parents, help="list this project's recent sessions"
    )
    sessions.add_argument("-n", "--limit", type=int, default=20, help="how many (20)")
    export = commands.add_parser(
        "export", parents=parents, help="write a whole session as JSON or markdown"
    )
    export.add_argument("session", metavar="ID", help="the session (see `partwire sessions`)")
    export.add_argument(
        "--format", choices=("json", "markdown"), default="json", help="json (default) or markdown"
    )
    export.add_argument("-o", "--output", type=Path, help="write to this file, not stdout")
    imported = commands.add_parser(
        "import", parents=parents, help="load a session that `export` wrote"
    )
    imported.add_argument("file", help="the JSON export (- reads standard input)")
    parts = commands.add_parser(
        "parts", parents=parents, help="list a session's parts (where to fork or rewind)"
    )
    parts.add_argument("session", metavar="ID", help="the session")
    fork = commands.add_parser(
        "fork", parents=parents, help="copy a session, whole or up to one of its parts"
    )
    fork.add_argument("session", metavar="ID", help="the session")
    fork.add_argument("--at", metavar="PART", help="up to this part (see `partwire parts`)")
    fork.add_argument(
        "--before", action="store_true", help="stop just before the part, not after it"
    )


def _add_replay_and_eval(commands: Commands, shared: _Shared) -> None:
    parents = [shared.logs, shared.project, shared.attach]
    formats = ("table", "json", "markdown")
    replay = commands.add_parser(
        "replay",
        parents=parents,
        help="replay a session's prompts with another model, then compare the two",
    )
    replay.add_argument("session", metavar="ID", help="the recorded session")
    replay.add_argument(
        "-m", "--model", required=True, metavar="PROVIDER/MODEL", help="the model to replay with"
    )
    replay.add_argument(
        "--tools",
        choices=("recorded", "live"),
        default="recorded",
        help="recorded: answer matching calls from the recording (default); "
        "live: run them in a scratch git worktree",
    )
    replay.add_argument(
        "--format", choices=formats, default="table", help="the comparison: table, json, markdown"
    )
    evaluate = commands.add_parser(
        "eval",
        parents=parents,
        help="compare two sessions prompt by prompt, or replay a tagged set with a model",
    )
    evaluate.add_argument("sessions", nargs="*", metavar="ID", help="two sessions: A B")
    evaluate.add_argument("--tag", help="replay every session with this tag (metadata.tags)")
    evaluate.add_argument("-m", "--model", metavar="PROVIDER/MODEL", help="with --tag")
    evaluate.add_argument(
        "--tools",
        choices=("recorded", "live"),
        default="recorded",
        help="with --tag: how the replays answer tool calls (as partwire replay)",
    )
    evaluate.add_argument(
        "--format", choices=formats, default="table", help="table (default), json or markdown"
    )


def _add_ingest(commands: Commands, shared: _Shared) -> None:
    ingest = commands.add_parser(
        "ingest",
        parents=[shared.logs, shared.project, shared.attach],
        help="record another agent runtime's JSON lines (stdin or a command) into a session",
        description="Reads JSON lines from standard input, or from COMMAND's output after --, "
        "and records them live as a message of a session.",
    )
    ingest.add_argument(
        "--from",
        dest="source_format",
        required=True,
        metavar="FORMAT",
        help="openai-chat, openai-responses, anthropic, claude-code, opencode or partwire",
    )
    ingest.add_argument("-s", "--session", help="the session (default: a new one)")
    ingest.add_argument("--title", help="the new session's title")
    ingest.add_argument("--prompt", help="the user message the first answer replies to")
    ingest.add_argument(
        "command_line",
        nargs=argparse.REMAINDER,
        metavar="-- COMMAND",
        help="run this and read its output",
    )


def _add_acp(commands: Commands, shared: _Shared) -> None:
    commands.add_parser(
        "acp",
        parents=[shared.logs, shared.project, shared.attach],
        help="speak the Agent Client Protocol on stdio, for editors (Zed, JetBrains, Neovim)",
        description="Runs partwire as an ACP agent on standard input and output. The loop "
        "runs in this process, or in the server --attach names (sessions shared live).",
    )


def _add_models_and_db(commands: Commands, shared: _Shared) -> None:
    models = commands.add_parser(
        "models",
        parents=[shared.logs, shared.project],
        help="list the models that are configured and usable",
    )
    models.add_argument("--all", action="store_true", help="every model of every catalogue")
    db = commands.add_parser("db", help="check or back up the database")
    db_commands = db.add_subparsers(dest="db_command", required=True)
    db_commands.add_parser(
        "check", parents=[shared.logs], help="integrity and schema version of the database"
    )
    backup = db_commands.add_parser(
        "backup", parents=[shared.logs], help="copy the database (safe while serving)"
    )
    backup.add_argument("path", type=Path, help="the new file")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="partwire",
        description="An agent-session server: `partwire serve` for the web UI and the API, "
        "`partwire run PROMPT` to ask from the terminal.",
    )
    parser.add_argument(
        "-V", "--version", action="version", version=f"partwire {__version__}", help="the version"
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    shared = _Shared()
    for add in (
        _add_serve,
        _add_run,
        _add_session_commands,
        _add_ingest,
        _add_replay_and_eval,
        _add_acp,
        _add_models_and_db,
        add_team_commands,
    ):
        add(commands, shared)
    return parser


def _serve(args: argparse.Namespace, settings: Settings, err: Console) -> int:
    from partwire.server.auth import is_loopback
    from partwire.server.runner import serve

    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port {args.port} is not a port: use 1-65535 (0 picks a free one)")
    if not is_loopback(args.hostname):
        exposed = settings_to_expose(settings, args.hostname, err)
        if exposed is None:
            return 2
        settings = exposed

    def banner(port: int) -> None:  # once the port is bound: the real one, also for --port 0
        err.print(f"partwire {__version__} on http://{args.hostname}:{port}")
        err.print(f"data: {_database(settings)}  project: {settings.project_dir}")
        err.print(f"default model: {settings.default_model}", highlight=False)
        for key in settings.ignored_keys:
            err.print(
                f"[yellow]ignored:[/yellow] {key} in the project's partwire.json (only your "
                "own config or the command line may set it)",
                highlight=False,
            )

    if not is_loopback(args.hostname) and args.hostname not in ("0.0.0.0", "::"):
        hosts = (*settings.allowed_hosts, args.hostname)
        settings = dataclasses.replace(settings, allowed_hosts=hosts)
    serve(settings, args.hostname, args.port, on_start=banner)
    return 0


def _database(settings: Settings) -> str:
    if settings.database_url:
        from partwire.storage.pg_connection import redacted

        events = f", events via Redis {redacted(settings.redis_url)}" if settings.redis_url else ""
        return redacted(settings.database_url) + events
    return str(settings.database_path)


def _db(args: argparse.Namespace, settings: Settings, err: Console) -> int:
    from partwire.cli import db

    if settings.database_url:
        raise ConfigError(
            "`partwire db` checks and backs up the SQLite file; PARTWIRE_DATABASE_URL names "
            "a Postgres database: use Postgres' own tools (pg_amcheck, pg_dump)"
        )
    out = Console(highlight=False, soft_wrap=True)
    if args.db_command == "check":
        return db.check(settings, out)
    return db.backup_to(settings, args.path, out)


def _sessions(args: argparse.Namespace, settings: Settings, err: Console) -> int:
    from partwire.cli.sessions import list_sessions

    return asyncio.run(list_sessions(settings, args.attach, args.limit))


def _export(args: argparse.Namespace, settings: Settings, err: Console) -> int:
    from partwire.cli.transfer import export_session

    return asyncio.run(
        export_session(settings, args.attach, args.session, args.format, args.output)
    )


def _import(args: argparse.Namespace, settings: Settings, err: Console) -> int:
    from partwire.cli.transfer import import_session, read_export

    export = read_export(args.file)  # a bad file is refused before any server starts
    return asyncio.run(import_session(settings, args.attach, export))


def _parts(args: argparse.Namespace, settings: Settings, err: Console) -> int:
    from partwire.cli.sessions import list_parts

    return asyncio.run(list_parts(settings, args.attach, args.session))


def _fork(args: argparse.Namespace, settings: Settings, err: Console) -> int:
    from partwire.cli.sessions import fork_session

    if args.before and not args.at:
        raise BadRequestError("--before needs --at PART")
    return asyncio.run(fork_session(settings, args.attach, args.session, args.at, args.before))


def _replay(args: argparse.Namespace, settings: Settings, err: Console) -> int:
    from partwire.cli.evaluate import replay_session

    return asyncio.run(
        replay_session(settings, args.attach, args.session, args.model, args.tools, args.format)
    )


def _eval(args: argparse.Namespace, settings: Settings, err: Console) -> int:
    from partwire.cli.evaluate import eval_sessions, eval_tagged

    if args.tag is not None:
        if args.sessions or not args.model:
            raise BadRequestError("--tag replays a set with a model: give --model, no IDs")
        return asyncio.run(
            eval_tagged(settings, args.attach, args.tag, args.model, args.tools, args.format)
        )
    if len(args.sessions) != 2 or args.model:
        raise BadRequestError("eval compares two sessions: partwire eval A B (or --tag T -m M)")
    a_id, b_id = args.sessions
    return asyncio.run(eval_sessions(settings, args.attach, a_id, b_id, args.format))


def _models(args: argparse.Namespace, settings: Settings, err: Console) -> int:
    from partwire.cli.models import print_models

    return print_models(settings, Console(highlight=False), show_all=args.all)


def _run(args: argparse.Namespace, settings: Settings, err: Console) -> int:
    from partwire.cli.run import run_prompt

    return asyncio.run(run_prompt(args, settings))


def _ingest(args: argparse.Namespace, settings: Settings, err: Console) -> int:
    from partwire.cli.ingest import run_ingest

    command = args.command_line[1:] if args.command_line[:1] == ["--"] else args.command_line
    return asyncio.run(
        run_ingest(
            settings,
            args.attach,
            args.source_format,
            args.session,
            args.title,
            args.prompt,
            command,
        )
    )


def _acp(args: argparse.Namespace, settings: Settings, err: Console) -> int:
    from partwire.cli.acp import serve_acp

    return asyncio.run(serve_acp(settings, args.attach))


COMMANDS = {
    **TEAM_COMMANDS,
    "serve": _serve,
    "db": _db,
    "sessions": _sessions,
    "export": _export,
    "import": _import,
    "parts": _parts,
    "fork": _fork,
    "replay": _replay,
    "eval": _eval,
    "models": _models,
    "run": _run,
    "ingest": _ingest,
    "acp": _acp,
}


def _project(args: argparse.Namespace) -> Path | None:
    project: Path | None = getattr(args, "project", None)
    if project is not None and not project.is_dir():
        raise ConfigError(f"--project {project}: no such directory")
    return project


def _start_logging(args: argparse.Namespace, settings: Settings) -> None:
    try:
        logs.setup(args.log_level, args.print_logs, settings.data_dir / "log")
    except OSError:  # no log file: the data dir's own check names the problem next
        logs.setup(args.log_level, True, settings.data_dir / "log")


def _unreachable(exc: Exception) -> str:
    """An HTTP failure talking to a server, in one line naming where."""
    try:
        where = f" at {exc.request.url.scheme}://{exc.request.url.netloc.decode()}"  # type: ignore[attr-defined]
    except (AttributeError, RuntimeError):
        where = ""
    return f"cannot reach the server{where}: {exc} (is `partwire serve` running there?)"


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    err = Console(stderr=True)
    try:
        settings = load_settings(project_dir=_project(args))
        _start_logging(args, settings)
        return COMMANDS[args.command](args, settings, err)
    except PartwireError as exc:
        err.print(f"[red]error:[/red] {exc.message}", highlight=False, soft_wrap=True)
        return 1
    except Exception as exc:
        httpx = sys.modules.get("httpx")  # not imported: not what failed
        if httpx is None or not isinstance(exc, httpx.HTTPError):
            raise
        err.print(f"[red]error:[/red] {_unreachable(exc)}", highlight=False, soft_wrap=True)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
