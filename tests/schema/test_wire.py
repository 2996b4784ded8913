"""Every wire type validates against the opencode schema of the same name."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from partwire.schema.base import Tokens, WireModel
from partwire.schema.event import PartDeltaProps
from partwire.schema.frames import PartDelta
from partwire.schema.message import (
    AssistantMessage,
    AssistantTime,
    MessageOutputLengthError,
    MessagePath,
    ProviderAuthError,
    ProviderAuthErrorData,
    UserMessage,
    UserTime,
    aborted_error,
    unknown_error,
)
from partwire.schema.part import (
    AgentPart,
    AgentSource,
    APIError,
    APIErrorData,
    CompactionPart,
    CreatedTime,
    FilePart,
    FileSource,
    FileSourceText,
    ModelRef,
    PatchPart,
    ReasoningPart,
    RetryPart,
    SnapshotPart,
    StepFinishPart,
    StepStartPart,
    StreamTime,
    SubtaskPart,
    TextPart,
    ToolPart,
    part_adapter,
)
from partwire.schema.session import Session, SessionSummary, SessionTime, StatusRetry
from partwire.schema.tool_state import (
    FinishedTime,
    RunningTime,
    ToolStateCompleted,
    ToolStateError,
    ToolStatePending,
    ToolStateRunning,
)
from tests.reference import validate

BASE: dict[str, Any] = {
    "id": "prt_01",
    "sessionID": "ses_01",
    "messageID": "msg_01",
}

STATES: dict[str, WireModel] = {
    "ToolStatePending": ToolStatePending(input={}, raw='{"filePath": "a'),
    "ToolStateRunning": ToolStateRunning(
        input={"filePath": "a.py"}, title="a.py", metadata={"x": 1}, time=RunningTime(start=1)
    ),
    "ToolStateCompleted": ToolStateCompleted(
        input={"filePath": "a.py"},
        output="ok",
        title="a.py",
        metadata={},
        time=FinishedTime(start=1, end=2),
    ),
    "ToolStateError": ToolStateError(
        input={}, error="File not found", time=FinishedTime(start=1, end=2)
    ),
}

API_ERROR = APIError(data=APIErrorData(message="overloaded", statusCode=529, isRetryable=True))

PARTS: dict[str, WireModel] = {
    "TextPart": TextPart(**BASE, text="hi", time=StreamTime(start=1, end=2)),
    "ReasoningPart": ReasoningPart(**BASE, text="hmm", time=StreamTime(start=1)),
    "FilePart": FilePart(
        **BASE,
        mime="text/plain",
        filename="a.txt",
        url="file:///a.txt",
        source=FileSource(path="a.txt", text=FileSourceText(value="@a.txt", start=0, end=6)),
    ),
    "AgentPart": AgentPart(**BASE, name="plan", source=AgentSource(value="@plan", start=0, end=5)),
    "ToolPart": ToolPart(**BASE, callID="call_1", tool="read", state=STATES["ToolStateCompleted"]),
    "SubtaskPart": SubtaskPart(
        **BASE,
        prompt="look",
        description="a look",
        agent="general",
        model=ModelRef(providerID="demo", modelID="demo"),
    ),
    "StepStartPart": StepStartPart(**BASE, snapshot="abc"),
    "StepFinishPart": StepFinishPart(**BASE, reason="stop", cost=0.5, tokens=Tokens(input=3)),
    "SnapshotPart": SnapshotPart(**BASE, snapshot="abc"),
    "PatchPart": PatchPart(**BASE, hash="abc", files=["a.py"]),
    "RetryPart": RetryPart(**BASE, attempt=1, error=API_ERROR, time=CreatedTime(created=1)),
    "CompactionPart": CompactionPart(**BASE, auto=True, overflow=False),
}


def _assistant(**extra: Any) -> AssistantMessage:
    return AssistantMessage(
        id="msg_02",
        sessionID="ses_01",
        time=AssistantTime(created=1, completed=2),
        parentID="msg_01",
        modelID="demo",
        providerID="demo",
        mode="build",
        agent="build",
        path=MessagePath(cwd="/p", root="/p"),
        tokens=Tokens(total=3, input=1, output=2),
        finish="stop",
        **extra,
    )


MESSAGES: list[tuple[str, WireModel]] = [
    (
        "UserMessage",
        UserMessage(
            id="msg_01",
            sessionID="ses_01",
            time=UserTime(created=1),
            agent="build",
            model=ModelRef(providerID="demo", modelID="demo"),
        ),
    ),
    ("AssistantMessage", _assistant()),
    ("AssistantMessage", _assistant(error=aborted_error())),
    ("AssistantMessage", _assistant(error=unknown_error("boom"))),
    ("AssistantMessage", _assistant(error=API_ERROR)),
    ("AssistantMessage", _assistant(error=MessageOutputLengthError())),
    (
        "AssistantMessage",
        _assistant(
            error=ProviderAuthError(data=ProviderAuthErrorData(providerID="x", message="k"))
        ),
    ),
    (
        "Session",
        Session(
            id="ses_01",
            slug="calm-otter",
            projectID="p",
            directory="/p",
            title="t",
            version="0.1.0",
            time=SessionTime(created=1, updated=2),
            summary=SessionSummary(),
            parentID="ses_00",
        ),
    ),
    ("SessionStatus", StatusRetry(attempt=1, message="rate limited", next=5)),
]


@pytest.mark.parametrize("name", sorted(STATES))
def test_tool_states_match_reference(name: str) -> None:
    validate(name, STATES[name].wire())
    validate("ToolState", STATES[name].wire())


@pytest.mark.parametrize("name", sorted(PARTS))
def test_parts_match_reference(name: str) -> None:
    wire = PARTS[name].wire()
    validate(name, wire)
    validate("Part", wire)
    assert part_adapter.validate_python(wire) == PARTS[name]


def test_all_twelve_part_types_are_covered() -> None:
    types = {PARTS[name].wire()["type"] for name in PARTS}
    assert types == {
        "text", "reasoning", "file", "agent", "tool", "subtask", "step-start",
        "step-finish", "snapshot", "patch", "retry", "compaction",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("name", "model"), MESSAGES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(MESSAGES)]
)
def test_messages_and_sessions_match_reference(name: str, model: WireModel) -> None:
    validate(name, model.wire())


def test_wire_names_are_opencodes_and_unset_fields_are_omitted() -> None:
    wire = PARTS["ToolPart"].wire()
    assert {"sessionID", "messageID", "callID"} <= wire.keys()
    assert "session_id" not in wire
    text = TextPart(**BASE, text="x", time=StreamTime(start=1)).wire()
    assert text["time"] == {"start": 1}


def test_the_reference_rejects_what_it_should() -> None:
    """A sanity check that the validator is live: a wrong field name must fail."""
    wire = PARTS["TextPart"].wire()
    wire["session_id"] = wire.pop("sessionID")
    with pytest.raises(jsonschema.ValidationError):
        validate("TextPart", wire)


@pytest.mark.parametrize(
    "text", ["hi", 'a "quote" and \\ back', "\n\t\r\b\f\x00\x1f\x7f", "üñí 漢字 \u2028 😀", ""]
)
def test_the_per_token_models_written_by_hand_match_their_serialization(text: str) -> None:
    """A text delta's event properties and its part frame are written directly; the text
    is what pydantic writes for the same model, byte for byte."""
    props = PartDeltaProps(
        session_id="ses_1", message_id='msg_"1', part_id="prt_1", field="text", delta=text
    )
    frame = PartDelta(message_id="msg_1", part_index=3, delta=text)
    assert props.wire_json() == props.model_dump_json(exclude_none=True)
    assert frame.wire_json() == frame.model_dump_json(exclude_none=True)
    tool = PartDelta(message_id="msg_1", part_index=1, args_delta='{"a"')
    assert tool.wire_json() == tool.model_dump_json(exclude_none=True)


def test_a_streamed_delta_made_without_validation_is_the_validated_model() -> None:
    """``PartDeltaProps.streamed`` skips validation (one is made per token): what it makes
    is equal to the validated model, serializes and copies as it does, and each has its
    own set of fields set (a copy's update must not reach another delta's)."""
    made = PartDeltaProps.streamed("ses_1", "msg_1", "prt_1", "w1 ")
    validated = PartDeltaProps(
        session_id="ses_1", message_id="msg_1", part_id="prt_1", field="text", delta="w1 "
    )
    assert made == validated and repr(made) == repr(validated)
    assert (
        made.wire()
        == validated.wire()
        == {
            "sessionID": "ses_1",
            "messageID": "msg_1",
            "partID": "prt_1",
            "field": "text",
            "delta": "w1 ",
        }
    )
    assert made.wire_json() == validated.model_dump_json(exclude_none=True)
    assert made.model_fields_set == validated.model_fields_set
    merged = made.model_copy(update={"delta": "w1 w2 "})
    assert merged.delta == "w1 w2 " and made.delta == "w1 " and merged.part_id == "prt_1"
    other = PartDeltaProps.streamed("ses_1", "msg_1", "prt_1", "w2 ", field="reasoning")
    assert other.field == "reasoning"
    assert other.model_fields_set is not made.model_fields_set
