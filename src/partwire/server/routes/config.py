"""Configuration and provider routes: GET/PATCH /config, /config/providers, /provider."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Literal

from fastapi import APIRouter, Request, Response
from pydantic import Field, ValidationError

from partwire import keys
from partwire.config import (
    BUILTIN_PROVIDERS,
    read_user_config,
    redact,
    write_project_config,
    write_user_config,
)
from partwire.errors import BadRequestError, ConfigError, NotFoundError
from partwire.providers.listing import all_providers, connected, defaults
from partwire.runtime import Runtime
from partwire.schema.base import WireModel
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


class ApiKey(WireModel):
    """opencode's ApiAuth: the only kind of credential partwire keeps."""

    type: Literal["api"]
    key: str = Field(min_length=1, max_length=4096)
    metadata: dict[str, str] | None = None


@router.put("/auth/{providerID}", operation_id="auth.set")
async def set_auth(request: Request, providerID: str, body: dict[str, Any]) -> Response:
    """Keep an API key for a provider (``auth.json`` in the data dir, owner-only), as
    opencode's /connect does; the provider is usable at once. OAuth logins are refused."""
    runtime = _runtime(request)
    if body.get("type") != "api":
        raise BadRequestError(
            f"partwire takes API keys only (type api), not {body.get('type')!r}", field="type"
        )
    try:
        key = ApiKey.model_validate(body)
    except ValidationError as exc:
        raise BadRequestError(f"auth: {exc.errors()[0]['msg']}", field="key") from None
    known = {*BUILTIN_PROVIDERS, *runtime.settings.providers}
    if providerID not in known:
        raise BadRequestError(
            f"no provider {providerID!r}: configure it in partwire.json (its baseURL) or use "
            f"one of {', '.join(sorted(known))}",
            field="providerID",
            kind="Path",
        )
    await asyncio.to_thread(keys.store, runtime.settings.data_dir, providerID, key.key)
    await runtime.reconfigure()
    return Response("true", media_type="application/json")


@router.delete("/auth/{providerID}", operation_id="auth.remove")
async def remove_auth(request: Request, providerID: str) -> Response:
    runtime = _runtime(request)
    removed = await asyncio.to_thread(keys.store, runtime.settings.data_dir, providerID, None)
    if not removed:
        raise NotFoundError("Stored key of provider", providerID)
    await runtime.reconfigure()
    return Response("true", media_type="application/json")


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
