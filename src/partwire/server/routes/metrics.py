"""``GET /metrics``: Prometheus' text format (partwire.metrics). It needs the same
authentication as every other route (the password, when one is set)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from partwire import metrics
from partwire.server.routes.scope import runtime_of

router = APIRouter()


@router.get("/metrics", operation_id="metrics", include_in_schema=False)
async def scrape(request: Request) -> Response:
    runtime = runtime_of(request)
    running = len(runtime.status.active())
    streams = {name: count for name, count in runtime.quotas.transports.items() if count}
    return Response(metrics.exposition(running, streams), media_type=metrics.CONTENT_TYPE)
