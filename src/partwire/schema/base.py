"""The base of every wire model: opencode field names on the wire, unset fields omitted."""

from __future__ import annotations

import json
import json.encoder
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

# A JSON value as it goes on the wire: what protocol adapters build and converters read.
# Its containers are read-only (covariant) types, so a list[str] or a dict[str, int] is one.
JSON: TypeAlias = "str | int | float | bool | Sequence[JSON] | Mapping[str, JSON] | None"
JSONObject: TypeAlias = "dict[str, JSON]"


# A str as a JSON string, as pydantic writes it (UTF-8 kept, control characters escaped):
# for the few models written by hand because one is sent for every streamed token. The C
# function JSONEncoder(ensure_ascii=False).encode calls for a str, without its Python frame.
json_string = json.encoder.encode_basestring


class WireModel(BaseModel):
    """A model that reads and writes opencode's wire shape.

    Fields use Python names with opencode aliases (``session_id`` ↔ ``sessionID``);
    both spellings validate, the alias is what is serialized, and optional fields
    that are unset are left out rather than sent as ``null``.
    """

    model_config = ConfigDict(
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="forbid",
    )

    def wire(self) -> dict[str, Any]:
        """The JSON-ready dict exactly as it goes on the wire."""
        return self.model_dump(mode="json", exclude_none=True)

    def wire_json(self) -> str:
        return self.model_dump_json(exclude_none=True)


# Counts are never changed in place (``plus`` makes new ones). Frozen, a model is hashable,
# and pydantic uses a hashable default as it is: a message or part made without tokens
# would otherwise deep-copy the default ``Tokens()`` (about 5 µs against 0.5).
_FROZEN = ConfigDict(**WireModel.model_config, frozen=True)


class Tokens(WireModel):
    model_config = _FROZEN

    class Cache(WireModel):
        model_config = _FROZEN

        read: int = 0
        write: int = 0

    total: int | None = None
    input: int = 0
    output: int = 0
    reasoning: int = 0
    cache: Cache = Cache()

    @property
    def counted(self) -> int:
        """Every token a budget counts: input, output, reasoning, cache reads and writes."""
        return self.input + self.output + self.reasoning + self.cache.read + self.cache.write

    def plus(self, other: Tokens) -> Tokens:
        return Tokens(
            total=(self.total or 0) + (other.total or 0) or None,
            input=self.input + other.input,
            output=self.output + other.output,
            reasoning=self.reasoning + other.reasoning,
            cache=Tokens.Cache(
                read=self.cache.read + other.cache.read,
                write=self.cache.write + other.cache.write,
            ),
        )


# a path or a command line as the OS takes it: no NUL (exec and open refuse one)
OsText = Annotated[str, Field(pattern=r"^[^\x00]*$")]
