"""partwire: model streams become typed, persistent, live conversation parts.

Every public name loads with its module when first used (PEP 562): ``import partwire``
costs nothing, and ``partwire serve`` imports only what serving needs, when it needs it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from partwire.version import __version__

if TYPE_CHECKING:
    from partwire.builder import StreamingMessageBuilder
    from partwire.bus import Bus
    from partwire.client.http import PartwireClient
    from partwire.client.reducer import ClientState, reduce
    from partwire.config import Settings, load_settings
    from partwire.errors import (
        AbortedError,
        BadRequestError,
        BuilderError,
        NotFoundError,
        PartwireError,
        ProviderError,
        RejectedError,
        ToolError,
    )
    from partwire.protocol.converters import converter
    from partwire.protocol.session_state import (
        ConversationState,
        initial_state,
        reduce_session_event,
    )
    from partwire.providers.base import LanguageModel
    from partwire.providers.registry import register_provider
    from partwire.runtime import Runtime
    from partwire.schema.event import Event
    from partwire.schema.input import SessionCreateInput
    from partwire.schema.session_events import (
        SessionEvent,
        create_session_event,
        enrich_event_context,
        is_conversation_event,
    )
    from partwire.server.app import create_app
    from partwire.server.runner import serve_in_background
    from partwire.session.recording import Recording
    from partwire.tools.base import Tool, ToolContext, ToolResult
    from partwire.tools.registry import register_tool

_HOMES = {
    "AbortedError": "partwire.errors",
    "BuilderError": "partwire.errors",
    "RejectedError": "partwire.errors",
    "Recording": "partwire.session.recording",
    "SessionCreateInput": "partwire.schema.input",
    "ConversationState": "partwire.protocol.session_state",
    "initial_state": "partwire.protocol.session_state",
    "reduce_session_event": "partwire.protocol.session_state",
    "SessionEvent": "partwire.schema.session_events",
    "create_session_event": "partwire.schema.session_events",
    "enrich_event_context": "partwire.schema.session_events",
    "is_conversation_event": "partwire.schema.session_events",
    "converter": "partwire.protocol.converters",
    "BadRequestError": "partwire.errors",
    "Bus": "partwire.bus",
    "ClientState": "partwire.client.reducer",
    "Event": "partwire.schema.event",
    "LanguageModel": "partwire.providers.base",
    "NotFoundError": "partwire.errors",
    "PartwireClient": "partwire.client.http",
    "PartwireError": "partwire.errors",
    "ProviderError": "partwire.errors",
    "Runtime": "partwire.runtime",
    "Settings": "partwire.config",
    "StreamingMessageBuilder": "partwire.builder",
    "Tool": "partwire.tools.base",
    "ToolContext": "partwire.tools.base",
    "ToolError": "partwire.errors",
    "ToolResult": "partwire.tools.base",
    "create_app": "partwire.server.app",
    "load_settings": "partwire.config",
    "reduce": "partwire.client.reducer",
    "register_provider": "partwire.providers.registry",
    "register_tool": "partwire.tools.registry",
    "serve_in_background": "partwire.server.runner",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'partwire' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])


__all__ = [
    "AbortedError",
    "BadRequestError",
    "BuilderError",
    "Bus",
    "ClientState",
    "ConversationState",
    "Event",
    "LanguageModel",
    "NotFoundError",
    "PartwireClient",
    "PartwireError",
    "ProviderError",
    "Recording",
    "RejectedError",
    "Runtime",
    "SessionCreateInput",
    "SessionEvent",
    "Settings",
    "StreamingMessageBuilder",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "__version__",
    "converter",
    "create_app",
    "create_session_event",
    "enrich_event_context",
    "initial_state",
    "is_conversation_event",
    "load_settings",
    "reduce",
    "reduce_session_event",
    "register_provider",
    "register_tool",
    "serve_in_background",
]
