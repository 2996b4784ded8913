"""The tool lifecycle admits only pending → running → completed | error."""

from __future__ import annotations

import itertools

import pytest

from partwire.errors import IllegalTransitionError
from partwire.schema.tool_state import (
    FinishedTime,
    RunningTime,
    ToolState,
    ToolStateCompleted,
    ToolStateError,
    ToolStatePending,
    ToolStateRunning,
    check_transition,
)

SAMPLES: dict[str, ToolState] = {
    "pending": ToolStatePending(),
    "running": ToolStateRunning(input={}, time=RunningTime(start=1)),
    "completed": ToolStateCompleted(
        input={}, output="", title="", time=FinishedTime(start=1, end=2)
    ),
    "error": ToolStateError(input={}, error="x", time=FinishedTime(start=1, end=2)),
}
LEGAL = {
    ("pending", "pending"),
    ("pending", "running"),
    ("pending", "error"),
    ("running", "running"),
    ("running", "completed"),
    ("running", "error"),
}
EDGES = list(itertools.product(SAMPLES, SAMPLES))


@pytest.mark.parametrize(("current", "target"), [e for e in EDGES if e in LEGAL])
def test_legal_edges_pass(current: str, target: str) -> None:
    check_transition(SAMPLES[current], SAMPLES[target])


@pytest.mark.parametrize(("current", "target"), [e for e in EDGES if e not in LEGAL])
def test_every_illegal_edge_raises_with_the_states(current: str, target: str) -> None:
    with pytest.raises(IllegalTransitionError) as info:
        check_transition(SAMPLES[current], SAMPLES[target])
    assert f"{current} -> {target}" in str(info.value)


def test_edges_out_of_terminal_states_are_all_illegal() -> None:
    illegal = [e for e in EDGES if e not in LEGAL]
    assert len(illegal) == 10
    assert all(("completed", t) in illegal and ("error", t) in illegal for t in SAMPLES)
