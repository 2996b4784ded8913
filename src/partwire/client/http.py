"""A typed async client for the partwire (and opencode) HTTP API."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, AsyncIterator
from types import TracebackType
from typing import Any

import httpx

from partwire.errors import BadRequestError, NotFoundError, UserError
from partwire.providers.registry import parse_model_ref
from partwire.schema.event import REGISTRY, Event, parse_event
from partwire.schema.message import AssistantWithParts, MessageWithParts
from partwire.schema.permission import PermissionReply, PermissionRequest, QuestionRequest
from partwire.schema.session import Session, SessionStatus, session_status_adapter

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
    if response.status_code == 404:
        raise NotFoundError(name, message)
    if response.status_code == 400:
        raise BadRequestError(message)
    raise ClientError(response.status_code, name, message)


class PartwireClient:
    """``async with PartwireClient(url) as client: ...``"""

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = 600.0,
        transport: httpx.AsyncBaseTransport | None = None,
        auth: tuple[str, str] | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._http = httpx.AsyncClient(
            base_url=self.base_url, timeout=timeout, transport=transport, auth=auth
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

    async def _request(self, method: str, path: str, body: Any = None) -> Any:
        response = await self._http.request(method, path, json=body)
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
        self, session_id: str, text: str, *, model: str | None = None, agent: str | None = None
    ) -> None:
        await self._request(
            "POST", f"/session/{session_id}/prompt_async", self._prompt_body(text, model, agent)
        )

    async def messages(self, session_id: str) -> list[MessageWithParts]:
        raw = await self._request("GET", f"/session/{session_id}/message")
        return [MessageWithParts.model_validate(m) for m in raw]

    async def snapshot(self, session_id: str) -> tuple[list[MessageWithParts], str | None]:
        """The session's messages and the event id they reflect: pass it to ``events()``."""
        response = await self._http.get(f"/session/{session_id}/message")
        _raise_for(response)
        messages = [MessageWithParts.model_validate(m) for m in response.json()]
        return messages, response.headers.get("x-last-event-id")

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

    async def questions(self) -> list[QuestionRequest]:
        return [QuestionRequest.model_validate(q) for q in await self._request("GET", "/question")]

    async def reply_question(self, request_id: str, answers: list[list[str]]) -> bool:
        body = {"answers": answers}
        return bool(await self._request("POST", f"/question/{request_id}/reply", body))

    async def reject_question(self, request_id: str) -> bool:
        return bool(await self._request("POST", f"/question/{request_id}/reject"))

    # ---- events --------------------------------------------------------------------------

    async def events(self, last_event_id: str | None = None) -> AsyncGenerator[Event, None]:
        """Every event from the server, reconnecting with Last-Event-ID after a drop.

        Logged events are yielded exactly once and in order across reconnects;
        ``server.connected`` is yielded on every (re)connection.
        """
        attempt = 0
        while True:
            try:
                async for event in self._event_stream(last_event_id):
                    attempt = 0
                    if event.id and _is_logged(event):
                        last_event_id = event.id
                    yield event
            except (httpx.TransportError, httpx.RemoteProtocolError):
                pass
            delay = RECONNECT_DELAYS_S[min(attempt, len(RECONNECT_DELAYS_S) - 1)]
            attempt += 1
            await asyncio.sleep(delay)

    async def _event_stream(self, last_event_id: str | None) -> AsyncIterator[Event]:
        headers = {"Accept": "text/event-stream"}
        if last_event_id:
            headers["Last-Event-ID"] = last_event_id
        timeout = httpx.Timeout(None, connect=10.0)
        async with self._http.stream("GET", "/event", headers=headers, timeout=timeout) as response:
            _raise_for(response)
            data: list[str] = []
            async for line in response.aiter_lines():
                if line.startswith("data:"):
                    data.append(line[5:].lstrip(" "))
                elif line == "" and data:
                    yield parse_event(json.loads("\n".join(data)))
                    data = []


def _is_logged(event: Event) -> bool:
    return REGISTRY[event.type].logged
