"""Session actions beyond prompting: init, shell, command, share."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from pydantic import ValidationError

from partwire import commands
from partwire.errors import (
    BadRequestError,
    NotFoundError,
    PermissionDeniedError,
    RefusedError,
    RejectedError,
)
from partwire.providers.registry import parse_model_ref
from partwire.runtime import Project, Runtime
from partwire.schema.input import (
    CommandInput,
    FilePartInput,
    InitInput,
    PartInput,
    PromptInput,
    ShellInput,
    SubtaskPartInput,
    TextPartInput,
)
from partwire.schema.message import AssistantWithParts, MessageWithParts
from partwire.schema.part import ModelRef
from partwire.schema.session import Session, SessionShare
from partwire.server.routes.scope import runtime_of, session_project
from partwire.server.routes.session import wire
from partwire.session.agents import DEFAULT_SUBAGENT, get_agent
from partwire.session.prompt import refuse_taken_ids
from partwire.session.shell import run_shell
from partwire.tools.shell_permission import ask_for_line

router = APIRouter(prefix="/session/{sessionID}", tags=["session"])

INIT_PROMPT = (
    "Please analyze this codebase and create an AGENTS.md file in the project root with the "
    "commands to build, lint and test (including a single test), and the code style: "
    "imports, formatting, types, naming and error handling. Keep it about 20 lines."
)


def _runtime(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


@router.post("/init", response_model=bool, operation_id="session.init")
async def init(request: Request, sessionID: str, body: InitInput) -> Response:
    """Ask the model to write AGENTS.md for the project (a normal prompt)."""
    model = ModelRef(provider_id=body.provider_id, model_id=body.model_id)
    prompt = PromptInput(
        message_id=body.message_id, model=model, parts=[TextPartInput(text=INIT_PROMPT)]
    )
    _, project = await session_project(request, sessionID)
    await project.loop.prompt(sessionID, prompt)
    return wire(True)


@router.post("/shell", response_model=MessageWithParts, operation_id="session.shell")
async def shell(request: Request, sessionID: str, body: ShellInput) -> Response:
    runtime = _runtime(request)
    session, project = await session_project(request, sessionID)
    await project.loop.ensure_idle(sessionID)
    get_agent(body.agent)
    model = body.model
    if model is None:
        provider_id, model_id = parse_model_ref(runtime.settings.default_model)
        model = ModelRef(provider_id=provider_id, model_id=model_id)
    await refuse_taken_ids(runtime.store, body.message_id)
    result: AssistantWithParts = await run_shell(
        runtime.store, session, body.agent, model, body.command, message_id=body.message_id
    )
    return wire(result)


@router.post("/command", response_model=AssistantWithParts, operation_id="session.command")
async def command(request: Request, sessionID: str, body: CommandInput) -> Response:
    """Run a custom command (``partwire.commands``): its template, with the arguments put
    in, is the prompt; a ``subtask`` command hands it to a sub-agent. Waits for the answer."""
    _, project = await session_project(request, sessionID)
    found = {c.name: c for c in await commands.of_project(project.settings)}
    chosen = found.get(body.command)
    if chosen is None:
        raise NotFoundError("Command", body.command)
    model = body.model or chosen.model
    model_ref = None
    if model:
        provider_id, model_id = parse_model_ref(model)
        model_ref = ModelRef(provider_id=provider_id, model_id=model_id)
    agent = body.agent or chosen.agent
    try:
        files = [FilePartInput.model_validate(part) for part in body.parts or []]
    except ValidationError as exc:
        raise BadRequestError(f"parts: {exc.errors()[0]['msg']}", field="parts") from None
    text = await _with_shell_output(
        _runtime(request), project, sessionID, agent, chosen.expand(body.arguments)
    )
    parts: list[PartInput]
    if chosen.subtask:
        description = chosen.description or chosen.name
        subtask = SubtaskPartInput(
            prompt=text,
            description=description,
            agent=agent or DEFAULT_SUBAGENT,
            model=model_ref,
            command=chosen.name,
        )
        parts, agent, model_ref = [subtask, *files], None, None
    else:
        parts = [TextPartInput(text=text), *files]
    prompt = PromptInput(
        message_id=body.message_id, agent=agent, model=model_ref, variant=body.variant, parts=parts
    )
    return wire(await project.loop.prompt(sessionID, prompt))


async def _with_shell_output(
    runtime: Runtime, project: Project, session_id: str, agent: str | None, text: str
) -> str:
    """Run the template's ``!`command` `` substitutions as the session's ``bash``
    permission allows (the rules, else the user is asked; this request waits)."""
    found = commands.shell_commands(text)
    if not found:
        return text
    session = await project.sessions.get(session_id)
    rules = get_agent(agent or session.agent or "build").permission
    outputs = []
    ask = runtime.permissions.asker(session_id, rules)
    project_dir = project.settings.project_dir
    for line in found:
        try:
            await ask_for_line(ask, line, cwd=project_dir, project_dir=project_dir)
        except (PermissionDeniedError, RejectedError) as refused:
            raise RefusedError(f"running `{line}` for the command was refused: {refused}") from None
        outputs.append(await commands.run_shell(line, project.settings.project_dir))
    return commands.fill_shell(text, outputs)


@router.post("/share", response_model=Session, operation_id="session.share")
async def share(request: Request, sessionID: str) -> Response:
    """A read-only link to the session (and its sub-agents'), live in the web UI without
    an account, until unshared: ``share.url`` holds it, in this answer only (a hash of it
    is kept). Each call makes a new link; DELETE ends them all."""
    session, _ = await session_project(request, sessionID)
    secret = await runtime_of(request).accounts.share(sessionID)
    url = f"{str(request.base_url).rstrip('/')}/share/{secret}"
    return wire(session.model_copy(update={"share": SessionShare(url=url)}))


@router.delete("/share", response_model=Session, operation_id="session.unshare")
async def unshare(request: Request, sessionID: str) -> Response:
    """Every share link of the session stops working, live streams opened with one too."""
    session, _ = await session_project(request, sessionID)
    await runtime_of(request).accounts.unshare(sessionID)
    return wire(session)
