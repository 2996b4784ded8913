"""What StreamingMessageBuilder takes from its callers, checked: tool arguments, results,
token counts, costs and seed 003's tool parts. Each returns the value the builder stores,
or raises BuilderError (nothing is changed) naming what is wrong."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from partwire.errors import BuilderError
from partwire.schema.base import Tokens
from partwire.schema.frames import seed_call, seed_result

NOT_AN_OBJECT = "arguments must be a JSON object"


def arguments(args: Mapping[str, Any] | str | None) -> dict[str, Any] | str:
    """A tool call's arguments as an object, or why they are not one."""
    if args is None:
        return {}
    if isinstance(args, str):
        try:
            args = json.loads(args or "{}")
        except ValueError as exc:
            return str(exc)
    if not isinstance(args, Mapping):
        return NOT_AN_OBJECT
    return dict(args)


def output_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    try:
        return json.dumps(output, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise BuilderError(f"a tool result must be text or JSON-serializable: {exc}") from None


def tokens(tokens: Tokens | Mapping[str, Any] | None) -> Tokens:
    if tokens is None:
        return Tokens()
    try:
        used = tokens if isinstance(tokens, Tokens) else Tokens.model_validate(dict(tokens))
    except ValueError as exc:
        raise BuilderError(f"tokens: {exc}") from None
    counts = {
        "input": used.input,
        "output": used.output,
        "reasoning": used.reasoning,
        "cache.read": used.cache.read,
        "cache.write": used.cache.write,
        "total": used.total or 0,
    }
    for name, count in counts.items():
        if count < 0:
            raise BuilderError(f"tokens.{name} is {count}: token counts are never negative")
    if used.total is None:
        used = used.model_copy(update={"total": used.input + used.output + used.reasoning})
    return used


def cost(cost: Any) -> float:
    """A step's cost: a finite number, not below zero (NaN would make the message
    unreadable once stored)."""
    try:
        value = float(cost)
    except (TypeError, ValueError):
        raise BuilderError(f"cost is {cost!r}: give a number of USD") from None
    if not math.isfinite(value) or value < 0:
        raise BuilderError(f"cost is {cost!r}: give a finite number of USD, 0 or more")
    return value


def seed_call_of(part: object) -> tuple[str, str, Mapping[str, Any] | str | None]:
    call_id, name, args = seed_call(part)
    if not isinstance(call_id, str) or not call_id:
        raise BuilderError(f"a tool call part needs a toolCallId, not {call_id!r}")
    if not isinstance(name, str) or not name:
        raise BuilderError(f"tool call {call_id!r} needs a toolName, not {name!r}")
    if args is not None and not isinstance(args, str | Mapping):
        raise BuilderError(f"tool call {call_id!r}: args must be an object or its JSON text")
    return call_id, name, args


def seed_result_of(part: object) -> tuple[str, object, bool]:
    call_id, result, failed = seed_result(part)
    if not isinstance(call_id, str) or not call_id:
        raise BuilderError(f"a tool result part needs a toolCallId, not {call_id!r}")
    return call_id, result, failed
