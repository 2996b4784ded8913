"""Providers and models as opencode's /provider and /config/providers describe them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from partwire.schema.base import WireModel


class ModelApi(WireModel):
    id: str
    url: str
    npm: str


class Modalities(WireModel):
    text: bool = True
    audio: bool = False
    image: bool = False
    video: bool = False
    pdf: bool = False


class Capabilities(WireModel):
    temperature: bool = True
    reasoning: bool = False
    attachment: bool = False
    toolcall: bool = True
    input: Modalities = Modalities()
    output: Modalities = Modalities()
    interleaved: bool = False


class CacheCost(WireModel):
    read: float = 0
    write: float = 0


class ModelCost(WireModel):
    input: float = 0
    output: float = 0
    cache: CacheCost = CacheCost()


class ModelLimit(WireModel):
    context: int
    output: int


class ModelInfo(WireModel):
    id: str
    provider_id: str = Field(alias="providerID")
    api: ModelApi
    name: str
    capabilities: Capabilities = Capabilities()
    cost: ModelCost = ModelCost()
    limit: ModelLimit
    status: Literal["alpha", "beta", "deprecated", "active"] = "active"
    options: dict[str, Any] = Field(default_factory=dict)
    headers: dict[str, str] = Field(default_factory=dict)
    release_date: str = ""


class ProviderInfo(WireModel):
    """A provider as clients see it. The key is never part of it."""

    id: str
    name: str
    source: Literal["env", "config", "custom", "api"]
    env: list[str] = Field(default_factory=list)
    options: dict[str, Any] = Field(default_factory=dict)
    models: dict[str, ModelInfo] = Field(default_factory=dict)


class ProviderList(WireModel):
    """Body of GET /provider."""

    all: list[ProviderInfo]
    default: dict[str, str]
    connected: list[str]


class ConfigProviders(WireModel):
    """Body of GET /config/providers."""

    providers: list[ProviderInfo]
    default: dict[str, str]
