"""The public API is exactly what __all__ says, sorted, and every name resolves."""

from __future__ import annotations

import partwire

EXPECTED = [
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


def test_all_is_pinned_and_sorted() -> None:
    assert partwire.__all__ == EXPECTED
    assert sorted(partwire.__all__) == partwire.__all__  # kept sorted in the source itself


def test_every_exported_name_resolves() -> None:
    for name in partwire.__all__:
        assert getattr(partwire, name) is not None, name
