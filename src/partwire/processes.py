"""Child processes that never outlive the call that started them.

A command started here is stopped when its caller is aborted or its time runs out, including
while it is still starting: on a busy machine it runs, and may start children of its own,
before asyncio has set up its pipes, and an abort in that window would otherwise leave it
running. Started in a group of its own (``group=True``), the whole group is stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path
from typing import Any

KILL_GRACE_S = 0.2


async def start(*argv: str, group: bool = False, **options: Any) -> asyncio.subprocess.Process:
    """``argv`` running (``options`` as for ``asyncio.create_subprocess_exec``)."""
    spawn = asyncio.create_subprocess_exec(*argv, start_new_session=group, **options)
    starting = asyncio.ensure_future(spawn)
    try:
        return await asyncio.shield(starting)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):  # it failed to start: nothing to stop
            await stop(await starting, group=group)
        raise


async def start_shell(command: str, cwd: Path) -> asyncio.subprocess.Process:
    """``command`` run by bash in ``cwd``, in a group of its own (stop it with
    ``group=True``): no input, its output and errors on one pipe, ``stdout``."""
    return await start(
        "/bin/bash", "-c", command,
        group=True,
        cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip


def _signal(process: asyncio.subprocess.Process, sig: int, group: bool) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if group:  # its children too, even once the process itself has exited
            os.killpg(process.pid, sig)
        elif process.returncode is None:
            process.send_signal(sig)


async def stop(process: asyncio.subprocess.Process, *, group: bool = False) -> None:
    """SIGTERM, then SIGKILL whatever is left after ``KILL_GRACE_S``; returns once the
    process has exited."""
    _signal(process, signal.SIGTERM, group)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(process.wait(), KILL_GRACE_S)
    _signal(process, signal.SIGKILL, group)
    await process.wait()


async def finish(
    process: asyncio.subprocess.Process,
    stdin: bytes | None = None,
    *,
    limit_s: float | None = None,
    group: bool = False,
) -> tuple[bytes, bytes]:
    """What the process prints on its standard output and error (empty where not piped),
    once it has exited. Past ``limit_s`` (``TimeoutError``) or on an abort, it is stopped
    first; what it printed before stays readable through ``process.communicate()``."""
    try:
        out, err = await asyncio.wait_for(process.communicate(stdin), limit_s)
    except BaseException:
        await stop(process, group=group)
        raise
    return out or b"", err or b""
