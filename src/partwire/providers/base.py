"""The LanguageModel protocol every provider implements."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

from partwire.providers.stream import ModelRequest, StreamEvent


class LanguageModel(Protocol):
    provider_id: str
    model_id: str
    context_limit: int

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """One model call: yields normalized events, ending with Finish or StreamError."""
        ...
