"""``partwire acp``: partwire as an Agent Client Protocol agent on stdio, for editors.

Built on the ``agent-client-protocol`` package. By default the loop runs in this process
(a server on a loopback port, as ``partwire run`` starts one, or the one already serving
this data dir); ``--attach URL`` drives a running server instead, so the editor and the
web UI share sessions live. Every session is a partwire session.

- ``initialize`` says: sessions load, prompts take text and embedded text resources;
- ``session/new`` makes a session in the editor's ``cwd``; ``session/load`` replays a
  stored one as ``session/update`` notifications; ``session/list`` lists them;
  ``session/fork`` copies one, whole or (``_meta`` ``partID``, ``cut``) up to a part;
- modes are the primary agents (build, plan): ``session/set_mode`` picks the agent;
- ``session/prompt`` streams the run (``protocol.acp``) and answers with its stop
  reason; ``session/cancel`` stops it;
- a permission ask → ``session/request_permission`` (allow once, allow always, reject);
  a question cannot be answered from an editor: it is shown, then declined;
- when the editor offers ``fs/read_text_file``, the session gets an attached editor
  (``partwire.editor``) for the prompt's run, and the read tool's ``editor.read`` events
  are answered from the editor's buffers; when it offers ``fs/write_text_file``, every
  file an edit or write tool changed is sent to it, so its open buffers match the disk.

stdout is the protocol's: everything else goes to stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any, Literal, cast

from acp import PROTOCOL_VERSION, RequestError, run_agent
from acp.interfaces import Agent, Client
from acp.schema import (
    AgentCapabilities,
    AgentMessageChunk,
    AllowedOutcome,
    ClientCapabilities,
    EmbeddedResourceContentBlock,
    ForkSessionResponse,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PermissionOption,
    PromptCapabilities,
    PromptResponse,
    ResourceContentBlock,
    SessionCapabilities,
    SessionForkCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SessionMode,
    SessionModeState,
    SetSessionModeResponse,
    TextContentBlock,
    TextResourceContents,
    ToolCallUpdate,
)
from rich.console import Console

from partwire import ids
from partwire.client.http import PartwireClient
from partwire.config import Settings
from partwire.errors import PartwireError
from partwire.protocol.acp import ACP_EVENTS, AcpUpdates, stored_updates, text
from partwire.schema.event import EditorReadProps, Event, MessageInfo, PartUpdatedProps
from partwire.schema.message import AssistantMessage
from partwire.schema.part import ToolPart
from partwire.schema.permission import PermissionReply, PermissionRequest, QuestionRequest
from partwire.schema.tool_state import ToolStateCompleted
from partwire.version import __version__

PERMISSION_OPTIONS = [
    PermissionOption(option_id="once", name="Allow once", kind="allow_once"),
    PermissionOption(option_id="always", name="Allow always", kind="allow_always"),
    PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
]
WRITING_TOOLS = ("edit", "write")
TURN_EVENTS = {*ACP_EVENTS, "permission.asked", "question.asked", "session.idle", "editor.read"}


def prompt_text(blocks: list[Any]) -> str:
    """The words of an ACP prompt: text blocks, embedded text resources (as context) and
    resource links; anything else (images, audio) is refused."""
    pieces = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            pieces.append(block.text)
        elif isinstance(block, EmbeddedResourceContentBlock) and isinstance(
            block.resource, TextResourceContents
        ):
            pieces.append(f"\n<file uri={block.resource.uri!r}>\n{block.resource.text}\n</file>")
        elif isinstance(block, ResourceContentBlock):
            pieces.append(f"[{block.name}]({block.uri})")
        else:
            raise RequestError.invalid_params({"prompt": f"{block.type} blocks are not supported"})
    words = "\n".join(pieces).strip()
    if not words:
        raise RequestError.invalid_params({"prompt": "the prompt is empty"})
    return words


StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]


def stop_reason(last: AssistantMessage | None) -> StopReason:
    if last is None:
        return "end_turn"
    error = last.error.name if last.error is not None else None
    if error == "MessageAbortedError":
        return "cancelled"
    if error == "ContentFilterError" or last.finish == "content-filter":
        return "refusal"
    if error == "MessageOutputLengthError" or last.finish == "length":
        return "max_tokens"
    return "end_turn"


class EventPump:
    """One /event stream for the connection, handed out per session."""

    def __init__(self, client: PartwireClient) -> None:
        self.client = client
        self.queues: dict[str, asyncio.Queue[Event]] = {}
        self.connected = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.task = asyncio.create_task(self._pump())
        await self.connected.wait()

    async def _pump(self) -> None:
        async for event in self.client.events():
            if event.type == "server.connected":
                self.connected.set()
            queue = self.queues.get(event.session_id or "")
            if queue is not None and event.type in TURN_EVENTS:
                queue.put_nowait(event)

    @contextlib.contextmanager
    def listen(self, session_id: str) -> Any:
        queue: asyncio.Queue[Event] = asyncio.Queue()
        self.queues[session_id] = queue
        try:
            yield queue
        finally:
            self.queues.pop(session_id, None)


class PartwireAgent:
    """The ACP agent: each method answers one ACP request through a partwire server."""

    def __init__(self, client: PartwireClient, root: Path) -> None:
        self.client = client
        self.root = root
        self.pump = EventPump(client)
        self.conn: Client | None = None
        self.capabilities = ClientCapabilities()
        self.modes: dict[str, str] = {}
        self.running: dict[str, asyncio.Task[Any]] = {}

    def on_connect(self, conn: Client) -> None:
        self.conn = conn

    def _client(self) -> Client:
        assert self.conn is not None, "on_connect comes first"
        return self.conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        self.capabilities = client_capabilities or ClientCapabilities()
        capabilities = AgentCapabilities(
            load_session=True,
            prompt_capabilities=PromptCapabilities(image=False, audio=False, embedded_context=True),
            session_capabilities=SessionCapabilities(
                list=SessionListCapabilities(), fork=SessionForkCapabilities()
            ),
        )
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=capabilities,
            agent_info=Implementation(name="partwire", title="partwire", version=__version__),
            auth_methods=[],
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        return None

    async def _modes(self, current: str | None) -> SessionModeState:
        agents = [a for a in await self.client.agents() if a.mode in ("primary", "all")]
        modes = [SessionMode(id=a.name, name=a.name, description=a.description) for a in agents]
        return SessionModeState(current_mode_id=current or "build", available_modes=modes)

    async def new_session(
        self, cwd: str, mcp_servers: Any = None, **kwargs: Any
    ) -> NewSessionResponse:
        self._check_cwd(cwd)
        session = await self.client.create_session()
        return NewSessionResponse(session_id=session.id, modes=await self._modes(None))

    def _check_cwd(self, cwd: str) -> None:
        if Path(cwd).resolve() != self.root.resolve():
            raise RequestError.invalid_params(
                {"cwd": f"{cwd} is not this agent's project ({self.root}): start it there"}
            )

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: Any = None, **kwargs: Any
    ) -> LoadSessionResponse:
        self._check_cwd(cwd)
        session = await self._session(session_id)
        messages = await self.client.messages(session_id)
        for update in stored_updates(messages, await self.client.todos(session_id), self.root):
            await self._client().session_update(session_id=session_id, update=update)
        asked = [m.info.agent for m in messages if not isinstance(m.info, AssistantMessage)]
        mode = self.modes.get(session_id) or (asked[-1] if asked else None) or session.agent
        return LoadSessionResponse(modes=await self._modes(mode))

    async def fork_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: Any = None,
        **kwargs: Any,
    ) -> ForkSessionResponse:
        """A copy of the session, whole or (``_meta`` ``{"partID", "cut"}``, partwire's)
        up to one of its parts; the editor loads it as any other."""
        self._check_cwd(cwd)
        session = await self._session(session_id)
        part_id, cut = kwargs.get("partID"), kwargs.get("cut")  # the request's _meta
        if cut not in (None, "after", "before") or not isinstance(part_id, str | None):
            raise RequestError.invalid_params({"_meta": "partID is a part id, cut after|before"})
        try:
            fork = await self.client.fork(session_id, part_id=part_id, cut=cut)
        except PartwireError as exc:
            raise RequestError.invalid_params({"_meta": exc.message}) from exc
        return ForkSessionResponse(
            session_id=fork.id, modes=await self._modes(fork.agent or session.agent)
        )

    async def _session(self, session_id: str) -> Any:
        try:
            return await self.client.get_session(session_id)
        except Exception as exc:  # the client raises its own error type for a 404
            raise RequestError.invalid_params({"sessionId": f"no session {session_id}"}) from exc

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        sessions = await self.client.list_sessions()
        infos = [
            SessionInfo(session_id=s.id, cwd=s.directory, title=s.title)
            for s in sessions
            if s.parent_id is None
        ]
        return ListSessionsResponse(sessions=infos)

    async def set_session_mode(
        self, mode_id: str, session_id: str, **kwargs: Any
    ) -> SetSessionModeResponse:
        names = {mode.id for mode in (await self._modes(None)).available_modes}
        if mode_id not in names:
            raise RequestError.invalid_params({"modeId": f"{mode_id}: one of {sorted(names)}"})
        await self._session(session_id)
        self.modes[session_id] = mode_id
        return SetSessionModeResponse()

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        await self.client.abort(session_id)

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        words = prompt_text(prompt)
        await self._session(session_id)
        message_id = ids.message_id()
        fs = self.capabilities.fs
        reads = fs is not None and bool(fs.read_text_file)
        with self.pump.listen(session_id) as queue:
            if reads:  # the tools read files as the editor has them
                await self.client.attach_editor(session_id)
            try:
                agent = self.modes.get(session_id)
                await self.client.prompt_async(
                    session_id, words, agent=agent, message_id=message_id
                )
                last = await self._follow(session_id, message_id, queue)
            finally:
                if reads:
                    await self.client.detach_editor(session_id)
        return PromptResponse(stop_reason=stop_reason(last))

    async def _follow(
        self, session_id: str, message_id: str, queue: asyncio.Queue[Event]
    ) -> AssistantMessage | None:
        """Send the run's updates until the session is idle; the run's last message."""
        updates = AcpUpdates(session_id, self.root)
        last: AssistantMessage | None = None
        asks: set[asyncio.Task[None]] = set()
        conn = self._client()
        while True:
            event = await queue.get()
            if event.type == "session.idle" and last is not None:
                break
            props: Any = event.properties
            if isinstance(props, MessageInfo) and isinstance(props.info, AssistantMessage):
                if props.info.parent_id == message_id:
                    last = props.info
            elif isinstance(props, PermissionRequest):
                task = asyncio.create_task(self._ask(session_id, props))
                asks.add(task)
                task.add_done_callback(asks.discard)
            elif isinstance(props, QuestionRequest):
                await self._decline(session_id, props)
            elif isinstance(props, EditorReadProps):
                task = asyncio.create_task(self._read(session_id, props))
                asks.add(task)
                task.add_done_callback(asks.discard)
            for update in updates.updates(event):
                await conn.session_update(session_id=session_id, update=update)
            if isinstance(props, PartUpdatedProps):
                await self._sync_file(session_id, props)
        for task in asks:
            task.cancel()
        return last

    async def _ask(self, session_id: str, request: PermissionRequest) -> None:
        call_id = request.tool.call_id if request.tool is not None else request.id
        subjects = ", ".join(request.patterns)
        tool_call = ToolCallUpdate(
            tool_call_id=call_id,
            title=f"{request.permission}: {subjects}" if subjects else request.permission,
            status="pending",
        )
        answer = await self._client().request_permission(
            session_id=session_id, tool_call=tool_call, options=PERMISSION_OPTIONS
        )
        outcome = answer.outcome
        reply: PermissionReply = "reject"
        if isinstance(outcome, AllowedOutcome) and outcome.option_id in ("once", "always"):
            reply = "once" if outcome.option_id == "once" else "always"
        with contextlib.suppress(Exception):  # answered elsewhere meanwhile (the web UI)
            await self.client.reply_permission(request.id, reply)

    async def _read(self, session_id: str, request: EditorReadProps) -> None:
        """A tool's read, answered from the editor's buffer."""
        try:
            answer = await self._client().read_text_file(session_id=session_id, path=request.path)
        except Exception as exc:  # the editor could not read it: the tool reads the disk
            await self.client.reply_editor_read(request.id, None, error=str(exc) or "failed")
            return
        await self.client.reply_editor_read(request.id, answer.content)

    async def _decline(self, session_id: str, request: QuestionRequest) -> None:
        asked = "; ".join(q.question for q in request.questions)
        note = text(f"\n(partwire asked: {asked} — an editor cannot answer questions: declined)\n")
        update = AgentMessageChunk(session_update="agent_message_chunk", content=note)
        await self._client().session_update(session_id=session_id, update=update)
        with contextlib.suppress(Exception):
            await self.client.reject_question(request.id)

    async def _sync_file(self, session_id: str, props: PartUpdatedProps) -> None:
        """An edit or write that completed: the editor's buffer gets the new content."""
        part = props.part
        fs = self.capabilities.fs
        if not (isinstance(part, ToolPart) and part.tool in WRITING_TOOLS and fs is not None):
            return
        path = part.state.input.get("filePath")
        if not fs.write_text_file or not isinstance(part.state, ToolStateCompleted) or not path:
            return
        target = self.root / str(path)
        content = await asyncio.to_thread(target.read_text)
        await self._client().write_text_file(
            session_id=session_id, path=str(target), content=content
        )


async def serve_acp(settings: Settings, attach: str | None) -> int:
    from partwire.cli.run import connected

    err = Console(stderr=True)
    async with connected(attach, settings, err, "acp") as client:
        agent = PartwireAgent(client, settings.project_dir)
        await agent.pump.start()
        try:
            # the library routes only the methods an agent has (the rest: method not found)
            await run_agent(cast(Agent, agent), use_unstable_protocol=True)  # session/fork
        finally:
            if agent.pump.task is not None:
                agent.pump.task.cancel()
    return 0
