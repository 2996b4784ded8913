"""Pseudo-terminals (opencode's PTY sessions): a shell a client drives over a WebSocket.

Each terminal keeps the last ``BUFFER_CHARS`` characters of its output, counted from the
start, so a client that reconnects with the cursor it last saw gets exactly what it
missed (``cursor=-1``: nothing old, only what comes next). Output is read on the event
loop with a reader callback (a non-blocking ``read`` of what the kernel already holds);
the process is reaped by asyncio's child watcher. Terminals belong to one project's
instance and end with it; their events are not logged (a restart ends the processes).
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import fcntl
import os
import secrets
import shutil
import signal
import struct
import sys
import termios
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import Field, model_validator

from partwire import ids, processes
from partwire.bus import Bus
from partwire.errors import BadRequestError
from partwire.schema.base import OsText, WireModel
from partwire.schema.event import (
    PtyCreated,
    PtyDeleted,
    PtyExited,
    PtyExitedProps,
    PtyInfoProps,
    PtyRefProps,
    PtyUpdated,
)
from partwire.schema.pty import PtyInfo

BUFFER_CHARS = 1_000_000
READ_BYTES = 65_536
TICKET_SECONDS = 60
LISTENER_BACKLOG = 1_000  # chunks a slow connection may lag before it is dropped
DEFAULT_SIZE = (24, 80)


class PtyNotFound(LookupError):
    def __init__(self, pty_id: str) -> None:
        super().__init__(f"PTY session not found: {pty_id}")
        self.pty_id = pty_id


class PtyCreate(WireModel):
    command: OsText | None = Field(default=None, min_length=1)
    args: list[OsText] | None = None
    cwd: OsText | None = None
    title: str | None = None
    env: dict[OsText, OsText] | None = None

    @model_validator(mode="after")
    def _environment(self) -> PtyCreate:
        """A variable exec cannot set is refused here, not by the exec that would fail."""
        if any(not name or "=" in name for name in self.env or {}):
            raise ValueError("env: a variable's name must be non-empty and without '='")
        return self


class PtySize(WireModel):
    rows: int = Field(gt=0, le=10_000)
    cols: int = Field(gt=0, le=10_000)


class PtyUpdate(WireModel):
    title: str | None = None
    size: PtySize | None = None


@dataclass
class Terminal:
    info: PtyInfo
    master: int
    process: asyncio.subprocess.Process
    decoder: codecs.IncrementalDecoder = field(
        default_factory=lambda: codecs.getincrementaldecoder("utf-8")("replace")
    )
    output: str = ""
    start: int = 0  # the cursor of output[0]: characters before it were dropped
    listeners: set[asyncio.Queue[str | None]] = field(default_factory=set)
    closed: bool = False

    @property
    def cursor(self) -> int:
        return self.start + len(self.output)

    def since(self, cursor: int) -> str:
        """What was written from ``cursor`` on (what is still held of it); -1: nothing."""
        if cursor < 0:
            return ""
        return self.output[max(cursor - self.start, 0) :]

    def append(self, text: str) -> None:
        self.output += text
        if len(self.output) > BUFFER_CHARS:
            cut = len(self.output) - BUFFER_CHARS
            self.output = self.output[cut:]
            self.start += cut
        for queue in tuple(self.listeners):
            if queue.qsize() >= LISTENER_BACKLOG:
                self.listeners.discard(queue)
                queue.put_nowait(None)  # too far behind: it reconnects with its cursor
            else:
                queue.put_nowait(text)

    def resize(self, rows: int, cols: int) -> None:
        with contextlib.suppress(OSError):
            fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def write(self, text: str) -> None:
        if self.closed:
            return
        data = text.encode()
        while data:
            try:
                written = os.write(self.master, data)
            except BlockingIOError:
                return  # the shell is not reading: input beyond the tty's buffer is dropped
            except OSError:
                return
            data = data[written:]


# Run first in the child, in its own session: make the pty (its stdin) the session's
# controlling terminal, then become the command. (A preexec_fn would do the same, but
# uvloop's process spawning cannot run one.)
_TAKE_TERMINAL = (
    "import fcntl, os, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
    "os.execv(sys.argv[1], sys.argv[1:])"
)


def _default_shell() -> str:
    shell = os.environ.get("SHELL", "")
    return shell if shell and Path(shell).is_file() else "/bin/sh"


class Terminals:
    """One project's terminals."""

    def __init__(self, bus: Bus, directory: Path) -> None:
        self.bus = bus
        self.directory = directory
        self._terminals: dict[str, Terminal] = {}
        self._tickets: dict[str, tuple[str, float]] = {}

    def list(self) -> list[PtyInfo]:
        return [t.info for t in self._terminals.values()]

    def get(self, pty_id: str) -> Terminal:
        terminal = self._terminals.get(pty_id)
        if terminal is None:
            raise PtyNotFound(pty_id)
        return terminal

    async def create(self, spec: PtyCreate) -> PtyInfo:
        command = spec.command or _default_shell()
        executable = shutil.which(command, path=(spec.env or {}).get("PATH"))
        if executable is None:
            raise BadRequestError(f"command not found: {command}", field="command")
        args = spec.args if spec.args is not None else ([] if spec.command else ["-l"])
        cwd = self._cwd(spec.cwd)
        env = {**os.environ, "TERM": "xterm-256color", **(spec.env or {})}
        master, slave = os.openpty()
        try:
            fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", *DEFAULT_SIZE, 0, 0))
            process = await processes.start(
                sys.executable, "-c", _TAKE_TERMINAL, executable, *args,
                group=True,
                stdin=slave, stdout=slave, stderr=slave,
                cwd=cwd, env=env,
            )  # fmt: skip
        except (OSError, ValueError) as exc:
            os.close(master)
            raise BadRequestError(f"could not start {command}: {exc}", field="command") from None
        except asyncio.CancelledError:  # the request went away: what started is stopped
            os.close(master)
            raise
        finally:
            os.close(slave)
        os.set_blocking(master, False)
        pty_id = ids.ascending("pty")
        info = PtyInfo(
            id=pty_id,
            title=spec.title or f"Terminal {len(self._terminals) + 1}",
            command=command,
            args=args,
            cwd=str(cwd),
            status="running",
            pid=process.pid,
        )
        terminal = Terminal(info, master, process)
        self._terminals[pty_id] = terminal
        asyncio.get_running_loop().add_reader(master, self._read, terminal)
        asyncio.get_running_loop().create_task(self._reap(terminal))
        self.bus.publish(PtyCreated(PtyInfoProps(info=info)).with_id(ids.event_id()))
        return info

    def _cwd(self, given: str | None) -> Path:
        try:
            cwd = (self.directory / given).resolve() if given else self.directory
            usable = cwd.is_dir()
        except (OSError, ValueError) as exc:
            raise BadRequestError(f"cwd: {exc}", field="cwd") from None
        if not usable:
            raise BadRequestError(f"cwd {given} is not a directory", field="cwd")
        return cwd

    def _read(self, terminal: Terminal) -> None:
        try:
            data = os.read(terminal.master, READ_BYTES)
        except BlockingIOError:
            return
        except OSError:
            data = b""  # EIO: every process holding the pty's other end has gone
        if not data:
            self._stop_reading(terminal)
            return
        terminal.append(terminal.decoder.decode(data))

    def _stop_reading(self, terminal: Terminal) -> None:
        if terminal.closed:
            return
        terminal.closed = True
        asyncio.get_running_loop().remove_reader(terminal.master)
        while True:  # what the process wrote just before it ended is still to be read
            try:
                data = os.read(terminal.master, READ_BYTES)
            except OSError:  # EAGAIN: nothing more; EIO: nobody holds the other end
                break
            if not data:
                break
            terminal.append(terminal.decoder.decode(data))
        tail = terminal.decoder.decode(b"", final=True)
        if tail:
            terminal.append(tail)
        os.close(terminal.master)

    async def _reap(self, terminal: Terminal) -> None:
        code = await terminal.process.wait()
        await asyncio.sleep(0)  # let the last output be read first
        self._stop_reading(terminal)
        for queue in tuple(terminal.listeners):
            queue.put_nowait(None)
        terminal.listeners.clear()
        exit_code = code if code >= 0 else 128 - code  # killed by a signal: 128 + signal
        terminal.info = terminal.info.model_copy(
            update={"status": "exited", "exit_code": exit_code}
        )
        if terminal.info.id in self._terminals:
            props = PtyExitedProps(id=terminal.info.id, exit_code=exit_code)
            self.bus.publish(PtyExited(props).with_id(ids.event_id()))

    def update(self, pty_id: str, change: PtyUpdate) -> PtyInfo:
        terminal = self.get(pty_id)
        if change.title is not None:
            terminal.info = terminal.info.model_copy(update={"title": change.title})
        if change.size is not None:
            terminal.resize(change.size.rows, change.size.cols)
        self.bus.publish(PtyUpdated(PtyInfoProps(info=terminal.info)).with_id(ids.event_id()))
        return terminal.info

    async def remove(self, pty_id: str) -> None:
        terminal = self._terminals.pop(self.get(pty_id).info.id)
        await self._kill(terminal)
        self.bus.publish(PtyDeleted(PtyRefProps(id=pty_id)).with_id(ids.event_id()))

    async def _kill(self, terminal: Terminal) -> None:
        if terminal.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(terminal.process.pid, signal.SIGHUP)
            try:
                await asyncio.wait_for(terminal.process.wait(), 2)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(terminal.process.pid, signal.SIGKILL)
                await terminal.process.wait()
        self._stop_reading(terminal)
        for queue in tuple(terminal.listeners):
            queue.put_nowait(None)

    async def close_all(self) -> None:
        for pty_id in list(self._terminals):
            await self._kill(self._terminals.pop(pty_id))

    # ---- WebSocket tickets: a browser cannot send credentials on a WebSocket ------------

    def ticket(self, pty_id: str, now: Callable[[], float] = time.monotonic) -> str:
        self.get(pty_id)
        self._tickets = {k: v for k, v in self._tickets.items() if v[1] > now()}
        ticket = secrets.token_urlsafe(24)
        self._tickets[ticket] = (pty_id, now() + TICKET_SECONDS)
        return ticket

    def redeem(self, ticket: str, pty_id: str, now: Callable[[], float] = time.monotonic) -> bool:
        """Whether ``ticket`` was made for ``pty_id`` and is still fresh; it is used up."""
        held = self._tickets.pop(ticket, None)
        return held is not None and held[0] == pty_id and held[1] > now()
