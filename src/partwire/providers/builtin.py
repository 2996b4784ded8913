"""The providers partwire comes with: the demo model always, and the providers the settings
configure. Kept apart from the registry, which they register into (so the registry
imports none of them and no import goes round in a circle)."""

from __future__ import annotations

from partwire.config import Settings
from partwire.providers.registry import Closer


def load_builtin_providers(settings: Settings | None = None) -> list[Closer]:
    """Register the demo model and the configured providers; returns what to close at exit."""
    from partwire.providers import demo

    demo.register()
    if settings is None or not settings.providers:
        return []
    from partwire.providers import configured  # the SDKs load only when a provider is set up

    return [client.close for client in configured.register(settings)]
