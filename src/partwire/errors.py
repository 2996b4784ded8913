"""One exception hierarchy for partwire.

::

    PartwireError
    ├── UserError                  shown to the caller of the API / CLI (HTTP 4xx)
    │   ├── NotFoundError          an id that does not exist (404)
    │   ├── BadRequestError        malformed or empty input (400)
    │   ├── NamedError             a 400 under one of opencode's error names
    │   ├── RefusedError           the rules or the user said no to what it needs (403)
    │   │   └── BuilderError       a message-builder call its message's state does not allow
    │   ├── SessionBusyError       the operation needs an idle session (409)
    │   ├── IdConflictError        a client-chosen id is already in use (409)
    │   └── TooManyRequestsError   a client passed a quota (429)
    ├── ToolError                  goes back to the model as a tool `error` state
    │   ├── ToolArgumentsError     the model's arguments did not validate
    │   ├── PermissionDeniedError  a rule denies the action (the loop goes on)
    │   └── RejectedError          the user said no (stops the loop unless they gave feedback)
    ├── ProviderError              a model call failed; carries retryability
    ├── AbortedError               the session was aborted while working
    ├── ConfigError                settings are invalid; says which and how to fix
    ├── StorageError               the database or data dir cannot be used; says what to do
    └── IllegalTransitionError     a programming mistake: a lifecycle edge that is not allowed
"""

from __future__ import annotations

from typing import Literal


class PartwireError(Exception):
    """Base of every error partwire raises on purpose."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UserError(PartwireError):
    status_code = 400
    name = "BadRequest"


class NotFoundError(UserError):
    status_code = 404
    name = "NotFoundError"

    def __init__(self, kind: str, identifier: str) -> None:
        super().__init__(f"{kind} not found: {identifier}")
        self.kind = kind
        self.identifier = identifier


class BadRequestError(UserError):
    def __init__(self, message: str, *, field: str | None = None, kind: str = "Body") -> None:
        super().__init__(message)
        self.field = field
        self.kind = kind


class NamedError(UserError):
    """A 400 under one of opencode's own error names (``WorktreeCreateFailedError``…),
    with any further ``data`` fields its schema has."""

    def __init__(self, name: str, message: str, **data: object) -> None:
        super().__init__(message)
        self.name = name
        self.data = data


class RefusedError(UserError):
    """An action a request needs was denied by the rules or rejected by the user (403)."""

    status_code = 403
    name = "PermissionRejectedError"


class BuilderError(BadRequestError):
    """A StreamingMessageBuilder call out of order (a result before its call, a delta
    after its part ended) or with input it cannot take; nothing was changed."""


class SessionBusyError(UserError):
    status_code = 409
    name = "SessionBusyError"

    def __init__(self, session_id: str) -> None:
        super().__init__(f"Session {session_id} is busy; abort it or wait for session.idle")
        self.session_id = session_id


class IdConflictError(UserError):
    status_code = 409
    name = "IdConflictError"

    def __init__(self, field: str, identifier: str) -> None:
        super().__init__(f"{field}: {identifier} is already in use; send a new id or none")
        self.field = field
        self.identifier = identifier


class TooManyRequestsError(UserError):
    status_code = 429
    name = "TooManyRequests"


class ToolError(PartwireError):
    """A tool failed in a way the model should see and may correct."""


class ToolArgumentsError(ToolError):
    def __init__(self, tool: str, detail: str) -> None:
        super().__init__(
            f"The {tool} tool was called with invalid arguments: {detail}. "
            "Rewrite the input so it satisfies the tool's schema."
        )
        self.tool = tool


class PermissionDeniedError(ToolError):
    def __init__(self, permission: str, pattern: str) -> None:
        super().__init__(
            f"The rules deny {permission} for {pattern}. Do not retry it; "
            "choose another approach or ask the user to change the permission rules."
        )
        self.permission = permission
        self.pattern = pattern


class RejectedError(ToolError):
    """The user rejected a permission ask or dismissed a question.

    Without ``feedback`` the session loop stops after this step; with it, the
    model sees the feedback and may go on.
    """

    def __init__(self, message: str, feedback: str | None = None) -> None:
        text = f"{message} The user said: {feedback}" if feedback else message
        super().__init__(text)
        self.feedback = feedback


ProviderErrorKind = Literal[
    "api", "auth", "context_overflow", "output_length", "content_filter", "unreachable"
]


class ProviderError(PartwireError):
    """A model call failed. ``kind`` picks the named error the message ends with."""

    def __init__(
        self,
        message: str,
        *,
        retryable: bool = False,
        status_code: int | None = None,
        retry_after_s: float | None = None,
        kind: ProviderErrorKind = "api",
        provider_id: str = "",
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status_code = status_code
        self.retry_after_s = retry_after_s
        self.kind = kind
        self.provider_id = provider_id


class AbortedError(PartwireError):
    def __init__(self, message: str = "The operation was aborted.") -> None:
        super().__init__(message)


class ConfigError(PartwireError):
    pass


class StorageError(PartwireError):
    """The database or the data dir cannot be used (damaged, too new, full, unwritable)."""


class IllegalTransitionError(PartwireError):
    def __init__(self, what: str, current: str, target: str) -> None:
        super().__init__(f"Illegal {what} transition: {current} -> {target}")
        self.current = current
        self.target = target
