"""Reading JSON that arrives untyped (another SDK's stream, another protocol's chunks)
with each value's type checked: a value of the wrong type reads as empty, never raises."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from partwire.schema.base import JSON

JSONMap = Mapping[str, JSON]


def as_map(value: object) -> JSONMap:
    """``value`` as a JSON object (an SDK's pydantic event is dumped first)."""
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, Mapping):
        value = dump(exclude_none=True)
    return value if isinstance(value, Mapping) else {}


def map_of(data: JSONMap, key: str) -> JSONMap:
    value = data.get(key)
    return value if isinstance(value, Mapping) else {}


def list_of(data: JSONMap, key: str) -> Sequence[JSON]:
    value = data.get(key)
    return value if isinstance(value, list | tuple) else []


def text_of(data: JSONMap, key: str, default: str = "") -> str:
    value = data.get(key)
    return value if isinstance(value, str) else default


def int_of(data: JSONMap, key: str, default: int = 0) -> int:
    value = data.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def number_of(data: JSONMap, key: str) -> float | None:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
