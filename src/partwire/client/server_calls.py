"""The client's calls about the server itself: health, agents, the project's files,
configuration and providers."""

from __future__ import annotations

from typing import Any

from partwire.client.shapes import (
    FileChange,
    FileContent,
    FileNode,
    Health,
    PathInfo,
    ProjectInfo,
    TextMatch,
    VcsInfo,
)
from partwire.schema.permission import Agent
from partwire.schema.provider import ConfigProviders, ProviderList


class Requests:
    """What the client's groups of calls stand on: PartwireClient's ``_request``."""

    async def _request(
        self, method: str, path: str, body: Any = None, params: dict[str, Any] | None = None
    ) -> Any:
        raise NotImplementedError


class ServerCalls(Requests):
    """Mixed into PartwireClient."""

    async def health(self) -> Health:
        result: Health = await self._request("GET", "/global/health")
        return result

    async def agents(self) -> list[Agent]:
        return [Agent.model_validate(a) for a in await self._request("GET", "/agent")]

    async def commands(self) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = await self._request("GET", "/command")
        return result

    async def path(self) -> PathInfo:
        result: PathInfo = await self._request("GET", "/path")
        return result

    async def projects(self) -> list[ProjectInfo]:
        result: list[ProjectInfo] = await self._request("GET", "/project")
        return result

    async def current_project(self) -> ProjectInfo:
        result: ProjectInfo = await self._request("GET", "/project/current")
        return result

    async def files(self, path: str = ".") -> list[FileNode]:
        result: list[FileNode] = await self._request("GET", "/file", params={"path": path})
        return result

    async def file_content(self, path: str) -> FileContent:
        result: FileContent = await self._request("GET", "/file/content", params={"path": path})
        return result

    async def file_status(self) -> list[FileChange]:
        result: list[FileChange] = await self._request("GET", "/file/status")
        return result

    async def find_text(self, pattern: str) -> list[TextMatch]:
        result: list[TextMatch] = await self._request("GET", "/find", params={"pattern": pattern})
        return result

    async def find_files(self, query: str, *, dirs: bool = False, limit: int = 50) -> list[str]:
        params = {"query": query, "dirs": dirs, "limit": limit}
        result: list[str] = await self._request("GET", "/find/file", params=params)
        return result

    async def vcs(self) -> VcsInfo:
        result: VcsInfo = await self._request("GET", "/vcs")
        return result

    async def lsp(self) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = await self._request("GET", "/lsp")
        return result

    async def formatters(self) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = await self._request("GET", "/formatter")
        return result

    async def mcp(self) -> dict[str, Any]:
        result: dict[str, Any] = await self._request("GET", "/mcp")
        return result

    async def dispose(self) -> bool:
        return bool(await self._request("POST", "/instance/dispose"))

    async def config(self) -> dict[str, Any]:
        result: dict[str, Any] = await self._request("GET", "/config")
        return result

    async def update_config(self, patch: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = await self._request("PATCH", "/config", patch)
        return result

    async def config_providers(self) -> ConfigProviders:
        return ConfigProviders.model_validate(await self._request("GET", "/config/providers"))

    async def providers(self) -> ProviderList:
        return ProviderList.model_validate(await self._request("GET", "/provider"))
