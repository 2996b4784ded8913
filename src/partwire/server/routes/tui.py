"""opencode's /tui routes: an IDE or script drives a TUI attached to this server. Each
becomes a ``tui.*`` event on the bus (not logged: a TUI acts on it now or never) that an
attached TUI (opencode's, via ``/event``) carries out."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Request, Response
from pydantic import ValidationError

from partwire import ids
from partwire.errors import BadRequestError
from partwire.schema.base import WireModel
from partwire.schema.event import (
    Draft,
    EventDefinition,
    TuiCommandExecute,
    TuiCommandProps,
    TuiPromptAppend,
    TuiPromptProps,
    TuiSessionProps,
    TuiSessionSelect,
    TuiToastProps,
    TuiToastShow,
)
from partwire.server.routes.scope import runtime_of

router = APIRouter(prefix="/tui", tags=["tui"])

# the routes that name one TUI command each
COMMANDS = {
    "clear-prompt": ("tui.clearPrompt", "prompt.clear"),
    "submit-prompt": ("tui.submitPrompt", "prompt.submit"),
    "open-help": ("tui.openHelp", "help.show"),
    "open-sessions": ("tui.openSessions", "session.list"),
    "open-themes": ("tui.openThemes", "theme.list"),
    "open-models": ("tui.openModels", "model.list"),
}


def _publish(request: Request, draft: Draft) -> Response:
    runtime_of(request).bus.publish(draft.with_id(ids.event_id()))
    return Response("true", media_type="application/json")


@router.post("/append-prompt", operation_id="tui.appendPrompt")
async def append_prompt(request: Request, body: TuiPromptProps) -> Response:
    return _publish(request, TuiPromptAppend(body))


@router.post("/execute-command", operation_id="tui.executeCommand")
async def execute_command(request: Request, body: TuiCommandProps) -> Response:
    return _publish(request, TuiCommandExecute(body))


@router.post("/show-toast", operation_id="tui.showToast")
async def show_toast(request: Request, body: TuiToastProps) -> Response:
    return _publish(request, TuiToastShow(body))


@router.post("/select-session", operation_id="tui.selectSession")
async def select_session(request: Request, body: TuiSessionProps) -> Response:
    await runtime_of(request).store.get_session(body.session_id)  # 404 for an unknown one
    return _publish(request, TuiSessionSelect(body))


PUBLISHABLE: dict[str, tuple[EventDefinition[Any], type[WireModel]]] = {
    "tui.prompt.append": (TuiPromptAppend, TuiPromptProps),
    "tui.command.execute": (TuiCommandExecute, TuiCommandProps),
    "tui.toast.show": (TuiToastShow, TuiToastProps),
    "tui.session.select": (TuiSessionSelect, TuiSessionProps),
}


@router.post("/publish", operation_id="tui.publish")
async def publish(request: Request, body: dict[str, Any]) -> Response:
    """Any one ``tui.*`` event, as ``{type, properties}``."""
    found = PUBLISHABLE.get(str(body.get("type")))
    if found is None:
        kinds = ", ".join(PUBLISHABLE)
        raise BadRequestError(f"type must be one of {kinds}", field="type")
    definition, props = found
    try:
        properties = props.model_validate(body.get("properties") or {})
    except ValidationError as exc:
        raise BadRequestError(f"properties: {exc.errors()[0]['msg']}", field="properties") from None
    if isinstance(properties, TuiSessionProps):
        await runtime_of(request).store.get_session(properties.session_id)
    return _publish(request, definition(properties))


@router.get("/control/next", operation_id="tui.control.next")
async def control_next(request: Request) -> Response:
    """The next request for the TUI (long-polls until one is made)."""
    return Response(json.dumps(await runtime_of(request).tui.next()), media_type="application/json")


@router.post("/control/response", operation_id="tui.control.response")
async def control_response(request: Request) -> Response:
    """The TUI's answer (any JSON) to the oldest request it took."""
    raw = await request.body()
    try:
        answer = json.loads(raw) if raw.strip() else None
    except ValueError:
        raise BadRequestError("The request body is not valid JSON") from None
    runtime_of(request).tui.respond(answer)
    return Response("true", media_type="application/json")


def _command_route(path: str, operation: str, command: str) -> None:
    async def run(request: Request) -> Response:
        return _publish(request, TuiCommandExecute(TuiCommandProps(command=command)))

    router.add_api_route(f"/{path}", run, methods=["POST"], operation_id=operation)


for _path, (_operation, _command) in COMMANDS.items():
    _command_route(_path, _operation, _command)
