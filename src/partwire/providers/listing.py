"""What GET /provider and GET /config/providers report: providers, their models, defaults."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from partwire.config import Api, ModelConfig, ProviderConfig, Settings, shown_url
from partwire.providers.catalog import DEFAULT_CONTEXT
from partwire.schema.provider import (
    CacheCost,
    ModelApi,
    ModelCost,
    ModelInfo,
    ModelLimit,
    ProviderInfo,
)

_NPM: dict[Api, str] = {
    "openai": "@ai-sdk/openai",
    "openai-responses": "@ai-sdk/openai",
    "openai-compatible": "@ai-sdk/openai-compatible",
    "anthropic": "@ai-sdk/anthropic",
}
_URL: dict[Api, str] = {
    "openai": "https://api.openai.com/v1",
    "openai-responses": "https://api.openai.com/v1",
    "openai-compatible": "",
    "anthropic": "https://api.anthropic.com",
}
_ENV = {"openai": ["OPENAI_API_KEY"], "anthropic": ["ANTHROPIC_API_KEY"]}
_NAMES = {"openai": "OpenAI", "anthropic": "Anthropic", "demo": "Demo (offline)"}
DEFAULT_OUTPUT = 4096


def display_name(provider_id: str) -> str:
    return _NAMES.get(provider_id, provider_id)


def key_env_names(provider_id: str) -> list[str]:
    """The environment variables partwire reads a provider's API key from."""
    return list(_ENV.get(provider_id, []))


def _price(prices: Any, name: str) -> float:
    """A flat price per million tokens (tiered prices, which need the usage, count as 0)."""
    value = getattr(prices, name, None)
    return float(value) if isinstance(value, int | float | Decimal) else 0.0


def _catalog(provider_id: str) -> dict[str, ModelConfig]:
    """The models the bundled genai-prices data knows for a provider id."""
    from genai_prices.data_snapshot import get_snapshot

    for provider in get_snapshot().providers:
        if provider.id != provider_id:
            continue
        found: dict[str, ModelConfig] = {}
        for model in provider.models:
            prices = model.prices
            cost = None
            if not isinstance(prices, list):
                cost = {
                    "input": _price(prices, "input_mtok"),
                    "output": _price(prices, "output_mtok"),
                    "cache_read": _price(prices, "cache_read_mtok"),
                    "cache_write": _price(prices, "cache_write_mtok"),
                }
            found[model.id] = ModelConfig(
                id=model.id, name=model.name, context=model.context_window, cost=cost
            )
        return found
    return {}


def _model(config: ProviderConfig, model: ModelConfig) -> ModelInfo:
    cost = model.cost or {}
    return ModelInfo(
        id=model.id,
        provider_id=config.id,
        api=ModelApi(
            id=model.id, url=shown_url(config.base_url or _URL[config.api]), npm=_NPM[config.api]
        ),
        name=model.name or model.id,
        cost=ModelCost(
            input=cost.get("input", 0),
            output=cost.get("output", 0),
            cache=CacheCost(read=cost.get("cache_read", 0), write=cost.get("cache_write", 0)),
        ),
        limit=ModelLimit(
            context=model.context or DEFAULT_CONTEXT, output=model.output or DEFAULT_OUTPUT
        ),
    )


def provider_info(config: ProviderConfig) -> ProviderInfo:
    models = {**_catalog(config.id), **config.models}
    options: dict[str, Any] = {"baseURL": shown_url(config.base_url)} if config.base_url else {}
    return ProviderInfo(
        id=config.id,
        name=display_name(config.id),
        source="config" if config.models or config.base_url else "env",
        env=key_env_names(config.id),
        options=options,
        models={mid: _model(config, m) for mid, m in models.items()},
    )


def demo_info() -> ProviderInfo:
    demo = ProviderConfig(id="demo", api="openai-compatible", base_url="offline")
    model = ModelConfig(id="demo", name="Demo model (offline, deterministic)", context=200_000)
    return ProviderInfo(
        id="demo", name=_NAMES["demo"], source="custom", models={"demo": _model(demo, model)}
    )


def all_providers(settings: Settings) -> list[ProviderInfo]:
    return [demo_info(), *(provider_info(c) for c in settings.providers.values())]


def defaults(providers: list[ProviderInfo], settings: Settings) -> dict[str, str]:
    """The model each provider uses by default: the configured default, else its first."""
    chosen_provider, _, chosen_model = settings.default_model.partition("/")
    result: dict[str, str] = {}
    for provider in providers:
        if provider.id == chosen_provider:
            result[provider.id] = chosen_model
        elif provider.models:
            result[provider.id] = next(iter(provider.models))
    return result


def connected(settings: Settings) -> list[str]:
    """Providers that can be called now: a key, or a base URL for a local server."""
    usable = [c.id for c in settings.providers.values() if c.api_key or c.base_url]
    return ["demo", *usable]
