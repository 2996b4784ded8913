"""``partwire run``: prompt a session and render its answer live; Ctrl-C aborts cleanly."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import secrets
import signal
import sys
import termios
from collections.abc import AsyncIterator
from typing import Any, TextIO, TypedDict

from rich.console import Console

from partwire.cli.asks import Answerer, Interrupted
from partwire.cli.render import JsonLines, Renderer
from partwire.client.http import PartwireClient
from partwire.config import Settings
from partwire.errors import BadRequestError, NotFoundError, PartwireError
from partwire.schema.event import Event
from partwire.schema.session import Session
from partwire.storage import lock


@contextlib.asynccontextmanager
async def attached_server(
    attach: str | None, settings: Settings, console: Console
) -> AsyncIterator[tuple[str, Credentials]]:
    """The server to talk to and how to sign in: ``--attach``, else the one serving this
    data dir (with PARTWIRE_TOKEN, or the password), else a new one in this process
    (which then holds the data dir's lock; whoever can open the data dir is its admin,
    so it gets a password of its own)."""
    if attach:
        yield attach, credentials_of(settings)
        return
    running = lock.holder(settings.data_dir)
    if running is not None and running.url:
        console.print(f"[dim]attached to the running server {running.url}[/dim]")
        yield running.url, credentials_of(settings)
        return
    from partwire.server.runner import serve_in_background

    own = dataclasses.replace(
        settings, server_password=secrets.token_urlsafe(24), client_token=None, embedded=True
    )
    async with serve_in_background(own) as url:
        yield url, credentials_of(own)


@contextlib.asynccontextmanager
async def connected(
    attach: str | None, settings: Settings, console: Console, kind: str = "cli"
) -> AsyncIterator[PartwireClient]:
    """A client of the server to talk to (see ``attached_server``), in this project;
    ``kind`` is what the server is told it is (cli, acp)."""
    directory = str(settings.project_dir)
    async with (
        attached_server(attach, settings, console) as (url, credentials),
        PartwireClient(url, directory=directory, client_kind=kind, **credentials) as client,
    ):
        yield client


async def _wait_connected(events: AsyncIterator[Event]) -> None:
    async for event in events:
        if event.type == "server.connected":
            return


def prompt_text(words: list[str], stdin: TextIO) -> str:
    """The prompt: the words given, then standard input when it is not a terminal
    (``cat f | partwire run "summarize"``). Blank is an error before anything is made."""
    text = " ".join(words).strip()
    if not stdin.isatty():
        piped = stdin.read().strip()
        text = f"{text}\n\n{piped}" if text and piped else text or piped
    if not text:
        raise BadRequestError("the prompt is empty: give it as arguments or on standard input")
    return text


class Credentials(TypedDict, total=False):
    auth: tuple[str, str]
    token: str


def credentials_of(settings: Settings) -> Credentials:
    """PARTWIRE_TOKEN when set, else the server's password when set."""
    if settings.client_token:
        return {"token": settings.client_token}
    if settings.server_password:
        return {"auth": (settings.server_username, settings.server_password)}
    return {}


async def _last_session(client: PartwireClient, settings: Settings) -> Session:
    """The most recently updated top-level session of this project (``--continue``)."""
    project = str(settings.project_dir)
    mine = [
        s for s in await client.list_sessions() if s.directory == project and s.parent_id is None
    ]
    if not mine:
        raise NotFoundError("Session", f"(none yet in {project}; drop --continue)")
    return max(mine, key=lambda s: s.time.updated)


async def _session_for(
    client: PartwireClient, args: argparse.Namespace, settings: Settings
) -> tuple[Session, bool]:
    """The session to prompt, and whether it was made for this run (a new one, or a
    fork ``--at`` a part)."""
    if args.session:
        session = await client.get_session(args.session)
    elif args.continue_:
        session = await _last_session(client, settings)
    else:
        return await client.create_session(title=args.title), True
    if args.at:
        fork = await client.fork(session.id, part_id=args.at)
        if args.title:
            fork = await client.update_session(fork.id, title=args.title)
        return fork, True
    if args.title:
        session = await client.update_session(session.id, title=args.title)
    return session, False


def _renderer(args: argparse.Namespace, out: Console, err: Console, session_id: str) -> Renderer:
    if args.format == "json":
        return JsonLines(sys.stdout, err, session_id)
    return Renderer(out, err, session_id)


def _quiet_ctrl_c() -> list[Any] | None:
    """Stop the terminal echoing ``^C`` into the live region (it would shift it a line,
    leaving a stray copy of its first line); returns the settings to restore."""
    if not sys.stdin.isatty():
        return None
    try:
        saved = termios.tcgetattr(sys.stdin.fileno())
        quiet = [*saved[:3], saved[3] & ~termios.ECHOCTL, *saved[4:]]
        termios.tcsetattr(sys.stdin.fileno(), termios.TCSANOW, quiet)
    except (OSError, ValueError, termios.error):
        return None
    return saved


def _restore_echo(saved: list[Any] | None) -> None:
    if saved is not None:
        with contextlib.suppress(OSError, ValueError, termios.error):
            termios.tcsetattr(sys.stdin.fileno(), termios.TCSANOW, saved)


class CtrlC:
    """The first Ctrl-C aborts the session (and ends a prompt that waits for an answer at
    once); a second stops waiting for the abort: the run then shuts down in order."""

    def __init__(
        self, client: PartwireClient, session_id: str, renderer: Renderer, answerer: Answerer
    ) -> None:
        self.client, self.session_id = client, session_id
        self.renderer, self.answerer = renderer, answerer
        self.pressed = False
        self.main = asyncio.current_task()
        self._aborts: set[asyncio.Task[bool]] = set()

    def __enter__(self) -> CtrlC:
        with contextlib.suppress(NotImplementedError):
            asyncio.get_running_loop().add_signal_handler(signal.SIGINT, self._pressed)
        self._echo = _quiet_ctrl_c()
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(NotImplementedError):
            asyncio.get_running_loop().remove_signal_handler(signal.SIGINT)
        _restore_echo(self._echo)

    def _pressed(self) -> None:
        if self.pressed:
            if self.main is not None:
                self.main.cancel()
            return
        self.pressed = True
        self.renderer.pause()
        if not self.answerer.interrupt():
            self.renderer.err.print("[yellow]aborting…[/yellow]")
        task = asyncio.get_running_loop().create_task(self.client.abort(self.session_id))
        self._aborts.add(task)
        task.add_done_callback(self._settled)

    def _settled(self, task: asyncio.Task[bool]) -> None:
        """An abort that failed because the run is already shutting down (a second Ctrl-C
        closed the connection under it) is not news: its outcome is read here, so asyncio
        never prints it as a "Task exception was never retrieved" traceback."""
        self._aborts.discard(task)
        if not task.cancelled():
            task.exception()

    def pressed_twice(self) -> bool:
        """After a CancelledError: True (and the task may go on) if it was ours."""
        if self.main is None or not self.pressed:
            return False
        self.main.uncancel()
        return True

    async def aborted(self) -> None:
        await asyncio.gather(*self._aborts, return_exceptions=True)


async def _follow(
    events: AsyncIterator[Event], session_id: str, renderer: Renderer, answerer: Answerer
) -> None:
    """Render and answer until the session goes idle."""
    renderer.waiting()
    async for event in events:
        renderer.handle(event)
        if event.type in ("permission.asked", "question.asked"):
            renderer.pause()
        await answerer.handle(event)
        if event.type == "session.idle" and event.session_id == session_id:
            return


async def _send(
    client: PartwireClient, session: Session, made: bool, text: str, args: argparse.Namespace
) -> None:
    try:
        await client.prompt_async(session.id, text, model=args.model, agent=args.agent)
    except PartwireError:
        if made:  # a refused prompt leaves no empty session behind
            await client.delete_session(session.id)
        raise


async def run_prompt(args: argparse.Namespace, settings: Settings) -> int:
    out = Console(highlight=False)
    # piped or sent to a file, notes keep their lines whole (a terminal wraps them itself)
    err = Console(stderr=True, highlight=False, soft_wrap=not sys.stderr.isatty())
    if args.watch and (args.message or not (args.session or args.continue_)):
        raise BadRequestError("--watch renders an existing session: give -s ID or -c, no prompt")
    if args.at and (args.watch or not (args.session or args.continue_)):
        raise BadRequestError("--at forks a session and prompts the fork: give -s ID or -c")
    text = "" if args.watch else prompt_text(args.message, sys.stdin)
    async with connected(args.attach, settings, err) as client:
        session, made = await _session_for(client, args, settings)
        err.print(f"[dim]session {session.id}[/dim]")
        renderer = _renderer(args, out, err, session.id)
        answerer = Answerer(client, err, auto_allow=args.yes, family={session.id})
        events = client.events(watch=session.id)
        await _wait_connected(events)
        with CtrlC(client, session.id, renderer, answerer) as ctrl_c:
            try:
                if not args.watch:
                    await _send(client, session, made, text, args)
                await _follow(events, session.id, renderer, answerer)
            except Interrupted:  # Ctrl-C at a prompt: the run ends now, the abort is sent
                await ctrl_c.aborted()
            except asyncio.CancelledError:
                if not ctrl_c.pressed_twice():
                    raise
                await ctrl_c.aborted()
            finally:
                await events.aclose()
        renderer.summary(ctrl_c.pressed)
        if renderer.model.startswith("demo/") and not (args.model or "").startswith("demo/"):
            err.print(
                "[dim]The offline demo model answered: no model provider is configured "
                "(set OPENAI_API_KEY or ANTHROPIC_API_KEY, or see the README).[/dim]"
            )
        if ctrl_c.pressed:
            return 130
        return 1 if renderer.errors else 0
