"""A typed async client for the partwire (and opencode) HTTP API."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Iterable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import quote

import httpx

if TYPE_CHECKING:
    from partwire.schema.frames import Frame

from partwire.client.server_calls import ServerCalls
from partwire.client.team import TeamCalls
from partwire.errors import BadRequestError, NotFoundError, UserError
from partwire.providers.registry import parse_model_ref
from partwire.schema.event import Event, parse_event
from partwire.schema.export import SessionExport
from partwire.schema.message import AssistantWithParts, MessageWithParts
from partwire.schema.part import Part, part_adapter
from partwire.schema.permission import (
    PermissionReply,
    PermissionRequest,
    QuestionRequest,
    Todo,
)
from partwire.schema.session import (
    Session,
    SessionStatus,
    SnapshotFileDiff,
    session_status_adapter,
)

RECONNECT_DELAYS_S = (0.0, 0.1, 0.25, 0.5, 1.0, 2.0)


class ClientError(UserError):
    """The server answered with an error body."""

    def __init__(self, status_code: int, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}")
        self.status_code = status_code
        self.name = name


def _raise_for(response: httpx.Response) -> None:
    if response.is_success:
        return
    try:
        body = response.json()
        name, message = body.get("name", "Error"), body.get("data", {}).get("message", "")
    except (ValueError, AttributeError):
        name, message = "Error", response.text
    if response.status_code == 404:  # the server's own words: "Session not found: ses_…"
        kind, said, identifier = message.partition(" not found: ")
        raise NotFoundError(kind, identifier) if said else NotFoundError(name, message)
    if response.status_code == 400:
        raise BadRequestError(message)
    raise ClientError(response.status_code, name, message)


class PartwireClient(ServerCalls, TeamCalls):
    """``async with PartwireClient(url) as client: ...``"""

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = 600.0,
        transport: httpx.AsyncBaseTransport | None = None,
        auth: tuple[str, str] | None = None,
        token: str | None = None,
        directory: str | None = None,
        client_kind: str = "python",
    ) -> None:
        """``directory`` names the project every request is about (opencode's
        ``x-opencode-directory``); without it the server uses the one it started in.
        ``token`` (``partwire token create``) signs in as its user; ``auth`` is the
        server's password as (user, password)."""
        self.base_url = base_url.rstrip("/")
        headers = {"x-opencode-directory": quote(directory, safe="/")} if directory else {}
        if token is not None:
            headers["authorization"] = f"Bearer {token}"
        headers["x-partwire-client"] = client_kind  # who watches, who answered
        self._http = httpx.AsyncClient(
            base_url=self.base_url, timeout=timeout, transport=transport, auth=auth, headers=headers
        )

    async def __aenter__(self) -> PartwireClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _request(
        self, method: str, path: str, body: Any = None, params: dict[str, Any] | None = None
    ) -> Any:
        response = await self._http.request(method, path, json=body, params=params)
        _raise_for(response)
        return response.json() if response.content else None

    # ---- sessions ------------------------------------------------------------------------

    async def create_session(self, title: str | None = None) -> Session:
        body = {"title": title} if title else {}
        return Session.model_validate(await self._request("POST", "/session", body))

    async def list_sessions(self) -> list[Session]:
        return [Session.model_validate(s) for s in await self._request("GET", "/session")]

    async def get_session(self, session_id: str) -> Session:
        return Session.model_validate(await self._request("GET", f"/session/{session_id}"))

    async def delete_session(self, session_id: str) -> bool:
        return bool(await self._request("DELETE", f"/session/{session_id}"))

    async def status(self) -> dict[str, SessionStatus]:
        raw = await self._request("GET", "/session/status")
        return {k: session_status_adapter.validate_python(v) for k, v in raw.items()}

    # ---- prompting -----------------------------------------------------------------------

    @staticmethod
    def _prompt_body(text: str, model: str | None, agent: str | None) -> dict[str, Any]:
        body: dict[str, Any] = {"parts": [{"type": "text", "text": text}]}
        if model:
            provider_id, model_id = parse_model_ref(model)
            body["model"] = {"providerID": provider_id, "modelID": model_id}
        if agent:
            body["agent"] = agent
        return body

    async def prompt(
        self, session_id: str, text: str, *, model: str | None = None, agent: str | None = None
    ) -> AssistantWithParts:
        raw = await self._request(
            "POST", f"/session/{session_id}/message", self._prompt_body(text, model, agent)
        )
        return AssistantWithParts.model_validate(raw)

    async def prompt_async(
        self,
        session_id: str,
        text: str,
        *,
        model: str | None = None,
        agent: str | None = None,
        message_id: str | None = None,
    ) -> None:
        """Start a run for ``text`` and return; ``message_id`` (``msg_…``) names the user
        message, so the run's events can be told from others."""
        body = self._prompt_body(text, model, agent)
        if message_id is not None:
            body["messageID"] = message_id
        await self._request("POST", f"/session/{session_id}/prompt_async", body)

    async def messages(self, session_id: str) -> list[MessageWithParts]:
        raw = await self._request("GET", f"/session/{session_id}/message")
        return [MessageWithParts.model_validate(m) for m in raw]

    async def export(self, session_id: str) -> SessionExport:
        """The whole session: its info and every message with its parts, in order."""
        info = await self.get_session(session_id)
        return SessionExport(info=info, messages=await self.messages(session_id))

    async def import_session(self, export: SessionExport) -> Session:
        raw = await self._request("POST", "/session/import", export.wire())
        return Session.model_validate(raw)

    async def snapshot(self, session_id: str) -> tuple[list[MessageWithParts], str | None]:
        """The session's messages and the event id they reflect: pass it to ``events()``."""
        response = await self._http.get(f"/session/{session_id}/message")
        _raise_for(response)
        messages = [MessageWithParts.model_validate(m) for m in response.json()]
        return messages, response.headers.get("x-last-event-id")

    async def ingest(
        self,
        session_id: str,
        events: Iterable[Mapping[str, Any]] | AsyncIterable[Mapping[str, Any]],
    ) -> MessageWithParts:
        """Stream ingest events (one dict per builder call, see ``POST .../ingest``) into a
        new message of ``session_id``; each is sent as soon as ``events`` yields it."""

        async def lines() -> AsyncIterator[bytes]:
            if isinstance(events, AsyncIterable):
                async for event in events:
                    yield (json.dumps(event) + "\n").encode()
            else:
                for event in events:
                    yield (json.dumps(event) + "\n").encode()

        response = await self._http.post(
            f"/session/{session_id}/ingest",
            content=lines(),
            headers={"content-type": "application/x-ndjson"},
        )
        _raise_for(response)
        return MessageWithParts.model_validate(response.json())

    async def message(self, session_id: str, message_id: str) -> MessageWithParts:
        raw = await self._request("GET", f"/session/{session_id}/message/{message_id}")
        return MessageWithParts.model_validate(raw)

    async def abort(self, session_id: str) -> bool:
        return bool(await self._request("POST", f"/session/{session_id}/abort"))

    # ---- permissions and questions -------------------------------------------------------

    async def permissions(self) -> list[PermissionRequest]:
        return [
            PermissionRequest.model_validate(p) for p in await self._request("GET", "/permission")
        ]

    async def reply_permission(
        self, request_id: str, reply: PermissionReply, message: str | None = None
    ) -> bool:
        body: dict[str, Any] = {"reply": reply}
        if message:
            body["message"] = message
        return bool(await self._request("POST", f"/permission/{request_id}/reply", body))

    async def attach_editor(self, session_id: str) -> bool:
        """Answer this session's reads from now on (``editor.read`` events)."""
        return bool(await self._request("POST", f"/session/{session_id}/editor"))

    async def detach_editor(self, session_id: str) -> bool:
        return bool(await self._request("DELETE", f"/session/{session_id}/editor"))

    async def reply_editor_read(
        self, request_id: str, content: str | None, error: str | None = None
    ) -> bool:
        body = {"content": content} if error is None else {"error": error}
        return bool(await self._request("POST", f"/editor/{request_id}/reply", body))

    async def questions(self) -> list[QuestionRequest]:
        return [QuestionRequest.model_validate(q) for q in await self._request("GET", "/question")]

    async def reply_question(self, request_id: str, answers: list[list[str]]) -> bool:
        body = {"answers": answers}
        return bool(await self._request("POST", f"/question/{request_id}/reply", body))

    async def reject_question(self, request_id: str) -> bool:
        return bool(await self._request("POST", f"/question/{request_id}/reject"))

    # ---- more of the session API ----------------------------------------------------------

    async def find_sessions(
        self, *, roots: bool = False, search: str | None = None, limit: int | None = None
    ) -> list[Session]:
        params: dict[str, Any] = {"roots": roots}
        if search:
            params["search"] = search
        if limit:
            params["limit"] = limit
        raw = await self._request("GET", "/session", params=params)
        return [Session.model_validate(s) for s in raw]

    async def update_session(self, session_id: str, **fields: Any) -> Session:
        raw = await self._request("PATCH", f"/session/{session_id}", fields)
        return Session.model_validate(raw)

    async def children(self, session_id: str) -> list[Session]:
        raw = await self._request("GET", f"/session/{session_id}/children")
        return [Session.model_validate(s) for s in raw]

    async def todos(self, session_id: str) -> list[Todo]:
        return [
            Todo.model_validate(t)
            for t in await self._request("GET", f"/session/{session_id}/todo")
        ]

    async def diff(self, session_id: str) -> list[SnapshotFileDiff]:
        raw = await self._request("GET", f"/session/{session_id}/diff")
        return [SnapshotFileDiff.model_validate(d) for d in raw]

    async def page(
        self, session_id: str, *, limit: int, before: str | None = None
    ) -> list[MessageWithParts]:
        params: dict[str, Any] = {"limit": limit}
        if before:
            params["before"] = before
        raw = await self._request("GET", f"/session/{session_id}/message", params=params)
        return [MessageWithParts.model_validate(m) for m in raw]

    async def delete_message(self, session_id: str, message_id: str) -> bool:
        return bool(await self._request("DELETE", f"/session/{session_id}/message/{message_id}"))

    async def update_part(self, part: Part) -> Part:
        path = f"/session/{part.session_id}/message/{part.message_id}/part/{part.id}"
        return part_adapter.validate_python(await self._request("PATCH", path, part.wire()))

    async def delete_part(self, session_id: str, message_id: str, part_id: str) -> bool:
        path = f"/session/{session_id}/message/{message_id}/part/{part_id}"
        return bool(await self._request("DELETE", path))

    async def fork(
        self,
        session_id: str,
        message_id: str | None = None,
        *,
        part_id: str | None = None,
        cut: Literal["after", "before"] | None = None,
    ) -> Session:
        """A new session holding the messages before ``message_id``, or everything up to
        ``part_id`` (with it when ``cut`` is "after", the default; without, "before")."""
        wanted = {"messageID": message_id, "partID": part_id, "cut": cut}
        body = {key: value for key, value in wanted.items() if value is not None}
        return Session.model_validate(
            await self._request("POST", f"/session/{session_id}/fork", body)
        )

    async def revert(self, session_id: str, message_id: str, part_id: str | None = None) -> Session:
        body = {"messageID": message_id, **({"partID": part_id} if part_id else {})}
        raw = await self._request("POST", f"/session/{session_id}/revert", body)
        return Session.model_validate(raw)

    async def unrevert(self, session_id: str) -> Session:
        return Session.model_validate(
            await self._request("POST", f"/session/{session_id}/unrevert")
        )

    async def replay(
        self, session_id: str, model: str, tools: Literal["recorded", "live"] = "recorded"
    ) -> Session:
        """A new session replaying this one's prompts with ``model`` ("provider/model");
        its answers stream as any run's (``metadata.replayOf`` says what it replays)."""
        provider_id, model_id = parse_model_ref(model)
        body = {"model": {"providerID": provider_id, "modelID": model_id}, "tools": tools}
        raw = await self._request("POST", f"/session/{session_id}/replay", body)
        return Session.model_validate(raw)

    async def summarize(self, session_id: str, model: str) -> bool:
        provider_id, model_id = parse_model_ref(model)
        body = {"providerID": provider_id, "modelID": model_id}
        return bool(await self._request("POST", f"/session/{session_id}/summarize", body))

    async def init(self, session_id: str, model: str, message_id: str) -> bool:
        provider_id, model_id = parse_model_ref(model)
        body = {"providerID": provider_id, "modelID": model_id, "messageID": message_id}
        return bool(await self._request("POST", f"/session/{session_id}/init", body))

    async def shell(
        self, session_id: str, command: str, agent: str = "build"
    ) -> AssistantWithParts:
        body = {"agent": agent, "command": command}
        raw = await self._request("POST", f"/session/{session_id}/shell", body)
        return AssistantWithParts.model_validate(raw)

    async def command(
        self, session_id: str, command: str, arguments: str = ""
    ) -> AssistantWithParts:
        body = {"command": command, "arguments": arguments}
        raw = await self._request("POST", f"/session/{session_id}/command", body)
        return AssistantWithParts.model_validate(raw)

    # ---- events --------------------------------------------------------------------------

    async def events(
        self, last_event_id: str | None = None, *, watch: str | None = None
    ) -> AsyncGenerator[Event, None]:
        """Every event from the server, reconnecting with Last-Event-ID after a drop;
        ``watch`` counts this client as one of that session's watchers meanwhile.

        Logged events are yielded exactly once and in order across reconnects;
        ``server.connected`` is yielded on every (re)connection.
        """
        attempt = 0
        while True:
            try:
                async for sse_id, event in self._event_stream(last_event_id, watch):
                    attempt = 0
                    if sse_id:  # the server names a cursor only for events in its log
                        last_event_id = sse_id
                    yield event
            except (httpx.TransportError, httpx.RemoteProtocolError):
                pass
            delay = RECONNECT_DELAYS_S[min(attempt, len(RECONNECT_DELAYS_S) - 1)]
            attempt += 1
            await asyncio.sleep(delay)

    async def _event_stream(
        self, last_event_id: str | None, watch: str | None = None
    ) -> AsyncIterator[tuple[str | None, Event]]:
        headers = {"Accept": "text/event-stream"}
        if last_event_id:
            headers["Last-Event-ID"] = last_event_id
        timeout = httpx.Timeout(None, connect=10.0)
        params = {"watch": watch} if watch else None
        stream = self._http.stream("GET", "/event", headers=headers, timeout=timeout, params=params)
        async with stream as response:
            _raise_for(response)
            data: list[str] = []
            sse_id: str | None = None
            async for line in response.aiter_lines():
                if line.startswith("data:"):
                    data.append(line[5:].lstrip(" "))
                elif line.startswith("id:"):
                    sse_id = line[3:].strip()
                elif line == "" and data:
                    yield sse_id, parse_event(json.loads("\n".join(data)))
                    data, sse_id = [], None

    async def part_frames(
        self, session_id: str, last_event_id: str | None = None
    ) -> AsyncGenerator[Frame, None]:
        """One session as part frames (``GET /session/{id}/stream``), resuming with
        Last-Event-ID after a drop: each frame is yielded once, in order. Feed them to
        :class:`partwire.protocol.partframes.FrameReducer` to rebuild the messages."""
        attempt = 0
        while True:
            try:
                async for frame_id, frame in self._frame_stream(session_id, last_event_id):
                    attempt = 0
                    last_event_id = frame_id or last_event_id
                    yield frame
            except (httpx.TransportError, httpx.RemoteProtocolError):
                pass
            delay = RECONNECT_DELAYS_S[min(attempt, len(RECONNECT_DELAYS_S) - 1)]
            attempt += 1
            await asyncio.sleep(delay)

    async def _frame_stream(
        self, session_id: str, last_event_id: str | None
    ) -> AsyncIterator[tuple[str | None, Frame]]:
        headers = {"Accept": "text/event-stream"}
        if last_event_id:
            headers["Last-Event-ID"] = last_event_id
        timeout = httpx.Timeout(None, connect=10.0)
        path = f"/session/{session_id}/stream?parts=partwire"
        async with self._http.stream("GET", path, headers=headers, timeout=timeout) as response:
            _raise_for(response)
            data: list[str] = []
            frame_id: str | None = None
            async for line in response.aiter_lines():
                if line.startswith("data:"):
                    data.append(line[5:].lstrip(" "))
                elif line.startswith("id:"):
                    frame_id = line[3:].strip()
                elif line == "" and data:
                    yield frame_id, parse_frame("\n".join(data))
                    data, frame_id = [], None


def parse_frame(data: str) -> Frame:
    from partwire.schema.frames import frame_adapter  # loaded when a client first reads frames

    return frame_adapter.validate_json(data)
