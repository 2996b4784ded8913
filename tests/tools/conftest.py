from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from partwire.errors import RejectedError
from partwire.tools.base import ToolContext


class Asks:
    """An asker that records every ask and rejects the permissions in ``reject``."""

    def __init__(self, reject: Sequence[str] = ()) -> None:
        self.reject = set(reject)
        self.asks: list[tuple[str, list[str], dict[str, Any]]] = []

    async def __call__(
        self,
        permission: str,
        patterns: Sequence[str],
        *,
        always: Sequence[str] | None = None,
        metadata: dict[str, Any] | None = None,
        must_ask: bool = False,
    ) -> None:
        self.asks.append((permission, list(patterns), metadata or {}))
        if permission in self.reject:
            raise RejectedError("The user rejected permission to use this tool.")


@pytest.fixture
def asks() -> Asks:
    return Asks()


@pytest.fixture
def ctx(project: Path, tmp_path: Path, asks: Asks) -> ToolContext:
    return ToolContext(
        session_id="ses_1",
        message_id="msg_1",
        call_id="call_1",
        agent="build",
        project_dir=project,
        output_dir=tmp_path / "tool-output",
        asker=asks,
    )
