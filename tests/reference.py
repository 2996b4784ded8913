"""Validation against opencode's OpenAPI document, vendored in tests/opencode_reference."""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

REFERENCE = Path(
    os.environ.get("PARTWIRE_REFERENCE_DIR")
    or Path(__file__).resolve().parent / "opencode_reference"
)


@cache
def document() -> dict[str, Any]:
    path = REFERENCE / "openapi.json"
    if not path.exists():
        pytest.fail(f"reference document missing: {path}")
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def has_schema(name: str) -> bool:
    return name in document()["components"]["schemas"]


def validate(name: str, instance: Any) -> None:
    """Raise jsonschema.ValidationError unless instance satisfies components.schemas[name]."""
    validate_schema({"$ref": f"#/components/schemas/{name}"}, instance)


def validate_schema(schema: dict[str, Any], instance: Any) -> None:
    root = {**schema, "components": document()["components"]}
    Draft202012Validator(root).validate(instance)


def event_schema_name(event_type: str) -> str:
    return "Event" + "".join(word[:1].upper() + word[1:] for word in event_type.split("."))


def response_schema(path: str, method: str, status: str = "200") -> dict[str, Any]:
    operation = document()["paths"][path][method]
    schema: dict[str, Any] = operation["responses"][status]["content"]["application/json"]["schema"]
    return schema


def error_message(body: Any) -> str:
    """What an error body says: ``data.message`` (``{name, data}``), or ``message`` for
    the tagged errors opencode's document gives some routes (``{_tag, message}``), or
    ``error`` for a failed result (``{success: false, error}``)."""
    if not isinstance(body, dict):
        return ""
    data = body.get("data")
    if isinstance(data, dict) and isinstance(data.get("message"), str):
        return data["message"]
    for key in ("message", "error"):
        if isinstance(body.get(key), str):
            return str(body[key])
    return ""
