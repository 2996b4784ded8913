"""A delta appended as the processor appends it: waited for only when the store pushes back."""

from __future__ import annotations

from partwire.schema.event import PartDeltaProps
from partwire.storage.base import Store


async def append(store: Store, delta: PartDeltaProps) -> None:
    if (waiting := store.append_delta(delta)) is not None:
        await waiting
