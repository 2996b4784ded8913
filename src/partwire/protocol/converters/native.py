"""partwire's own ingest lines, passed through (validated)."""

from __future__ import annotations

from partwire.schema.ingest import IngestEvent, ingest_adapter


class NativeConverter:
    def feed(self, item: object) -> list[IngestEvent]:
        return [ingest_adapter.validate_python(item)]

    def end(self) -> list[IngestEvent]:
        return []
