"""A pydantic-ai Agent whose run is recorded into partwire, live.

    python examples/pydantic_ai_agent.py "What colour is the sky?"

It uses pydantic-ai's offline TestModel; pass a model name (MODEL=openai:gpt-4o-mini)
for a real one.
"""

from __future__ import annotations

import asyncio
import os
import sys

from pydantic_ai import Agent

from partwire import Runtime, SessionCreateInput, converter, load_settings

agent = Agent(os.environ.get("MODEL", "test"), instructions="Answer briefly; look facts up.")


@agent.tool_plain
def look_up(topic: str) -> str:
    """Look a fact up."""
    return f"{topic}: blue, because of Rayleigh scattering"


async def main(question: str) -> None:
    runtime = Runtime.build(load_settings())
    await runtime.start()
    try:
        session = await runtime.sessions.create(SessionCreateInput(title="pydantic-ai"))
        # the model and each step's usage come from the run: the message is the model's
        async with runtime.record(session.id, prompt=question) as msg:
            async with agent.run_stream_events(question) as events:
                events_in = converter("pydantic-ai", events)
                async for event in events:
                    for ingest_event in events_in.feed(event):
                        await msg.feed(ingest_event)
            for ingest_event in events_in.end():
                await msg.feed(ingest_event)
        print(msg.builder.build().content)
        print(f"session {session.id}", file=sys.stderr)
    finally:
        await runtime.stop()


if __name__ == "__main__":
    asyncio.run(main(" ".join(sys.argv[1:]) or "What colour is the sky?"))
