"""A server that stops mid-run says so: the message and a pending tool are labelled as
interrupted by a server restart, not as a Stop the user pressed."""

from __future__ import annotations

import asyncio

import httpx

from partwire.config import Settings
from partwire.schema.message import RESTART_INTERRUPTED, TOOL_RESTART_INTERRUPTED
from partwire.server.runner import serve_in_background


async def test_a_stopping_server_labels_the_run_a_restart(settings: Settings) -> None:
    async with serve_in_background(settings) as url, httpx.AsyncClient(base_url=url) as http:
        sid = (await http.post("/session", json={})).json()["id"]
        prompt = {"parts": [{"type": "text", "text": "question"}]}
        assert (await http.post(f"/session/{sid}/prompt_async", json=prompt)).is_success
        for _ in range(200):
            if (await http.get("/question")).json():
                break
            await asyncio.sleep(0.05)
        assert (await http.get("/question")).json(), "no question was asked"
    async with serve_in_background(settings) as url, httpx.AsyncClient(base_url=url) as http:
        messages = (await http.get(f"/session/{sid}/message")).json()
    answer = messages[-1]
    assert answer["info"]["error"]["name"] == "MessageAbortedError"
    assert answer["info"]["error"]["data"]["message"] == RESTART_INTERRUPTED
    [tool] = [p for p in answer["parts"] if p["type"] == "tool"]
    assert tool["state"]["status"] == "error"
    assert tool["state"]["error"] == TOOL_RESTART_INTERRUPTED
