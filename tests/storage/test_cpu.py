"""The writer thread follows the event loop's CPU; nothing else is pinned."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from partwire.bus import Bus
from partwire.schema.event import PartDeltaProps
from partwire.storage.cpu import CpuFollower
from partwire.storage.sqlite import SqliteStore
from tests.storage.streaming import append

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux affinity")


def _on_a_thread(work: Callable[[], object]) -> tuple[object, set[int]]:
    """Run ``work`` on a new thread; its result and that thread's mask afterwards."""
    out: list[tuple[object, set[int]]] = []

    def run() -> None:
        result = work()
        out.append((result, os.sched_getaffinity(0)))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return out[0]


def test_the_follower_pins_only_itself_to_the_noted_cpu() -> None:
    everything = os.sched_getaffinity(0)
    follower = CpuFollower()
    assert follower.active
    follower.note()
    noted = follower.target
    assert noted in everything
    _, mask = _on_a_thread(follower.follow)
    assert mask == {noted}
    assert os.sched_getaffinity(0) == everything  # the noting thread is never pinned


def test_the_follower_moves_when_the_noted_cpu_changes() -> None:
    cpus = sorted(os.sched_getaffinity(0))
    follower = CpuFollower()

    def follow_each() -> list[set[int]]:
        seen = []
        for cpu in (cpus[0], cpus[-1], cpus[0]):
            follower.target = cpu
            follower.follow()
            seen.append(os.sched_getaffinity(0))
        return seen

    seen, _ = _on_a_thread(follow_each)
    assert seen == [{cpus[0]}, {cpus[-1]}, {cpus[0]}]


def test_a_cpu_the_thread_may_not_use_is_not_followed() -> None:
    everything = os.sched_getaffinity(0)
    follower = CpuFollower()
    follower.target = max(everything) + 4096  # no such CPU here
    _, mask = _on_a_thread(follower.follow)
    assert mask == everything


def test_stopping_gives_the_thread_back_its_own_mask() -> None:
    everything = os.sched_getaffinity(0)
    follower = CpuFollower()
    follower.note()

    def follow_then_stop() -> set[int]:
        follower.follow()
        pinned = os.sched_getaffinity(0)
        follower.stop()
        follower.note()
        follower.follow()  # stopped: no longer follows
        return pinned

    pinned, mask = _on_a_thread(follow_then_stop)
    assert len(pinned) == 1 and mask == everything
    assert not follower.active


async def _until(check: Callable[[], bool], within_s: float = 5.0) -> bool:
    """Whether ``check`` holds within about ``within_s``, looking every millisecond."""
    for _ in range(int(within_s * 1000)):
        if check():
            return True
        await asyncio.sleep(0.001)
    return check()


async def test_the_store_writer_runs_on_the_loops_cpu(tmp_path: Path) -> None:
    everything = os.sched_getaffinity(0)
    store = SqliteStore(tmp_path / "db.sqlite", Bus())
    await store.open()
    try:
        delta = PartDeltaProps(
            session_id="ses_1", message_id="msg_1", part_id="prt_1", field="text", delta="x"
        )
        writer = store._writer
        # the loop commits a delta itself when it can take the connection's lock at once
        # (_commit_here); held here, the delta goes to the writer's thread, which commits
        # it once the lock is let go
        with writer._lock:
            await append(store, delta)
            assert await _until(lambda: writer._in_thread > 0)
        assert await _until(lambda: writer.batches > writer.commits_here)
        thread = writer._thread
        assert thread is not None and thread.native_id is not None
        assert os.sched_getaffinity(thread.native_id) == {writer.cpu.target}
        assert os.sched_getaffinity(0) == everything  # the loop's thread is never pinned
    finally:
        await store.close()
