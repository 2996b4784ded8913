"""A whole session on disk: what ``partwire export`` writes and ``partwire import`` reads.

The shape is opencode's export file: the session's info, then its messages with parts
in history order."""

from __future__ import annotations

from partwire.schema.base import WireModel
from partwire.schema.message import MessageWithParts
from partwire.schema.session import Session


class SessionExport(WireModel):
    info: Session
    messages: list[MessageWithParts]
