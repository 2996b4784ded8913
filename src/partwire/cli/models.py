"""``partwire models``: what can be used, one ``provider/model`` per line."""

from __future__ import annotations

from rich.console import Console

from partwire.config import Settings
from partwire.providers.listing import all_providers, connected


def print_models(settings: Settings, console: Console) -> int:
    usable = set(connected(settings))
    for provider in all_providers(settings):
        state = "" if provider.id in usable else "  (no key: not usable)"
        for model_id, model in provider.models.items():
            marker = "*" if f"{provider.id}/{model_id}" == settings.default_model else " "
            console.print(
                f"{marker} {provider.id}/{model_id}  [dim]{model.name} · "
                f"context {model.limit.context:,}{state}[/dim]",
                soft_wrap=True,
            )
    return 0
