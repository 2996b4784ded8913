"""Ingest events (schema/ingest.py) → the calls of a recording."""

from __future__ import annotations

from partwire.schema.ingest import IngestEvent
from partwire.session.recording import Recording


async def feed(recording: Recording, event: IngestEvent) -> None:
    """Make the call ``event`` stands for (BuilderError when it is out of order):
    ``recording.feed(event)``."""
    await recording.feed(event)
