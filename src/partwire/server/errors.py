"""Errors → JSON bodies shaped like opencode's (``{"name", "data": {"message", …}}``)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from partwire.errors import BadRequestError, NamedError, UserError

_KINDS = {"body": "Body", "query": "Query", "path": "Params", "header": "Headers"}


def error_body(name: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "data": {"message": message, **{k: v for k, v in extra.items() if v}}}


_TAGS = ("type", "role", "status")


def _field_path(loc: list[Any], body: Any) -> str:
    """The error location as a dotted path into the body, without union tag names.

    Pydantic puts the discriminator value of a tagged union into the location
    (``parts.0.text.text``), once per tagged object and before any key: the first step
    that equals the object's tag is the tag, even when a key has the same name.
    """
    path: list[str] = []
    node = body
    tag_skipped_for: object = None
    for step in loc:
        is_tag = (
            node is not tag_skipped_for
            and isinstance(node, dict)
            and isinstance(step, str)
            and any(node.get(tag) == step for tag in _TAGS)
        )
        if is_tag:
            tag_skipped_for = node
            continue
        path.append(str(step))
        node = node[step] if isinstance(node, dict | list) and _has(node, step) else None
    return ".".join(path)


def _has(node: dict[str, Any] | list[Any], step: Any) -> bool:
    if isinstance(node, dict):
        return step in node
    return isinstance(step, int) and 0 <= step < len(node)


def _describe(err: dict[str, Any], body: Any) -> tuple[str, str, str]:
    """(kind, field, message) for one pydantic error."""
    loc = list(err.get("loc", ()))
    kind = _KINDS.get(str(loc[0]), "Body") if loc else "Body"
    field = _field_path(loc[1:], body)
    if err.get("type") == "json_invalid":
        return kind, "", f"Invalid JSON body: {err.get('ctx', {}).get('error', err.get('msg'))}"
    if err.get("type") == "missing" and not field:
        return kind, "", "Missing request body"
    msg = str(err.get("msg", "invalid"))
    return kind, field, f"{field}: {msg}" if field else msg


async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
    errors = list(exc.errors())
    first = _describe(errors[0], exc.body) if errors else ("Body", "", "Invalid request")
    kind, field, message = first
    if len(errors) > 1:
        message += f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
    return JSONResponse(error_body("BadRequest", message, kind=kind, field=field), status_code=400)


async def _user_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, UserError)
    extra: dict[str, Any] = {}
    if isinstance(exc, BadRequestError):
        extra = {"kind": exc.kind, "field": exc.field}
    elif isinstance(exc, NamedError):
        extra = exc.data
    return JSONResponse(error_body(exc.name, exc.message, **extra), status_code=exc.status_code)


_HTTP_NAMES = {
    400: "BadRequest",
    401: "Unauthorized",
    404: "NotFoundError",
    405: "MethodNotAllowed",
}


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    """Starlette's own errors (unparsable body, unknown route, wrong method) in our shape."""
    assert isinstance(exc, StarletteHTTPException)
    name = _HTTP_NAMES.get(exc.status_code, "HTTPError")
    message = str(exc.detail)
    if exc.status_code == 404 and message == "Not Found":
        message = f"No route {request.method} {request.url.path}"
    if exc.status_code == 400 and "parsing the body" in message:
        message = "The request body is not valid UTF-8 JSON"
    return JSONResponse(error_body(name, message), status_code=exc.status_code, headers=exc.headers)


def install(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _validation)  # type: ignore[arg-type]
    app.add_exception_handler(UserError, _user_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
