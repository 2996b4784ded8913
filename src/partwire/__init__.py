"""partwire: model streams become typed, persistent, live conversation parts."""

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

from partwire.bus import Bus
from partwire.client.http import PartwireClient
from partwire.client.reducer import ClientState, reduce
from partwire.config import Settings, load_settings
from partwire.errors import (
    BadRequestError,
    NotFoundError,
    PartwireError,
    ProviderError,
    ToolError,
)
from partwire.providers.base import LanguageModel
from partwire.providers.registry import register_provider
from partwire.runtime import Runtime
from partwire.schema.event import Event
from partwire.server.app import create_app
from partwire.server.runner import serve_in_background
from partwire.tools.base import Tool, ToolContext, ToolResult
from partwire.tools.registry import register_tool

if TYPE_CHECKING:
    from partwire.session.builder import StreamingMessageBuilder


def __getattr__(name: str) -> Any:
    """The message builder loads when first asked for: a server that never records an
    external loop does not pay for it at start-up."""
    if name == "StreamingMessageBuilder":
        from partwire.session.builder import StreamingMessageBuilder

        return StreamingMessageBuilder
    raise AttributeError(f"module 'partwire' has no attribute {name!r}")


__all__ = [
    "BadRequestError",
    "Bus",
    "ClientState",
    "Event",
    "LanguageModel",
    "NotFoundError",
    "PartwireClient",
    "PartwireError",
    "ProviderError",
    "Runtime",
    "Settings",
    "StreamingMessageBuilder",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "__version__",
    "create_app",
    "load_settings",
    "reduce",
    "register_provider",
    "register_tool",
    "serve_in_background",
]
