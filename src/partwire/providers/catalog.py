"""Model facts as data: context and output limits and prices, offline.

The configuration wins (``provider.<id>.models.<model>.limit`` / ``cost``, USD per
million tokens); otherwise the bundled genai-prices snapshot answers. Prices are
never fetched at run time.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache

from partwire.config import ModelConfig
from partwire.providers.stream import Usage

DEFAULT_CONTEXT = 128_000


@dataclass(frozen=True)
class ModelFacts:
    context: int
    output: int | None
    prices: dict[str, float] | None  # USD / million tokens: input, output, cache_read, cache_write
    known: bool


def _usage(usage: Usage) -> object:
    from genai_prices import Usage as PriceUsage

    # genai-prices counts input as the whole prompt, cached parts included
    return PriceUsage(
        input_tokens=usage.input,
        output_tokens=usage.output,
        cache_read_tokens=usage.cache_read or None,
        cache_write_tokens=usage.cache_write or None,
    )


@lru_cache(maxsize=512)
def _lookup(provider_id: str, model_id: str) -> tuple[int | None, bool]:
    """(context window, whether genai-prices knows the model)."""
    from genai_prices import Usage as PriceUsage
    from genai_prices import calc_price

    try:
        found = calc_price(PriceUsage(input_tokens=0), model_ref=model_id, provider_id=provider_id)
    except LookupError:
        return None, False
    return getattr(found.model, "context_window", None), True


def facts(provider_id: str, model_id: str, config: ModelConfig | None) -> ModelFacts:
    context, known = _lookup(provider_id, model_id)
    return ModelFacts(
        context=(config.context if config else None) or context or DEFAULT_CONTEXT,
        output=config.output if config else None,
        prices=config.cost if config else None,
        known=known or config is not None,
    )


def _configured_cost(prices: dict[str, float], usage: Usage) -> float:
    uncached = max(0, usage.input - usage.cache_read - usage.cache_write)
    total = (
        uncached * prices.get("input", 0.0)
        + usage.output * prices.get("output", 0.0)
        + usage.cache_read * prices.get("cache_read", prices.get("input", 0.0))
        + usage.cache_write * prices.get("cache_write", prices.get("input", 0.0))
    )
    return total / 1_000_000


def cost(provider_id: str, model_id: str, config: ModelConfig | None, usage: Usage) -> float:
    """The USD cost of one model call; 0 when nothing is known about its prices."""
    if config is not None and config.cost:
        return _configured_cost(config.cost, usage)
    from genai_prices import calc_price

    try:
        price = calc_price(_usage(usage), model_ref=model_id, provider_id=provider_id)
    except LookupError:
        return 0.0
    return float(Decimal(price.total_price))
