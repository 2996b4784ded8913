"""The app as ``partwire serve`` builds it: its route tables before its first request."""

from __future__ import annotations

import asyncio
from typing import Any

import fastapi.routing
import pytest

from partwire.config import Settings
from partwire.server.app import build_route_tables, create_app
from tests.server.conftest import in_process


def _count_route_builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many routes FastAPI has built into its routers' tables (one count a call).
    The function is FastAPI's own (0.16x): where it is gone, so is the check."""
    context = getattr(fastapi.routing, "_EffectiveRouteContext", None)
    if context is None or not hasattr(context, "from_api_route"):
        pytest.skip("this FastAPI builds no route tables per router (nothing to count)")
    built: list[int] = []
    build = context.from_api_route.__func__

    def counted(cls: type, *args: Any, **kwargs: Any) -> Any:
        built.append(1)
        return build(cls, *args, **kwargs)

    monkeypatch.setattr(context, "from_api_route", classmethod(counted))
    return built


async def _first_requests(app: fastapi.FastAPI) -> list[int]:
    """The status of the app's first requests, to routes of routers early and late."""
    async with in_process(app) as http:
        return [(await http.get(path)).status_code for path in ("/session", "/config", "/agent")]


async def test_the_route_tables_are_built_before_the_first_request(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = _count_route_builds(monkeypatch)
    app = create_app(settings)
    await asyncio.to_thread(build_route_tables, app)  # as `partwire serve` does: off the loop
    at_build = len(built)
    assert await _first_requests(app) == [200, 200, 200]
    assert at_build > 100 and len(built) == at_build  # the requests built nothing more
