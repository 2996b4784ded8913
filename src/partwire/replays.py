"""Starting a replay of a recorded session (``POST /session/{id}/replay``, ``partwire
replay``): the new session, in the project or in a scratch worktree of it, and the task
that sends it the recording's prompts one after the other (session/replay.py)."""

from __future__ import annotations

import asyncio
import logging

from partwire import worktrees
from partwire.errors import BadRequestError
from partwire.providers.registry import resolve_model
from partwire.runtime import Runtime
from partwire.schema.input import PromptInput, SessionCreateInput
from partwire.schema.message import UserMessage
from partwire.schema.part import ModelRef
from partwire.schema.session import Session
from partwire.session.loop import SessionLoop
from partwire.session.replay import ToolsMode, prompts_of

log = logging.getLogger(__name__)


async def start_replay(
    runtime: Runtime,
    source_id: str,
    model: ModelRef,
    tools: ToolsMode,
    owner: str | None = None,
) -> Session:
    """Make the replay session and start sending it the recording's prompts (in the
    background: follow its events, or wait with ``wait_replayed``)."""
    source = await runtime.store.get_session(source_id)
    prompts = prompts_of(await runtime.store.list_messages(source_id))
    if not prompts:
        raise BadRequestError(f"session {source_id} has no prompt to replay", field="sessionID")
    project = runtime.project_of(source)
    resolve_model(model.provider_id, model.model_id, project.settings)  # a 400 if unknown
    if tools == "live":
        scratch = await asyncio.to_thread(
            worktrees.create, project.settings.project_dir, runtime.settings.data_dir, None
        )
        project = runtime.project(scratch.directory)
    name = f"{model.provider_id}/{model.model_id}"
    origin = {"sessionID": source_id, "model": name, "tools": tools, "prompts": len(prompts)}
    session = await project.sessions.create(
        SessionCreateInput(title=f"{source.title} (replay: {name})", metadata={"replayOf": origin}),
        owner=owner,
    )
    # the runtime's: a replay still sending at the server's stop is cancelled with it
    runtime.spawn(_send_all(project.loop, session.id, prompts, model), f"replay {session.id}")
    return session


async def _send_all(
    loop: SessionLoop,
    session_id: str,
    prompts: list[tuple[UserMessage, PromptInput]],
    model: ModelRef,
) -> None:
    for recorded, body in prompts:
        sent = body.model_copy(update={"model": model, "agent": recorded.agent})
        try:
            await loop.prompt(session_id, sent)
        except Exception:  # deleted meanwhile, a store failure: the replay ends here
            log.exception("replay %s: a prompt failed; the replay stops", session_id)
            return
