"""/doc carries the event union (Event, GlobalEvent), and live events validate against it."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import httpx
from jsonschema import Draft202012Validator

from partwire.client.http import PartwireClient
from partwire.schema.event import REGISTRY
from tests.reference import event_schema_name


def validator(doc: dict[str, Any], name: str) -> Draft202012Validator:
    return Draft202012Validator(
        {"$ref": f"#/components/schemas/{name}", "components": doc["components"]}
    )


async def test_the_document_types_the_event_streams(server: str) -> None:
    async with httpx.AsyncClient(base_url=server) as http:
        doc = (await http.get("/doc")).json()
    schemas = doc["components"]["schemas"]
    refs = {item["$ref"].rsplit("/", 1)[1] for item in schemas["Event"]["anyOf"]}
    assert refs == {event_schema_name(t) for t in REGISTRY}
    for path, name in (("/event", "Event"), ("/global/event", "GlobalEvent")):
        content = doc["paths"][path]["get"]["responses"]["200"]["content"]
        assert content["text/event-stream"]["schema"] == {"$ref": f"#/components/schemas/{name}"}
    Draft202012Validator.check_schema({"components": doc["components"]})


async def test_live_events_validate_against_the_union(server: str) -> None:
    async with httpx.AsyncClient(base_url=server) as http:
        doc = (await http.get("/doc")).json()
    events: list[dict[str, Any]] = []
    async with PartwireClient(server) as client:
        session_id = (await client.create_session()).id

        connected = asyncio.Event()

        async def collect() -> None:
            async for event in client.events():
                events.append(json.loads(event.json))
                if event.type == "server.connected":
                    connected.set()

        follower = asyncio.create_task(collect())
        await asyncio.wait_for(connected.wait(), 20)
        await client.prompt(session_id, "list")
        for _ in range(250):
            if any(e["type"] == "session.idle" for e in events):
                break
            await asyncio.sleep(0.02)
        follower.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await follower
    seen = {event["type"] for event in events}
    assert {"message.updated", "message.part.updated", "session.idle"} <= seen
    union = validator(doc, "Event")
    for event in events:
        union.validate(event)
    bad = {**events[-1], "type": "no.such.event"}
    assert not union.is_valid(bad)
