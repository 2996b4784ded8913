"""A prompt's subtask part runs as the task tool before the model is asked."""

from __future__ import annotations

from partwire.runtime import Runtime
from partwire.schema.input import PromptInput, SubtaskPartInput
from partwire.schema.message import AssistantMessage
from partwire.schema.part import ToolPart
from partwire.schema.tool_state import ToolStateCompleted
from tests import scripted
from tests.session.helpers import SCRIPTED, new_session, prompt_body


async def test_a_subtask_part_delegates_then_the_model_answers(
    runtime: Runtime, model: scripted.ScriptedModel
) -> None:
    model.enqueue(scripted.text_reply("child", "answer"), scripted.text_reply("parent", "done"))
    session_id = await new_session(runtime)
    part = SubtaskPartInput(prompt="look around", description="Survey", agent="general")
    answer = await runtime.loop.prompt(session_id, PromptInput(parts=[part], model=SCRIPTED))
    # two model calls: the sub-agent's, then the parent's; none for the delegation itself
    assert len(model.requests) == 2
    assert answer.info.finish == "stop"
    messages = await runtime.store.list_messages(session_id)
    steps = [m for m in messages if isinstance(m.info, AssistantMessage)]
    (task,) = [p for p in steps[0].parts if isinstance(p, ToolPart)]
    assert task.tool == "task" and isinstance(task.state, ToolStateCompleted)
    assert task.state.input == {
        "description": "Survey", "prompt": "look around", "subagent_type": "general",
    }  # fmt: skip
    assert task.state.output.startswith("childanswer")
    children = [s for s in await runtime.store.list_sessions() if s.parent_id == session_id]
    assert len(children) == 1
    # the delegation ran once: a later prompt in the session asks the model straight away
    model.enqueue(scripted.text_reply("again"))
    await runtime.loop.prompt(session_id, prompt_body("more"))
    assert len(model.requests) == 3
