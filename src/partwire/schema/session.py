"""Sessions and their status."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter

from partwire.schema.base import Tokens, WireModel


class SessionTime(WireModel):
    created: int
    updated: int
    compacting: int | None = None
    archived: float | None = None


class SessionShare(WireModel):
    url: str


class SessionSummary(WireModel):
    additions: int = 0
    deletions: int = 0
    files: int = 0


class SnapshotFileDiff(WireModel):
    file: str | None = None
    patch: str | None = None
    additions: int
    deletions: int
    status: Literal["added", "deleted", "modified"] | None = None


class Budget(WireModel):
    """What a session may spend (partwire's; kept in the session's ``metadata.budget``):
    ``tokens`` (every kind counts: input, output, reasoning, cache reads and writes) and
    ``cost`` in USD, each unlimited when unset. ``granted`` counts the further amounts
    the user allowed when it was reached: the limit is the amount times (1 + granted)."""

    tokens: int | None = Field(default=None, gt=0)
    cost: float | None = Field(default=None, gt=0)
    granted: int = Field(default=0, ge=0)


class PermissionRule(WireModel):
    permission: str
    pattern: str
    action: Literal["allow", "deny", "ask"]


class SessionRevert(WireModel):
    message_id: str = Field(alias="messageID")
    part_id: str | None = Field(default=None, alias="partID")
    snapshot: str | None = None
    diff: str | None = None


class SessionModel(WireModel):
    """The model a session prompts by default (POST /session ``model``)."""

    id: str
    provider_id: str = Field(alias="providerID")
    variant: str | None = None


class Session(WireModel):
    id: str
    slug: str
    project_id: str = Field(alias="projectID")
    directory: str
    parent_id: str | None = Field(default=None, alias="parentID")
    title: str
    agent: str | None = None
    model: SessionModel | None = None
    version: str
    time: SessionTime
    summary: SessionSummary | None = None
    # what the session spent (opencode's fields), kept by the store as answers complete
    cost: float | None = None
    tokens: Tokens | None = None
    metadata: dict[str, Any] | None = None
    permission: list[PermissionRule] | None = None
    revert: SessionRevert | None = None
    # a share link, in the answer to POST /session/{id}/share only: only a hash is kept
    share: SessionShare | None = None


class StatusIdle(WireModel):
    type: Literal["idle"] = "idle"


class StatusBusy(WireModel):
    type: Literal["busy"] = "busy"


class StatusRetry(WireModel):
    type: Literal["retry"] = "retry"
    attempt: int
    message: str
    next: int


SessionStatus = Annotated[StatusIdle | StatusBusy | StatusRetry, Field(discriminator="type")]
session_status_adapter: TypeAdapter[SessionStatus] = TypeAdapter(SessionStatus)
