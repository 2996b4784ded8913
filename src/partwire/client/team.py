"""The client's calls about people: who the caller is, who may use a session, share links."""

from __future__ import annotations

from typing import Any, Literal

from partwire.client.server_calls import Requests
from partwire.schema.session import Session


class TeamCalls(Requests):
    """Mixed into PartwireClient."""

    async def whoami(self) -> dict[str, Any]:
        """``{name, scope, user?, shared?}``: who the server takes this client for."""
        found: dict[str, Any] = await self._request("GET", "/user")
        return found

    async def access(self, session_id: str) -> dict[str, Any]:
        """``{grants: [{user, role}], shared}``."""
        found: dict[str, Any] = await self._request("GET", f"/session/{session_id}/access")
        return found

    async def grant(
        self, session_id: str, user: str, role: Literal["read", "write"] | None
    ) -> dict[str, Any]:
        """Give ``user`` read or write on the session (None takes it back)."""
        body = {"user": user, "role": role}
        found: dict[str, Any] = await self._request("POST", f"/session/{session_id}/access", body)
        return found

    async def share(self, session_id: str) -> Session:
        """A new read-only link: ``share.url`` of the session returned (shown once)."""
        return Session.model_validate(await self._request("POST", f"/session/{session_id}/share"))

    async def unshare(self, session_id: str) -> Session:
        return Session.model_validate(await self._request("DELETE", f"/session/{session_id}/share"))
