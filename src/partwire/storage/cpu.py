"""Keeping the writer thread on the CPU where the event loop's thread runs.

Every streamed delta crosses threads twice: the loop hands it to the writer, and the
writer hands the committed batch back. When the two threads sit on different CPUs, each
hand-over wakes an idle CPU with an inter-processor interrupt, which on a virtual machine
costs tens of microseconds of CPU (``bench/floor.py``: about 180 ms per 1k paced deltas
for a writer thread, 90-100 when it follows the loop). So the writer pins itself to the
CPU the loop last ran on, and moves when the loop moves. The loop's thread is never
pinned: the subprocesses and worker threads it starts inherit nothing.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Callable

log = logging.getLogger(__name__)


def _sched_getcpu() -> Callable[[], int] | None:
    """libc's ``sched_getcpu`` (a vDSO read, ~0.1 µs), or None where there is none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        getcpu = ctypes.CDLL(None).sched_getcpu
    except (OSError, AttributeError):
        return None
    getcpu.restype = ctypes.c_int
    getcpu.argtypes = []
    return getcpu if getcpu() >= 0 else None


class CpuFollower:
    """One thread notes its CPU (``note``); another pins itself there (``follow``)."""

    def __init__(self) -> None:
        self._getcpu = _sched_getcpu()
        self.target = -1  # the noting thread's last CPU; a plain int, read without a lock
        self._pinned = -1
        self._allowed: set[int] | None = None  # the following thread's mask before pinning

    @property
    def active(self) -> bool:
        return self._getcpu is not None

    def note(self) -> None:
        """On the thread to be followed (the loop's)."""
        if self._getcpu is not None:
            self.target = self._getcpu()

    def follow(self) -> None:
        """On the following thread (the writer's): move to the noted CPU if it changed."""
        target = self.target
        if target < 0 or target == self._pinned or self._getcpu is None:
            return
        if self._allowed is None:
            self._allowed = os.sched_getaffinity(0)
        if target not in self._allowed:  # a CPU this thread may not use: stay as it is
            return
        try:
            os.sched_setaffinity(0, {target})  # 0: the calling thread only
        except OSError as exc:
            self.stop(f"cannot pin the writer to CPU {target}: {exc}")
            return
        self._pinned = target

    def stop(self, why: str | None = None) -> None:
        """Stop following and give the following thread back its own mask."""
        if why:
            log.warning("%s; the writer no longer follows the loop's CPU", why)
        self._getcpu = None
        if self._pinned >= 0 and self._allowed is not None:
            with contextlib.suppress(OSError):  # the mask it had cannot be refused
                os.sched_setaffinity(0, self._allowed)
        self._pinned = -1
