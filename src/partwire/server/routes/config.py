"""Configuration and provider routes: GET/PATCH /config, /config/providers, /provider."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Request, Response

from partwire.config import read_user_config, redact, write_project_config, write_user_config
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


@router.get("/provider/auth", operation_id="provider.auth")
async def provider_auth(request: Request) -> Response:
    """How each configured provider is authenticated: by an API key (in partwire.json,
    ``{env:NAME}`` or the web UI's key form); the demo model needs nothing."""
    settings = _runtime(request).settings
    methods = {pid: [{"type": "api", "label": "API key"}] for pid in settings.providers}
    return Response(json.dumps(methods), media_type="application/json")


@router.get("/global/config", operation_id="global.config.get")
async def get_global_config(request: Request) -> Response:
    """The user's own partwire.json (every project's base), secrets redacted."""
    body = redact(read_user_config(_runtime(request).settings))
    return Response(json.dumps(body), media_type="application/json")


@router.patch("/global/config", operation_id="global.config.update")
async def patch_global_config(request: Request, body: dict[str, Any]) -> Response:
    runtime = _runtime(request)
    try:
        write_user_config(runtime.settings, body)
        await runtime.reconfigure()
    except ConfigError as exc:
        raise BadRequestError(exc.message) from None
    return Response(
        json.dumps(redact(read_user_config(runtime.settings))), media_type="application/json"
    )


@router.get("/provider", response_model=ProviderList, operation_id="provider.list")
async def provider_list(request: Request) -> Response:
    settings = _runtime(request).settings
    providers = all_providers(settings)
    body = ProviderList(
        all=providers, default=defaults(providers, settings), connected=connected(settings)
    )
    return wire(body)
