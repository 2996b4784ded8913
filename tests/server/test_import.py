"""POST /session/import: the route behind `partwire import` checks what it stores."""

from __future__ import annotations

import asyncio

import httpx

from partwire.client.http import PartwireClient


async def _exported(client: PartwireClient) -> dict[str, object]:
    session = await client.create_session(title="To copy")
    await client.prompt(session.id, "hello there")
    return (await client.export(session.id)).wire()


async def test_a_message_of_another_session_is_refused_by_name(
    client: PartwireClient, server: str
) -> None:
    body = await _exported(client)
    messages = body["messages"]
    assert isinstance(messages, list)
    messages[1]["info"]["sessionID"] = "ses_other"
    before = len(await client.list_sessions())
    async with httpx.AsyncClient(base_url=server) as http:
        response = await http.post("/session/import", json=body)
    assert response.status_code == 400
    assert "messages.1.info.sessionID" in response.json()["data"]["message"]
    assert len(await client.list_sessions()) == before


async def test_an_import_is_announced_and_its_history_order_kept(
    client: PartwireClient,
) -> None:
    body = await _exported(client)
    events = client.events()
    async for event in events:
        if event.type == "server.connected":
            break
    async with httpx.AsyncClient(base_url=client.base_url) as http:
        response = await http.post("/session/import", json=body)
    assert response.status_code == 200, response.text
    copy_id = response.json()["id"]
    async for event in events:
        if event.type == "session.created":
            assert event.properties.info.id == copy_id
            break
    await events.aclose()
    copied = await client.messages(copy_id)
    assert [m.info.role for m in copied] == ["user", "assistant"]
    assert copied[1].info.parent_id == copied[0].info.id


async def test_concurrent_imports_of_one_export_never_meet(
    client: PartwireClient, server: str
) -> None:
    body = await _exported(client)
    info = body["info"]
    assert isinstance(info, dict)
    await client.delete_session(info["id"])  # its ids are free again: each import may claim them
    async with httpx.AsyncClient(base_url=server, timeout=30) as http:
        responses = await asyncio.gather(
            *(http.post("/session/import", json=body) for _ in range(8))
        )
    assert [r.status_code for r in responses] == [200] * 8, [r.text for r in responses]
    made = [r.json()["id"] for r in responses]
    assert len(set(made)) == 8 and made.count(info["id"]) == 1
    for session_id in made:
        messages = await client.messages(session_id)
        assert [m.info.role for m in messages] == ["user", "assistant"], session_id
