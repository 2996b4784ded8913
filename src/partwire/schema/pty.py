"""A pseudo-terminal as opencode's /pty routes and ``pty.*`` events describe it."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from partwire.schema.base import WireModel


class PtyInfo(WireModel):
    id: str = Field(pattern="^pty")
    title: str
    command: str
    args: list[str]
    cwd: str
    status: Literal["running", "exited"]
    pid: int = Field(ge=0)
    exit_code: int | None = Field(default=None, ge=0, alias="exitCode")
