"""Ingest events (schema/ingest.py) → the calls of a recording."""

from __future__ import annotations

from partwire.errors import BuilderError
from partwire.schema.ingest import (
    FileAdded,
    IngestEvent,
    IngestStart,
    ReasoningDelta,
    StepFinish,
    StepStart,
    StreamError,
    TextDelta,
    ToolArgsDelta,
    ToolCall,
    ToolCallStart,
    ToolResult,
)
from partwire.session.recorder import Recording


async def feed(recording: Recording, event: IngestEvent) -> None:
    """Make the call ``event`` stands for (BuilderError when it is out of order)."""
    if isinstance(event, IngestStart):
        raise BuilderError("a start line may only be the first line")
    if isinstance(event, StreamError):
        if recording.builder.done:
            raise BuilderError("an error after the message ended")
        await recording.fail(event.message)
        return
    await _call(recording, event)


async def _call(recording: Recording, event: IngestEvent) -> None:
    match event:
        case TextDelta(delta=delta):
            await recording.add_text_delta(delta)
        case ReasoningDelta(delta=delta):
            await recording.add_reasoning_delta(delta)
        case ToolCallStart(call_id=call_id, tool=tool):
            await recording.start_tool_call(call_id, tool)
        case ToolArgsDelta(call_id=call_id, delta=delta):
            await recording.add_tool_args_delta(call_id, delta)
        case ToolCall(call_id=call_id, tool=tool, input=args):
            await recording.add_tool_call(call_id, tool, args)
        case ToolResult():
            await recording.add_tool_result(
                event.call_id,
                event.output,
                event.is_error,
                title=event.title,
                metadata=event.metadata,
            )
        case FileAdded(mime=mime, url=url, filename=filename):
            await recording.add_file(mime, url, filename)
        case StepStart():
            await recording.start_step()
        case StepFinish(tokens=tokens, cost=cost, reason=reason):
            await recording.finish_step(tokens, cost, reason)
