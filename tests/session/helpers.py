from __future__ import annotations

from partwire.runtime import Runtime
from partwire.schema.input import PromptInput, SessionCreateInput, TextPartInput
from partwire.schema.part import ModelRef

SCRIPTED = ModelRef(providerID="scripted", modelID="scripted")


def prompt_body(text: str) -> PromptInput:
    return PromptInput(parts=[TextPartInput(text=text)], model=SCRIPTED)


async def new_session(runtime: Runtime) -> str:
    return (await runtime.sessions.create(SessionCreateInput())).id
