"""The tool registry: built-ins register through the same call a plugin would use."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from partwire.providers.stream import ToolSpec
from partwire.tools.base import Tool

_TOOLS: dict[str, Tool[Any]] = {}


def register_tool(tool: Tool[Any]) -> None:
    _TOOLS[tool.id] = tool


def get_tool(tool_id: str) -> Tool[Any] | None:
    return _TOOLS.get(tool_id)


def all_tools() -> list[Tool[Any]]:
    return list(_TOOLS.values())


def tool_specs(disabled: frozenset[str] = frozenset()) -> tuple[ToolSpec, ...]:
    return tuple(tool.spec() for tool in _TOOLS.values() if tool.id not in disabled)


def enabled_lookup(disabled: frozenset[str]) -> Callable[[str], Tool[Any] | None]:
    """get_tool, except that a disabled tool does not exist (a call to it is an error)."""
    return lambda tool_id: None if tool_id in disabled else _TOOLS.get(tool_id)


def load_builtin_tools() -> None:
    from partwire.tools import (
        apply_patch,
        bash,
        edit,
        glob,
        grep,
        list,
        question,
        read,
        skill,
        task,
        todo,
        webfetch,
        write,
    )

    for tool in (
        read.TOOL, list.TOOL, glob.TOOL, grep.TOOL, webfetch.TOOL, bash.TOOL, edit.TOOL,
        write.TOOL, apply_patch.TOOL, todo.WRITE, todo.READ, task.TOOL, question.TOOL,
        skill.TOOL,
    ):  # fmt: skip
        register_tool(tool)
