"""Provider registry: built-in and third-party providers register the same way."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from partwire.config import Settings
from partwire.errors import BadRequestError
from partwire.providers.base import LanguageModel

ModelFactory = Callable[[str, Settings], LanguageModel]
Closer = Callable[[], Awaitable[None]]

_PROVIDERS: dict[str, tuple[ModelFactory, tuple[str, ...], bool]] = {}


def register_provider(
    provider_id: str, factory: ModelFactory, models: tuple[str, ...], *, open_ended: bool = False
) -> None:
    """Make ``provider_id/<model>`` resolvable; ``models`` lists the known model ids.

    ``open_ended`` providers accept any model id (the API itself says if it is wrong).
    """
    _PROVIDERS[provider_id] = (factory, models, open_ended)


def available_models() -> list[str]:
    return [f"{pid}/{mid}" for pid, (_, models, _) in _PROVIDERS.items() for mid in models]


def providers() -> dict[str, tuple[str, ...]]:
    return {pid: models for pid, (_, models, _) in _PROVIDERS.items()}


def resolve_model(provider_id: str, model_id: str, settings: Settings) -> LanguageModel:
    entry = _PROVIDERS.get(provider_id)
    if entry is None or (model_id not in entry[1] and not entry[2]):
        raise BadRequestError(
            f"Unknown model {provider_id}/{model_id}; "
            f"available: {', '.join(available_models()) or 'none'}",
            field="model",
        )
    return entry[0](model_id, settings)


def refuse_variant(provider_id: str, model_id: str, variant: str | None, field: str) -> None:
    """Model variants (opencode's per-model option presets) do not exist here: a variant
    is refused rather than ignored."""
    if variant is not None:
        raise BadRequestError(
            f"{field}: {provider_id}/{model_id} has no variant {variant!r} "
            "(partwire's models have no variants)",
            field=field,
        )


def parse_model_ref(ref: str) -> tuple[str, str]:
    """Split ``provider/model`` into its halves, with an error that shows the form."""
    provider_id, sep, model_id = ref.partition("/")
    if not sep or not provider_id or not model_id:
        raise BadRequestError(f"Model {ref!r} must look like provider/model, e.g. demo/demo")
    return provider_id, model_id
