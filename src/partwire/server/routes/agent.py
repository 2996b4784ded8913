"""GET /agent: the agents a prompt can name, each with the model it answers with when a
prompt names none (the configured default, as the files say now)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from partwire.schema.permission import Agent, AgentModel
from partwire.server.routes.scope import runtime_of
from partwire.server.routes.session import wire
from partwire.session.agents import list_agents

router = APIRouter()


@router.get("/agent", response_model=list[Agent], operation_id="app.agents")
async def agents(request: Request) -> Response:
    provider, _, model = runtime_of(request).settings.default_model.partition("/")
    default = AgentModel(model_id=model, provider_id=provider)
    return wire([agent.model_copy(update={"model": default}) for agent in list_agents()])
