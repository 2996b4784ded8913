"""``partwire ingest``: another runtime's JSON lines (stdin, or a command's output) → a session.

Each line goes through the format's converter and on to ``POST /session/{id}/ingest`` as
soon as it is read, so clients watching the session see the message live. A converter
may split the input into several messages (opencode's stream does); each becomes its own
ingest request, in order.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from rich.console import Console

from partwire import processes
from partwire.cli.run import connected
from partwire.client.http import PartwireClient
from partwire.config import Settings
from partwire.errors import BadRequestError
from partwire.protocol.converters import Converter, formats
from partwire.schema.ingest import IngestEvent, IngestStart, StreamError

MAX_LINE_BYTES = 1024 * 1024


class InputError(Exception):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"input line {line}: {message}")


class _Source:
    """Ingest events from JSON lines, read one at a time, with one event of look-ahead."""

    def __init__(self, lines: AsyncIterator[bytes], converter: Converter) -> None:
        self._lines = lines
        self._converter = converter
        self._queue: list[IngestEvent] = []
        self._number = 0
        self._ended = False

    async def next(self) -> IngestEvent | None:
        while not self._queue:
            if self._ended:
                return None
            line = await anext(self._lines, None)
            if line is None:
                self._ended = True
                self._queue += self._converter.end()
                continue
            self._number += 1
            if line.strip():
                self._queue += self._convert(line)
        return self._queue.pop(0)

    def push_back(self, event: IngestEvent) -> None:
        self._queue.insert(0, event)

    def _convert(self, line: bytes) -> list[IngestEvent]:
        try:
            item = json.loads(line)
        except ValueError as exc:
            raise InputError(self._number, f"not JSON ({exc})") from None
        try:
            return self._converter.feed(item)
        except ValueError as exc:  # the native format validates each line
            raise InputError(self._number, str(exc).splitlines()[0]) from None


async def stdin_lines() -> AsyncIterator[bytes]:
    while line := await asyncio.to_thread(sys.stdin.buffer.readline, MAX_LINE_BYTES):
        yield line


async def _process_lines(process: asyncio.subprocess.Process) -> AsyncIterator[bytes]:
    assert process.stdout is not None
    while line := await process.stdout.readline():
        yield line


async def ingest_input(
    client: PartwireClient,
    session_id: str,
    lines: AsyncIterator[bytes],
    converter: Converter,
    prompt: str | None,
    ended: Callable[[], Awaitable[str | None]] | None = None,
) -> tuple[int, str | None]:
    """Send every message the lines hold; (messages sent, the error that stopped it).
    ``ended`` is asked at the end of the input whether it ended in failure."""
    source = _Source(lines, converter)
    failure: list[str] = []
    sent = 0
    first = await _next(source, failure)
    while first is not None:
        start = first if isinstance(first, IngestStart) else IngestStart(prompt=prompt)
        if not isinstance(first, IngestStart):
            source.push_back(first)
        elif start.prompt is None and prompt is not None:  # the stream named no prompt
            start = start.model_copy(update={"prompt": prompt})
        prompt = None  # only the first message answers it

        async def body(start: IngestStart = start) -> AsyncIterator[dict[str, Any]]:
            yield start.wire()
            while (event := await _next(source, failure)) is not None:
                if isinstance(event, IngestStart):
                    source.push_back(event)
                    return
                yield event.wire()
            if not failure and ended is not None and (problem := await ended()):
                failure.append(problem)
            if failure:
                yield StreamError(message=failure[0]).wire()

        await client.ingest(session_id, body())
        sent += 1
        first = None if failure else await _next(source, failure)
    return sent, failure[0] if failure else None


async def _next(source: _Source, failure: list[str]) -> IngestEvent | None:
    if failure:
        return None
    try:
        return await source.next()
    except InputError as exc:
        failure.append(str(exc))
        return None


async def run_ingest(
    settings: Settings,
    attach: str | None,
    source_format: str,
    session_id: str | None,
    title: str | None,
    prompt: str | None,
    command: list[str],
) -> int:
    converters = formats()
    if source_format not in converters:
        known = ", ".join(converters)
        raise BadRequestError(f"--from {source_format}: unknown format; formats: {known}")
    err = Console(stderr=True, highlight=False)
    async with connected(attach, settings, err) as client:
        if session_id is None:
            session_id = (await client.create_session(title)).id
            err.print(f"session {session_id}")
        else:
            await client.get_session(session_id)  # 404 before anything runs
        converter = converters[source_format]()
        if not command:
            sent, failure = await ingest_input(client, session_id, stdin_lines(), converter, prompt)
        else:
            process = await _start(command)

            async def exit_status() -> str | None:
                code = await process.wait()
                return f"{command[0]} exited with status {code}" if code else None

            try:
                sent, failure = await ingest_input(
                    client, session_id, _process_lines(process), converter, prompt, exit_status
                )
            finally:
                if process.returncode is None:  # stopped early: its output is not read
                    await processes.stop(process)
    if failure is not None:
        err.print(f"[red]error:[/red] {failure} (what came before it is stored)")
        return 1
    err.print(f"[dim]{sent} message(s) recorded in {session_id}[/dim]")
    return 0


async def _start(command: list[str]) -> asyncio.subprocess.Process:
    try:
        return await processes.start(*command, stdout=asyncio.subprocess.PIPE)
    except OSError as exc:
        raise BadRequestError(f"cannot run {command[0]}: {exc.strerror or exc}") from None
