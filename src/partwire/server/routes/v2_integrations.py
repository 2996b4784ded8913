"""opencode v2's integrations and credentials (``/api/integration``, ``/api/credential``)
over partwire's providers and the API keys kept in the data dir's ``auth.json``.

An integration is a provider partwire can call (built in or configured); its methods are
an API key or an environment variable (partwire has no OAuth sign-in, so OAuth attempts
never exist), its connections the stored key (credential ``crd_<provider>``) and a set
environment variable.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Request, Response
from pydantic import Field

from partwire import keys
from partwire.config import BUILTIN_PROVIDERS, Settings
from partwire.errors import BadRequestError, NotFoundError
from partwire.providers.listing import display_name, key_env_names
from partwire.schema.base import WireModel
from partwire.server.routes.scope import runtime_of
from partwire.server.routes.v2 import body, listing, located, location_info

router = APIRouter(prefix="/api", tags=["v2"])
CREDENTIAL = "crd_"


class KeyConnect(WireModel):
    key: str = Field(min_length=1, max_length=4096)
    label: str | None = Field(default=None, max_length=200)


class OAuthConnect(WireModel):
    method_id: str = Field(alias="methodID")
    inputs: dict[str, str]
    label: str | None = None


class CredentialUpdate(WireModel):
    label: str = Field(max_length=200)


class AttemptComplete(WireModel):
    code: str | None = None


def _providers(settings: Settings) -> list[str]:
    return sorted({*BUILTIN_PROVIDERS, *settings.providers})


def _integration(settings: Settings, provider_id: str) -> dict[str, Any]:
    names = key_env_names(provider_id)
    methods: list[dict[str, Any]] = [{"type": "key", "label": "API key"}]
    if names:
        methods.append({"type": "env", "names": names})
    connections: list[dict[str, Any]] = []
    if provider_id in keys.stored(settings.data_dir):
        label = keys.labels(settings.data_dir).get(provider_id, "API key")
        connections.append({"type": "credential", "id": CREDENTIAL + provider_id, "label": label})
    connections += [
        {"type": "env", "name": n} for n in names if settings.source_env.get(n, "").strip()
    ]
    return {
        "id": provider_id,
        "name": display_name(provider_id),
        "methods": methods,
        "connections": connections,
    }


def _known(settings: Settings, provider_id: str) -> None:
    if provider_id not in _providers(settings):
        raise NotFoundError("Integration", provider_id)


@router.get("/integration", operation_id="v2.integration.list")
async def integrations(request: Request) -> Response:
    settings = runtime_of(request).settings
    found = await asyncio.to_thread(
        lambda: [_integration(settings, p) for p in _providers(settings)]
    )
    return listing(request, found)


@router.get("/integration/{integrationID}", operation_id="v2.integration.get")
async def integration(request: Request, integrationID: str) -> Response:
    settings = runtime_of(request).settings
    _known(settings, integrationID)
    found = await asyncio.to_thread(_integration, settings, integrationID)
    return body({"location": location_info(located(request)), "data": found})


@router.post(
    "/integration/{integrationID}/connect/key",
    operation_id="v2.integration.connect.key",
    status_code=204,
)
async def connect_key(request: Request, integrationID: str, given: KeyConnect) -> Response:
    """Keep the key (as PUT /auth/{provider} does); the provider is usable at once."""
    runtime = runtime_of(request)
    _known(runtime.settings, integrationID)
    data_dir = runtime.settings.data_dir
    await asyncio.to_thread(keys.store, data_dir, integrationID, given.key, label=given.label)
    await runtime.reconfigure()
    return Response(status_code=204)


@router.post(
    "/integration/{integrationID}/connect/oauth", operation_id="v2.integration.connect.oauth"
)
async def connect_oauth(request: Request, integrationID: str, given: OAuthConnect) -> Response:
    _known(runtime_of(request).settings, integrationID)
    raise BadRequestError(
        f"partwire has no OAuth sign-in (method {given.method_id!r}): connect "
        f"{integrationID} with an API key",
        field="methodID",
    )


@router.get("/integration/attempt/{attemptID}", operation_id="v2.integration.attempt.status")
async def attempt_status(attemptID: str) -> Response:
    raise NotFoundError("OAuth attempt", attemptID)  # partwire starts none


@router.delete(
    "/integration/attempt/{attemptID}",
    operation_id="v2.integration.attempt.cancel",
    status_code=204,
)
async def attempt_cancel(attemptID: str) -> Response:
    return Response(status_code=204)  # nothing to cancel: it is not running either way


@router.post(
    "/integration/attempt/{attemptID}/complete",
    operation_id="v2.integration.attempt.complete",
    status_code=204,
)
async def attempt_complete(attemptID: str, given: AttemptComplete) -> Response:
    raise NotFoundError("OAuth attempt", attemptID)


def _credential_provider(settings: Settings, credential_id: str) -> str:
    provider_id = credential_id.removeprefix(CREDENTIAL)
    if not credential_id.startswith(CREDENTIAL) or provider_id not in keys.stored(
        settings.data_dir
    ):
        raise NotFoundError("Credential", credential_id)
    return provider_id


@router.patch("/credential/{credentialID}", operation_id="v2.credential.update", status_code=204)
async def update_credential(
    request: Request, credentialID: str, given: CredentialUpdate
) -> Response:
    settings = runtime_of(request).settings
    provider_id = await asyncio.to_thread(_credential_provider, settings, credentialID)
    await asyncio.to_thread(keys.relabel, settings.data_dir, provider_id, given.label)
    return Response(status_code=204)


@router.delete("/credential/{credentialID}", operation_id="v2.credential.remove", status_code=204)
async def remove_credential(request: Request, credentialID: str) -> Response:
    runtime = runtime_of(request)
    provider_id = await asyncio.to_thread(_credential_provider, runtime.settings, credentialID)
    await asyncio.to_thread(keys.store, runtime.settings.data_dir, provider_id, None)
    await runtime.reconfigure()
    return Response(status_code=204)
