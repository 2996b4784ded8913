"""``partwire models``: what can be used, one ``provider/model`` per line.

Providers that can be called now come first (configured ones, then the offline demo),
then the ones that lack a key. The default model is marked ``*``. A long catalogue is
cut to :data:`SHOWN_PER_PROVIDER` models: the default and the configured ones first,
then the newest names; ``--all`` lists every model in catalogue order.
"""

from __future__ import annotations

import re

from rich.console import Console

from partwire.config import Settings
from partwire.providers.listing import all_providers, connected
from partwire.schema.provider import ProviderInfo

SHOWN_PER_PROVIDER = 10
# catalogue entries that are not chat models (left out of the short list only)
_NOT_CHAT = re.compile(
    r"embed|tts|whisper|davinci|babbage|curie|^ada|image|transcribe|audio|realtime|"
    r"moderation|search|dall-e|^ft:|computer-use"
)


def _order(providers: list[ProviderInfo], usable: set[str], default: str) -> list[ProviderInfo]:
    def rank(provider: ProviderInfo) -> int:
        if default.startswith(f"{provider.id}/"):
            return 0
        if provider.id in usable:
            return 2 if provider.id == "demo" else 1
        return 3

    return sorted(providers, key=rank)


def _short_list(names: list[str], default: str | None, keep: set[str]) -> list[str]:
    """The default, the configured models, then the newest-looking names (catalogues
    are alphabetical, so later versions sort last)."""
    first = [m for m in names if m == default] + [m for m in names if m in keep and m != default]
    rest = [m for m in reversed(names) if m not in first and not _NOT_CHAT.search(m)]
    return first + rest[: max(0, SHOWN_PER_PROVIDER - len(first))]


def print_models(settings: Settings, console: Console, *, show_all: bool = False) -> int:
    usable = set(connected(settings))
    for provider in _order(all_providers(settings), usable, settings.default_model):
        state = "" if provider.id in usable else "  (no key: not usable)"
        configured = settings.providers.get(provider.id)
        keep = set(configured.models) if configured else set()
        names = list(provider.models)
        default = (
            settings.default_model.partition("/")[2]
            if settings.default_model.startswith(f"{provider.id}/")
            else None
        )
        shown = names if show_all else _short_list(names, default, keep)
        for model_id in shown:
            model = provider.models[model_id]
            is_default = f"{provider.id}/{model_id}" == settings.default_model
            marker = "*" if is_default else " "
            note = " · default" if is_default else ""
            console.print(
                f"{marker} {provider.id}/{model_id}  [dim]{model.name} · "
                f"context {model.limit.context:,}{note}{state}[/dim]",
                soft_wrap=True,
            )
        if len(shown) < len(names):
            console.print(
                f"  [dim]… {len(names) - len(shown)} more {provider.id} models "
                "(partwire models --all lists them)[/dim]"
            )
    return 0
