"""Configuration and provider routes: GET/PATCH /config, /config/providers, /provider."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Request, Response

from partwire.config import redact, write_project_config
from partwire.errors import BadRequestError, ConfigError
from partwire.providers.listing import all_providers, connected, defaults
from partwire.runtime import Runtime
from partwire.schema.provider import ConfigProviders, ProviderList
from partwire.server.routes.session import wire

router = APIRouter(tags=["config"])


def _runtime(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


def _config(runtime: Runtime) -> Response:
    body = redact(runtime.settings.raw_config)
    return Response(json.dumps(body), media_type="application/json")


@router.get("/config", operation_id="config.get")
async def get_config(request: Request) -> Response:
    return _config(_runtime(request))


@router.patch("/config", operation_id="config.update")
async def patch_config(request: Request, body: dict[str, Any]) -> Response:
    runtime = _runtime(request)
    try:
        write_project_config(runtime.settings, body)
        await runtime.reconfigure()
    except ConfigError as exc:
        raise BadRequestError(exc.message) from None
    return _config(runtime)


@router.get("/config/providers", response_model=ConfigProviders, operation_id="config.providers")
async def config_providers(request: Request) -> Response:
    settings = _runtime(request).settings
    providers = all_providers(settings)
    return wire(ConfigProviders(providers=providers, default=defaults(providers, settings)))


@router.get("/provider", response_model=ProviderList, operation_id="provider.list")
async def provider_list(request: Request) -> Response:
    settings = _runtime(request).settings
    providers = all_providers(settings)
    body = ProviderList(
        all=providers, default=defaults(providers, settings), connected=connected(settings)
    )
    return wire(body)
