"""GET /agent: the agents a prompt can name."""

from __future__ import annotations

from fastapi import APIRouter, Response

from partwire.schema.permission import Agent
from partwire.server.routes.session import wire
from partwire.session.agents import list_agents

router = APIRouter()


@router.get("/agent", response_model=list[Agent], operation_id="app.agents")
async def agents() -> Response:
    return wire(list_agents())
