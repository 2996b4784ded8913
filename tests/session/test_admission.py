"""The start gate: a start after a quiet spell goes at once; while the loop's turns are
long, starts wait for a short one (one a turn, in order, titles after answers), or until
they waited longest."""

from __future__ import annotations

import asyncio
import time

import pytest

from partwire.session.admission import StartGate

TURN_S = 0.01  # each of the hog's turns blocks the loop this long: far past busy_turn_s


class Hog:
    """Keeps the event loop busy: ``turns`` callbacks one after another, each blocking."""

    def __init__(self, turns: int) -> None:
        self.left = turns
        self.done = asyncio.Event()
        asyncio.get_running_loop().call_soon(self._turn)

    def _turn(self) -> None:
        time.sleep(TURN_S)
        self.left -= 1
        if self.left:
            asyncio.get_running_loop().call_soon(self._turn)
        else:
            self.done.set()


def _gate(longest_wait_s: float = 30.0) -> StartGate:
    return StartGate(busy_turn_s=0.002, probe_s=0.001, longest_wait_s=longest_wait_s, quiet_s=30)


async def test_a_first_start_goes_at_once_without_a_turn_of_the_loop() -> None:
    gate = _gate()
    turned: list[bool] = []
    asyncio.get_running_loop().call_soon(turned.append, True)
    await gate.turn()
    assert turned == []  # it did not even yield
    assert gate._probe is None


async def test_starts_wait_while_the_loop_is_busy_then_go_in_order() -> None:
    gate = _gate()
    await gate.turn()  # the first: at once
    hog = Hog(turns=20)
    admitted: list[tuple[str, int]] = []

    async def start(name: str) -> None:
        await gate.turn()
        admitted.append((name, hog.left))

    starts = [asyncio.create_task(start(name)) for name in ("a", "b", "c")]
    await hog.done.wait()
    assert admitted == []  # nobody started while every turn took 10 ms
    await asyncio.wait_for(asyncio.gather(*starts), 5)
    assert [name for name, _ in admitted] == ["a", "b", "c"]
    assert gate._probe is None and not gate._waiting


async def test_a_start_waits_no_longer_than_the_longest_wait() -> None:
    gate = _gate(longest_wait_s=0.05)
    await gate.turn()
    hog = Hog(turns=60)  # 600 ms of turns too long
    await asyncio.wait_for(gate.turn(), 5)
    assert hog.left > 0  # let through before the loop caught up
    await hog.done.wait()


async def test_a_cancelled_start_is_dropped_and_the_next_goes() -> None:
    gate = _gate()
    await gate.turn()
    hog = Hog(turns=10)
    first = asyncio.create_task(gate.turn())
    second = asyncio.create_task(gate.turn())
    await asyncio.sleep(0)
    first.cancel()
    await hog.done.wait()
    await asyncio.wait_for(second, 5)
    with pytest.raises(asyncio.CancelledError):
        await first
    assert not gate._waiting


async def test_a_title_leaves_the_quiet_pass_to_the_answer_and_queues_behind_answers() -> None:
    gate = _gate()
    await gate.turn(after_answers=True)  # at once: nobody waits
    turned: list[bool] = []
    asyncio.get_running_loop().call_soon(turned.append, True)
    await gate.turn()  # the answer still gets the quiet spell's pass
    assert turned == []
    hog = Hog(turns=10)
    order: list[str] = []

    async def start(name: str, after_answers: bool) -> None:
        await gate.turn(after_answers=after_answers)
        order.append(name)

    first = asyncio.create_task(start("answer 1", False))
    await asyncio.sleep(0)
    title = asyncio.create_task(start("title", True))
    await asyncio.sleep(0)
    second = asyncio.create_task(start("answer 2", False))
    await hog.done.wait()
    await asyncio.wait_for(asyncio.gather(first, title, second), 5)
    assert order == ["answer 1", "answer 2", "title"]  # titles after every waiting answer
