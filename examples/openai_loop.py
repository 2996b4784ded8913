"""A hand-written OpenAI-SDK agent loop whose every step is recorded into partwire, live.

    OPENAI_API_KEY=… python examples/openai_loop.py "What is the weather in Paris?"

Set OPENAI_BASE_URL for any OpenAI-compatible server and MODEL for the model (gpt-4o-mini).
The session is stored in partwire's data dir; `partwire serve` then shows it in the web UI.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

from openai import AsyncOpenAI

from partwire import Runtime, SessionCreateInput, converter, load_settings

CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOLS = [
    {
        "type": "function",
        "function": {"name": "get_weather", "description": "The weather", "parameters": CITY},
    }
]


def openai_call(part) -> dict:  # a tool part of the message
    arguments = json.dumps(part.state.input)
    return {
        "id": part.call_id,
        "type": "function",
        "function": {"name": part.tool, "arguments": arguments},
    }


def get_weather(city: str) -> str:
    return f"{city}: 18°C, light rain"


async def main(question: str) -> None:
    client = AsyncOpenAI()
    runtime = Runtime.build(load_settings())
    await runtime.start()
    try:
        session = await runtime.sessions.create(SessionCreateInput(title="OpenAI loop"))
        messages: list[dict] = [{"role": "user", "content": question}]
        async with runtime.record(session.id, prompt=question, model="openai/gpt") as msg:
            for _ in range(5):  # model call, tools, again, until it answers
                chunks = converter("openai-chat")
                stream = await client.chat.completions.create(
                    model=os.environ.get("MODEL", "gpt-4o-mini"), messages=messages,
                    tools=TOOLS, stream=True, stream_options={"include_usage": True},
                )  # fmt: skip
                async for chunk in stream:
                    for event in chunks.feed(chunk):
                        await msg.feed(event)  # recorded and published as it arrives
                for event in chunks.end():
                    await msg.feed(event)
                calls = [
                    p for p in msg.builder.parts if p.type == "tool" and p.state.status == "running"
                ]
                if not calls:
                    break
                messages.append(
                    {"role": "assistant", "tool_calls": [openai_call(c) for c in calls]}
                )
                for call in calls:
                    output = get_weather(**call.state.input)
                    await msg.add_tool_result(call.call_id, output)
                    messages.append(
                        {"role": "tool", "tool_call_id": call.call_id, "content": output}
                    )
        print(msg.builder.build().content)
        print(f"session {session.id}", file=sys.stderr)
    finally:
        await runtime.stop()


if __name__ == "__main__":
    asyncio.run(main(" ".join(sys.argv[1:]) or "What is the weather in Paris?"))
