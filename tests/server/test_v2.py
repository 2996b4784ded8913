"""opencode's v2 API (/api/*): every answer validates against the reference, and the
session actions (prompt, wait, interrupt, compact, switches, asks) work on the same
sessions as v1."""

from __future__ import annotations

import asyncio
import gc
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from partwire.config import Settings
from partwire.server.runner import serve_in_background
from tests.reference import document, validate_schema
from tests.server.watch import stalled_sse

CATALOG = [
    "/api/health", "/api/location", "/api/agent", "/api/command", "/api/skill", "/api/model",
    "/api/provider", "/api/provider/demo", "/api/fs/find?query=read", "/api/fs/list",
    "/api/fs/list?path=src", "/api/permission/request", "/api/question/request",
    "/api/reference", "/api/integration", "/api/pty", "/api/session", "/api/session/active",
]  # fmt: skip


def template(path: str) -> str:
    bare = path.split("?")[0]
    if bare == "/api/provider/demo":
        return "/api/provider/{providerID}"
    for name in ("sessionID", "requestID", "messageID"):
        bare = bare.replace(f"<{name}>", "{" + name + "}")
    return bare


def check(path: str, method: str, response: httpx.Response) -> Any:
    assert response.status_code == 200, f"{method} {path}: {response.status_code} {response.text}"
    operation = document()["paths"][template(path)][method]
    schema = operation["responses"]["200"]["content"]["application/json"]["schema"]
    data = response.json()
    validate_schema(schema, data)
    return data


async def settle(http: httpx.AsyncClient, session_id: str) -> None:
    response = await http.post(f"/api/session/{session_id}/wait")
    assert response.status_code == 204


async def pending(http: httpx.AsyncClient, session_id: str, kind: str) -> list[dict[str, Any]]:
    """The session's pending asks of ``kind`` (permission, question), once there are any."""
    for _ in range(200):
        asks: list[dict[str, Any]] = (await http.get(f"/api/session/{session_id}/{kind}")).json()[
            "data"
        ]
        if asks:
            return asks
        await asyncio.sleep(0.02)
    raise AssertionError(f"no {kind} was asked")


async def new_session(http: httpx.AsyncClient, **fields: Any) -> str:
    created = check("/api/session", "post", await http.post("/api/session", json=fields))
    session_id: str = created["data"]["id"]
    return session_id


async def test_the_catalog_answers_with_the_reference_shapes(
    http: httpx.AsyncClient, project: Path
) -> None:
    for path in CATALOG:
        check(path, "get", await http.get(path))
    location = (await http.get("/api/location")).json()
    assert location["directory"] == str(project)
    agents = (await http.get("/api/agent")).json()["data"]
    assert {a["id"] for a in agents} == {"build", "plan", "general"}
    found = (await http.get("/api/fs/find?query=app&type=file")).json()["data"]
    assert {"path": "src/app.py", "type": "file"} in found
    listed = (await http.get("/api/fs/list?path=src")).json()["data"]
    assert listed == [{"path": "src/app.py", "type": "file"}]
    read = await http.get("/api/fs/read/README.md")
    assert read.status_code == 200 and read.content == (project / "README.md").read_bytes()
    assert (await http.get("/api/fs/read/../secret.txt")).status_code in (400, 404)
    assert (await http.get("/api/provider/nope")).status_code == 404


async def test_a_session_through_v2_is_the_same_as_v1s(http: httpx.AsyncClient) -> None:
    session_id = await new_session(http, agent="build", model={"id": "demo", "providerID": "demo"})
    v1 = (await http.get(f"/session/{session_id}")).json()
    assert v1["agent"] == "build" and v1["model"]["id"] == "demo"
    admitted = check(
        "/api/session/<sessionID>/prompt",
        "post",
        await http.post(f"/api/session/{session_id}/prompt", json={"prompt": {"text": "list"}}),
    )["data"]
    assert admitted["sessionID"] == session_id and admitted["admittedSeq"] == 1
    await settle(http, session_id)
    info = check("/api/session/<sessionID>", "get", await http.get(f"/api/session/{session_id}"))[
        "data"
    ]
    assert info["tokens"]["output"] > 0
    messages = (await http.get(f"/session/{session_id}/message")).json()
    assert messages[0]["info"]["id"] == admitted["id"]
    assert [m["info"]["role"] for m in messages][:2] == ["user", "assistant"]
    listed = check("/api/session", "get", await http.get("/api/session?limit=1"))
    assert [s["id"] for s in listed["data"]] == [session_id] and listed["cursor"] == {}
    # a client-chosen id, once
    chosen = await new_session(http, id="ses_v2chosen")
    assert chosen == "ses_v2chosen"
    again = await http.post("/api/session", json={"id": "ses_v2chosen"})
    assert again.status_code == 409


async def test_switches_and_asks(http: httpx.AsyncClient) -> None:
    session_id = await new_session(http)
    switched = await http.post(f"/api/session/{session_id}/agent", json={"agent": "plan"})
    assert switched.status_code == 204
    assert (await http.get(f"/session/{session_id}")).json()["agent"] == "plan"
    bad = await http.post(f"/api/session/{session_id}/agent", json={"agent": "nobody"})
    assert bad.status_code == 400
    bad_model = await http.post(
        f"/api/session/{session_id}/model", json={"model": {"id": "x", "providerID": "nope"}}
    )
    assert bad_model.status_code in (400, 404)

    prompt = {"prompt": {"text": "bash echo v2"}}
    await http.post(f"/api/session/{session_id}/prompt", json=prompt)
    asks = await pending(http, session_id, "permission")
    check("/api/session/<sessionID>/permission", "get", await http.get(
        f"/api/session/{session_id}/permission"))  # fmt: skip
    (ask,) = asks
    assert ask["action"] == "bash" and ask["resources"] == ["echo v2"]
    assert ask["source"]["type"] == "tool"
    one = await http.get(f"/api/session/{session_id}/permission/{ask['id']}")
    check("/api/session/<sessionID>/permission/<requestID>", "get", one)
    replied = await http.post(
        f"/api/session/{session_id}/permission/{ask['id']}/reply", json={"reply": "once"}
    )
    assert replied.status_code == 204
    await settle(http, session_id)
    tools = [
        p
        for m in (await http.get(f"/session/{session_id}/message")).json()
        for p in m["parts"]
        if p["type"] == "tool"
    ]
    assert tools[0]["state"]["output"] == "v2\n"
    gone = await http.post(
        f"/api/session/{session_id}/permission/{ask['id']}/reply", json={"reply": "once"}
    )
    assert gone.status_code == 404

    await http.post(f"/api/session/{session_id}/prompt", json={"prompt": {"text": "question"}})
    questions = await pending(http, session_id, "question")
    answered = await http.post(
        f"/api/session/{session_id}/question/{questions[0]['id']}/reply",
        json={"answers": [["Blue"]]},
    )
    assert answered.status_code == 204
    await settle(http, session_id)


async def test_interrupt_compact_and_deliveries(http: httpx.AsyncClient) -> None:
    session_id = await new_session(http)
    await http.post(f"/api/session/{session_id}/prompt", json={"prompt": {"text": "long 20000"}})
    for _ in range(500):  # until the turn is streaming: its assistant message exists
        listed = (await http.get(f"/session/{session_id}/message")).json()
        if any(m["info"]["role"] == "assistant" for m in listed):
            break
        await asyncio.sleep(0.02)
    assert (await http.get("/api/session/active")).json()["data"] == {
        session_id: {"type": "running"}
    }
    # queued while busy: it runs after the current turn, not in it
    queued = {"prompt": {"text": "hello"}, "delivery": "queue"}
    assert (await http.post(f"/api/session/{session_id}/prompt", json=queued)).status_code == 200
    assert (await http.post(f"/api/session/{session_id}/interrupt")).status_code == 204
    await settle(http, session_id)  # idle, and the queued prompt answered too
    messages = (await http.get(f"/session/{session_id}/message")).json()
    roles = [(m["info"]["role"], m["info"].get("error", {}).get("name")) for m in messages]
    assert roles[:2] == [("user", None), ("assistant", "MessageAbortedError")]
    assert roles[2:] == [("user", None), ("assistant", None)]  # the queued one, answered
    assert (await http.post(f"/api/session/{session_id}/interrupt")).status_code == 204  # idle

    stored_only = {"prompt": {"text": "note this"}, "resume": False}
    await http.post(f"/api/session/{session_id}/prompt", json=stored_only)
    after = (await http.get(f"/session/{session_id}/message")).json()
    assert after[-1]["info"]["role"] == "user"  # stored, not answered

    assert (await http.post(f"/api/session/{session_id}/compact")).status_code == 204
    compacted = (await http.get(f"/session/{session_id}/message")).json()
    assert any(m["info"].get("summary") for m in compacted)


@pytest.mark.parametrize(
    ("path", "payload"),
    [
        ("/api/session", {"id": "not-a-session"}),
        ("/api/session", {"surprise": True}),
        ("/api/session/{s}/prompt", {"prompt": {}}),
        ("/api/session/{s}/prompt", {"prompt": {"text": "x"}, "delivery": "later"}),
        ("/api/session/{s}/model", {"model": {"id": "demo"}}),
    ],
)
async def test_bad_v2_input_is_a_400(
    http: httpx.AsyncClient, path: str, payload: dict[str, Any]
) -> None:
    session_id = await new_session(http)
    response = await http.post(path.replace("{s}", session_id), json=payload)
    assert response.status_code == 400, response.text


async def test_messages_and_context_are_v2_projections(http: httpx.AsyncClient) -> None:
    session_id = await new_session(http)
    for text in ("list", "hello"):
        await http.post(f"/api/session/{session_id}/prompt", json={"prompt": {"text": text}})
        await settle(http, session_id)
    page = check(
        "/api/session/<sessionID>/message",
        "get",
        await http.get(f"/api/session/{session_id}/message?limit=3"),
    )
    kinds = [m["type"] for m in page["data"]]
    assert kinds == ["user", "assistant", "assistant"] and page["data"][0]["text"] == "list"
    tool = page["data"][1]["content"][0]
    assert tool["type"] == "tool" and tool["name"] == "list"
    assert (
        tool["state"]["status"] == "completed"
        and "README.md" in tool["state"]["content"][0]["text"]
    )
    rest = (
        await http.get(f"/api/session/{session_id}/message?cursor={page['cursor']['next']}")
    ).json()
    assert [m["type"] for m in rest["data"]] == ["user", "assistant"] and rest["cursor"] == {}
    newest = (await http.get(f"/api/session/{session_id}/message?order=desc&limit=1")).json()
    assert newest["data"][0]["type"] == "assistant" and newest["data"][0]["finish"] == "stop"
    one = await http.get(f"/api/session/{session_id}/message/{page['data'][0]['id']}")
    check("/api/session/<sessionID>/message/<messageID>", "get", one)
    assert (await http.get(f"/api/session/{session_id}/message/msg_nope")).status_code == 404
    assert (await http.get(f"/api/session/{session_id}/message?cursor=bogus")).status_code == 400

    await http.post(f"/api/session/{session_id}/compact")
    context = check(
        "/api/session/<sessionID>/context",
        "get",
        await http.get(f"/api/session/{session_id}/context"),
    )["data"]
    assert context[0]["type"] == "compaction" and context[0]["reason"] == "manual"
    assert "list" in context[0]["summary"]


async def test_the_v2_event_stream_validates_and_resumes_also_after_a_restart(
    settings: Settings,
) -> None:
    frames: list[tuple[str | None, dict[str, Any]]] = []

    async def read(server: str, headers: dict[str, str], until: str) -> None:
        async with httpx.AsyncClient(base_url=server, timeout=30) as stream_http:
            async with stream_http.stream("GET", "/api/event", headers=headers) as response:
                assert response.headers["content-type"].startswith("text/event-stream")
                event_id = None
                async for line in response.aiter_lines():
                    if line.startswith("id: "):
                        event_id = line[4:]
                    elif line.startswith("data: "):
                        frames.append((event_id, json.loads(line[6:])))
                        event_id = None
                        if frames[-1][1]["type"] == until:
                            return

    async def resumed_after(server: str, cursor: str) -> list[dict[str, Any]]:
        frames.clear()
        await asyncio.wait_for(read(server, {"Last-Event-ID": cursor}, "session.idle"), 20)
        return [f for i, f in frames if i is not None]

    async with serve_in_background(settings) as server:
        async with httpx.AsyncClient(base_url=server, timeout=30) as http:
            session_id = await new_session(http)
            reader = asyncio.create_task(read(server, {}, "session.idle"))
            for _ in range(500):  # listening before the prompt
                if frames:
                    break
                await asyncio.sleep(0.02)
            await http.post(f"/api/session/{session_id}/prompt", json={"prompt": {"text": "list"}})
            await asyncio.wait_for(reader, 20)
        first_run = list(frames)
        kinds = [f["type"] for _, f in first_run]
        assert kinds[0] == "server.connected"
        # the session.next.* events ride along, deltas included (not numbered here)
        assert {
            "session.next.prompted", "session.next.step.started", "session.next.tool.called",
            "session.next.tool.input.delta", "session.next.text.delta", "session.next.step.ended",
        } <= set(kinds)  # fmt: skip
        assert all("durable" not in f for _, f in first_run)
        assert {"message.updated", "message.part.updated", "session.status", "session.idle"} <= set(
            kinds
        )
        for _, event in first_run:
            validate_schema({"$ref": "#/components/schemas/V2Event"}, event)
            assert event["location"] == {"directory": first_run[0][1]["location"]["directory"]}
        # resume after the first part update: exactly what followed it
        logged = [(i, f) for i, f in first_run if i is not None]
        cut = next(n for n, (_, f) in enumerate(logged) if f["type"] == "message.part.updated")
        resumed = await resumed_after(server, str(logged[cut][0]))
        assert resumed == [f for _, f in logged[cut + 1 :]]
        assert len(first_run) > len(resumed)
    # a new server on the same data dir: the cursor is a place in the log it keeps
    async with serve_in_background(settings) as server:
        assert await resumed_after(server, str(logged[cut][0])) == resumed


async def test_an_always_answer_is_a_saved_permission(http: httpx.AsyncClient) -> None:
    session_id = await new_session(http, agent="plan")
    await http.post(f"/api/session/{session_id}/prompt", json={"prompt": {"text": "bash echo s"}})
    asks = await pending(http, session_id, "permission")
    await http.post(
        f"/api/session/{session_id}/permission/{asks[0]['id']}/reply", json={"reply": "always"}
    )
    await settle(http, session_id)
    project = (await http.get("/api/location")).json()["project"]["id"]
    saved = (await http.get(f"/api/permission/saved?projectID={project}")).json()
    validate_schema(
        document()["paths"]["/api/permission/saved"]["get"]["responses"]["200"]["content"][
            "application/json"
        ]["schema"],
        saved,
    )
    (rule,) = saved["data"]
    assert (rule["action"], rule["resource"], rule["projectID"]) == ("bash", "echo *", project)
    assert (await http.get("/api/permission/saved?projectID=other")).json()["data"] == []
    assert (await http.delete(f"/api/permission/saved/{rule['id']}")).status_code == 204
    assert (await http.get("/api/permission/saved")).json()["data"] == []
    assert (await http.delete(f"/api/permission/saved/{rule['id']}")).status_code == 404
    assert (await http.delete("/api/permission/saved/nonsense")).status_code == 404


async def test_durable_history_and_stream_follow_the_session(server: str) -> None:
    async with httpx.AsyncClient(base_url=server, timeout=30) as http:
        session_id = await new_session(http)
        for text in ("list", "hello", "retry"):
            await http.post(f"/api/session/{session_id}/prompt", json={"prompt": {"text": text}})
            await settle(http, session_id)
        await http.post(f"/api/session/{session_id}/compact")
        page = check(
            "/api/session/<sessionID>/history",
            "get",
            await http.get(f"/api/session/{session_id}/history?limit=1000"),
        )
        events = page["data"]
        assert page["hasMore"] is False
        assert [e["durable"]["seq"] for e in events] == list(range(1, len(events) + 1))
        kinds = [e["type"].removeprefix("session.next.") for e in events]
        assert kinds[:4] == ["prompted", "step.started", "tool.input.started", "tool.input.ended"]
        assert {
            "tool.called", "tool.success", "step.ended", "text.started", "text.ended",
            "reasoning.started", "reasoning.ended", "retried", "compaction.started",
            "compaction.ended",
        } <= set(kinds)  # fmt: skip
        prompts = [e["data"]["prompt"]["text"] for e in events if e["type"].endswith("prompted")]
        assert prompts == ["list", "hello", "retry"]
        ended = next(e for e in events if e["type"].endswith("compaction.ended"))
        assert "list" in ended["data"]["text"]
        # paging: after a sequence number, a limit
        second = (await http.get(f"/api/session/{session_id}/history?after=3&limit=2")).json()
        assert [e["durable"]["seq"] for e in second["data"]] == [4, 5] and second["hasMore"]
        assert (await http.get(f"/api/session/{session_id}/history?after=x")).status_code == 400

        # the stream replays after a sequence number, then goes on live
        frames: list[dict[str, Any]] = []

        async def follow() -> None:
            url = f"/api/session/{session_id}/event?after={len(events) - 1}"
            async with http.stream("GET", url) as response:
                async for line in response.aiter_lines():
                    if line.startswith("data: "):
                        frames.append(json.loads(line[6:]))
                        if frames[-1]["type"] == "session.next.step.ended":
                            return

        follower = asyncio.create_task(follow())
        await asyncio.sleep(0.3)
        await http.post(f"/api/session/{session_id}/prompt", json={"prompt": {"text": "hello"}})
        await asyncio.wait_for(follower, 20)
    assert frames[0] == events[-1]
    assert [f["durable"]["seq"] for f in frames] == list(
        range(len(events), len(events) + len(frames))
    )
    assert frames[1]["type"] == "session.next.prompted"
    stream_schema = document()["components"]["schemas"]["SessionDurableEvent"]
    for frame in frames:
        validate_schema(stream_schema, frame)


async def test_a_client_asks_through_the_sessions_rules(http: httpx.AsyncClient) -> None:
    session_id = await new_session(http, agent="plan")
    url = f"/api/session/{session_id}/permission"
    schema = document()["paths"]["/api/session/{sessionID}/permission"]["post"]["responses"]
    allowed = await http.post(url, json={"action": "read", "resources": ["README.md"]})
    validate_schema(schema["200"]["content"]["application/json"]["schema"], allowed.json())
    assert allowed.json()["data"]["effect"] == "allow"
    asked = await http.post(
        url,
        json={"id": "per_mine", "action": "bash", "resources": ["make deploy"], "save": ["make *"]},
    )
    assert asked.json()["data"] == {"id": "per_mine", "effect": "ask"}
    pending = (await http.get(url)).json()["data"]
    assert [(p["id"], p["action"], p["save"]) for p in pending] == [
        ("per_mine", "bash", ["make *"])
    ]
    again = await http.post(url, json={"id": "per_mine", "action": "bash", "resources": ["x"]})
    assert again.status_code == 409
    replied = await http.post(f"{url}/per_mine/reply", json={"reply": "always"})
    assert replied.status_code == 204
    # "always" saved the rule: the same ask is now allowed at once
    later = await http.post(url, json={"action": "bash", "resources": ["make test"]})
    assert later.json()["data"]["effect"] == "allow"
    empty = await http.post(url, json={"action": "bash", "resources": []})
    assert empty.status_code == 400


async def _open_v2_streams(http: httpx.AsyncClient) -> float:
    metrics = (await http.get("/metrics")).text
    for line in metrics.splitlines():
        if line.startswith('partwire_streams{transport="v2"}'):
            return float(line.split()[-1])
    return 0.0


async def _v2_streams_become(http: httpx.AsyncClient, count: int) -> float:
    """The open v2 streams, once they are ``count`` (or after 5 s)."""
    for _ in range(250):
        if (now := await _open_v2_streams(http)) == count:
            return now
        await asyncio.sleep(0.02)
    return await _open_v2_streams(http)


async def test_a_stalled_v2_client_that_leaves_leaves_nothing_for_the_cycle_collector(
    http: httpx.AsyncClient, server: str
) -> None:
    """What a v2 stream held for a client that stopped reading is freed when the client
    goes, not kept in reference cycles (a cancelled send's traceback and frames) until a
    full collection, which a server's thresholds make rare."""
    session_id = (await http.post("/session", json={})).json()["id"]
    body = {"parts": [{"type": "text", "text": "long 20000"}]}
    assert (await http.post(f"/session/{session_id}/message", json=body)).status_code == 200
    gc.collect()
    gc.disable()
    try:
        stalled_client = await asyncio.to_thread(
            stalled_sse, server, f"/api/session/{session_id}/event"
        )
        assert await _v2_streams_become(http, 1) == 1
        await asyncio.sleep(0.5)  # the replay fills the socket's buffers and waits
        stalled_client.close()
        assert await _v2_streams_become(http, 0) == 0
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        held = [
            len(ref)
            for garbage in gc.garbage
            for ref in gc.get_referents(garbage)
            if isinstance(ref, str | bytes) and len(ref) > 50_000
        ]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert held == []
