"""Errors → JSON bodies shaped like opencode's (``{"name", "data": {"message", …}}``)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from partwire.errors import BadRequestError, UserError

_KINDS = {"body": "Body", "query": "Query", "path": "Params", "header": "Headers"}


def error_body(name: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "data": {"message": message, **{k: v for k, v in extra.items() if v}}}


def _describe(err: dict[str, Any]) -> tuple[str, str, str]:
    """(kind, field, message) for one pydantic error."""
    loc = [str(p) for p in err.get("loc", ())]
    kind = _KINDS.get(loc[0], "Body") if loc else "Body"
    path = [p for p in loc[1:] if not p.endswith("PartInput")]
    field = ".".join(path)
    if err.get("type") == "json_invalid":
        return kind, "", f"Invalid JSON body: {err.get('ctx', {}).get('error', err.get('msg'))}"
    if err.get("type") == "missing" and not field:
        return kind, "", "Missing request body"
    msg = str(err.get("msg", "invalid"))
    return kind, field, f"{field}: {msg}" if field else msg


async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
    errors = list(exc.errors())
    kind, field, message = _describe(errors[0]) if errors else ("Body", "", "Invalid request")
    if len(errors) > 1:
        message += f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
    return JSONResponse(error_body("BadRequest", message, kind=kind, field=field), status_code=400)


async def _user_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, UserError)
    extra: dict[str, Any] = {}
    if isinstance(exc, BadRequestError):
        extra = {"kind": exc.kind, "field": exc.field}
    return JSONResponse(error_body(exc.name, exc.message, **extra), status_code=exc.status_code)


def install(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _validation)  # type: ignore[arg-type]
    app.add_exception_handler(UserError, _user_error)
