"""Compaction: on overflow and on demand; later steps see history only from the summary."""

from __future__ import annotations

import httpx
import pytest

from partwire.providers.stream import SUMMARY_PROMPT, StreamEvent
from partwire.session import compaction
from partwire.session.history import COMPACTION_QUESTION
from partwire.session.loop import CONTINUE_AFTER_COMPACTION
from tests.reference import validate
from tests.scripted import ScriptedModel, finish, text_reply, tool_reply
from tests.server.test_permission import SCRIPTED, _start
from tests.server.watch import Watch


def _big_tool_step() -> list[StreamEvent]:
    step = tool_reply("read", {"filePath": "README.md"})
    return [*step[:-2], *finish("tool-calls", input=950)]


def _texts(turns: tuple[object, ...]) -> list[str]:
    return [getattr(t, "text", getattr(t, "output", "")) for t in turns]


async def test_overflow_compacts_then_continues_from_the_summary(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    model.context_limit = 1000  # usable: 800 tokens
    model.enqueue(_big_tool_step(), text_reply("Summary: read the README."), text_reply("done"))
    async with Watch(http) as watch:
        sid = await _start(http, "read the readme")
        compacted = await watch.wait_for("session.compacted")
        await watch.wait_for("session.idle", lambda e: e["properties"]["sessionID"] == sid)
        compacting = [
            "compacting" in e["properties"]["info"]["time"]
            for e in watch.events
            if e["type"] == "session.updated"
        ]
    validate("EventSessionCompacted", compacted)
    assert True in compacting and compacting[-1] is False
    messages = (await http.get(f"/session/{sid}/message")).json()
    roles = [m["info"]["role"] for m in messages]
    assert roles == ["user", "assistant", "user", "assistant", "user", "assistant"]
    request_part = messages[2]["parts"][0]
    validate("CompactionPart", request_part)
    assert request_part["auto"] is True and request_part["overflow"] is True
    summary = messages[3]["info"]
    assert summary["summary"] is True and summary["mode"] == "compaction"
    assert summary["parentID"] == messages[2]["info"]["id"]
    assert messages[4]["parts"][0]["synthetic"] is True
    # the summary call had no tools and ended with the summary instruction
    summary_request = model.requests[1]
    assert summary_request.tools == ()
    assert _texts(summary_request.messages)[-1] == SUMMARY_PROMPT
    assert _texts(summary_request.messages)[0] == "read the readme"
    # the next call sees only the compaction onward
    assert _texts(model.requests[2].messages) == [
        COMPACTION_QUESTION,
        "Summary: read the README.",
        CONTINUE_AFTER_COMPACTION,
    ]


async def test_summarize_on_demand_and_later_prompts_start_from_it(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    model.enqueue(text_reply("first answer"), text_reply("the summary"), text_reply("second"))
    sid = (await http.post("/session", json={})).json()["id"]
    await http.post(
        f"/session/{sid}/message",
        json={"parts": [{"type": "text", "text": "one"}], "model": SCRIPTED},
    )
    response = await http.post(f"/session/{sid}/summarize", json=SCRIPTED)
    assert response.status_code == 200 and response.json() is True
    await http.post(
        f"/session/{sid}/message",
        json={"parts": [{"type": "text", "text": "two"}], "model": SCRIPTED},
    )
    messages = (await http.get(f"/session/{sid}/message")).json()
    assert messages[2]["parts"][0]["type"] == "compaction"
    assert messages[2]["parts"][0]["auto"] is False
    assert _texts(model.requests[2].messages) == [COMPACTION_QUESTION, "the summary", "two"]


async def test_old_tool_outputs_are_pruned_before_summarizing(
    http: httpx.AsyncClient, model: ScriptedModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(compaction, "PRUNE_PROTECT", 1)
    monkeypatch.setattr(compaction, "PRUNE_MINIMUM", 1)
    model.enqueue(
        tool_reply("read", {"filePath": "src/app.py"}, call_id="a"),
        tool_reply("read", {"filePath": "README.md"}, call_id="b"),
        text_reply("read both"),
        text_reply("ok"),
        text_reply("and again"),
        text_reply("the summary"),
    )
    sid = (await http.post("/session", json={})).json()["id"]
    for text in ("read things", "thanks", "more"):
        body = {"parts": [{"type": "text", "text": text}], "model": SCRIPTED}
        await http.post(f"/session/{sid}/message", json=body)
    await http.post(f"/session/{sid}/summarize", json=SCRIPTED)
    messages = (await http.get(f"/session/{sid}/message")).json()
    tools = [p for m in messages for p in m["parts"] if p["type"] == "tool"]
    assert [("compacted" in t["state"]["time"]) for t in tools] == [True, False]
    validate("ToolPart", tools[0])
    outputs = [t.output for t in model.requests[-1].messages if t.role == "tool"]  # type: ignore[union-attr]
    assert outputs[0] == compaction.CLEARED and "Sample" in outputs[1]


async def test_summarize_errors(http: httpx.AsyncClient, model: ScriptedModel) -> None:
    assert (await http.post("/session/ses_nope/summarize", json=SCRIPTED)).status_code == 404
    sid = (await http.post("/session", json={})).json()["id"]
    empty = await http.post(f"/session/{sid}/summarize", json=SCRIPTED)
    assert (
        empty.status_code == 400 and "no messages to summarize" in empty.json()["data"]["message"]
    )
    bad = await http.post(f"/session/{sid}/summarize", json={"providerID": "x", "modelID": "y"})
    assert bad.status_code == 400
    missing = await http.post(f"/session/{sid}/summarize", json={"providerID": "scripted"})
    assert missing.status_code == 400 and missing.json()["data"]["field"] == "modelID"
    model.gate = None
    model.delay_s = 0.05
    model.enqueue(text_reply(*["w "] * 100))
    busy = await _start(http)
    response = await http.post(f"/session/{busy}/summarize", json=SCRIPTED)
    assert response.status_code == 409
    assert response.json()["name"] == "SessionBusyError"
    await http.post(f"/session/{busy}/abort")
