"""``partwire run``: prompt a session and render its answer live; Ctrl-C aborts cleanly."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator

from rich.console import Console

from partwire.cli.asks import Answerer
from partwire.cli.render import Renderer
from partwire.client.http import PartwireClient
from partwire.config import Settings
from partwire.schema.event import Event
from partwire.storage import lock


@contextlib.asynccontextmanager
async def _server(attach: str | None, settings: Settings, console: Console) -> AsyncIterator[str]:
    """The server to talk to: ``--attach``, else the one serving this data dir, else a
    new one in this process (which then holds the data dir's lock)."""
    if attach:
        yield attach
        return
    running = lock.holder(settings.data_dir)
    if running is not None and running.url:
        console.print(f"[dim]attached to the running server {running.url}[/dim]")
        yield running.url
        return
    from partwire.server.runner import serve_in_background

    async with serve_in_background(settings) as url:
        yield url


async def _wait_connected(events: AsyncIterator[Event]) -> None:
    async for event in events:
        if event.type == "server.connected":
            return


async def run_prompt(args: argparse.Namespace, settings: Settings) -> int:
    console = Console(highlight=False)
    auth = (
        (settings.server_username, settings.server_password) if settings.server_password else None
    )
    async with (
        _server(args.attach, settings, Console(stderr=True)) as url,
        PartwireClient(url, auth=auth) as client,
    ):
        session = await (
            client.get_session(args.session) if args.session else client.create_session()
        )
        renderer = Renderer(console, session.id)
        events = client.events()
        await _wait_connected(events)
        interrupted = asyncio.Event()
        loop = asyncio.get_running_loop()
        pending: set[asyncio.Task[bool]] = set()

        def on_interrupt() -> None:
            if interrupted.is_set():
                raise KeyboardInterrupt
            interrupted.set()
            console.print("\n[yellow]aborting…[/yellow]")
            task = loop.create_task(client.abort(session.id))
            pending.add(task)
            task.add_done_callback(pending.discard)

        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(signal.SIGINT, on_interrupt)
        try:
            await client.prompt_async(
                session.id, " ".join(args.message), model=args.model, agent=args.agent
            )
            answerer = Answerer(client, console, auto_allow=args.yes, family={session.id})
            async for event in events:
                renderer.handle(event)
                await answerer.handle(event)
                if event.type == "session.idle" and event.session_id == session.id:
                    break
        finally:
            with contextlib.suppress(NotImplementedError):
                loop.remove_signal_handler(signal.SIGINT)
            await events.aclose()
        renderer.summary(interrupted.is_set())
        if interrupted.is_set():
            return 130
        return 1 if renderer.errors else 0
