"""The OpenAPI document at ``/doc`` with the event union, as opencode's carries it:
``Event`` (anyOf one envelope per registered event type, ``EventSessionCreated`` …) for
``GET /event`` and ``GlobalEvent`` (``{directory, payload: Event}``) for
``GET /global/event``, so generated clients get typed events."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from pydantic.json_schema import models_json_schema

from partwire.schema.event import envelope_models

REF = "#/components/schemas/{model}"
STREAMS = {"/event": "Event", "/global/event": "GlobalEvent"}


def event_schemas() -> dict[str, Any]:
    """Component schemas: every envelope, the models they use, ``Event`` and ``GlobalEvent``."""
    models = list(envelope_models())
    _, found = models_json_schema(
        [(model, "serialization") for model in models], by_alias=True, ref_template=REF
    )
    schemas: dict[str, Any] = dict(found.get("$defs", {}))
    schemas["Event"] = {"anyOf": [{"$ref": REF.format(model=m.__name__)} for m in models]}
    schemas["GlobalEvent"] = {
        "type": "object",
        "properties": {
            "directory": {"type": "string"},
            "payload": {"$ref": REF.format(model="Event")},
        },
        "required": ["directory", "payload"],
    }
    return schemas


def install(app: FastAPI) -> None:
    """Make ``app.openapi`` add the event schemas to what FastAPI generates (once)."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        document = generate()
        components = document.setdefault("components", {}).setdefault("schemas", {})
        for name, schema in event_schemas().items():
            components.setdefault(name, schema)  # a model FastAPI already lists is the same
        for path, name in STREAMS.items():
            get = document["paths"].get(path, {}).get("get")
            if get is not None:
                get["responses"]["200"] = {
                    "description": "Event stream",
                    "content": {"text/event-stream": {"schema": {"$ref": REF.format(model=name)}}},
                }
        return document

    app.openapi = openapi  # type: ignore[method-assign]
