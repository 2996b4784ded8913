"""The LanguageModel protocol every provider implements."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

from partwire.providers.stream import ModelRequest, StreamEvent, Usage


class LanguageModel(Protocol):
    provider_id: str
    model_id: str
    context_limit: int

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """One model call: yields normalized events, ending with Finish or StreamError."""
        ...

    def cost(self, usage: Usage) -> float:
        """USD for one call's usage (0 when the prices are unknown)."""
        ...
