"""What the demo model does for a prompt: a pure mapping from text to a planned tool call.

Each plan is deterministic; see the README's demo table for the documented prompts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEMO_QUESTION = {
    "question": "Which colour should the demo use?",
    "header": "Colour",
    "options": [
        {"label": "Red", "description": "warm"},
        {"label": "Blue", "description": "cool"},
    ],
}
DEMO_TODOS = [
    {"content": "Read the project", "status": "completed", "priority": "high"},
    {"content": "Make the change", "status": "in_progress", "priority": "high"},
    {"content": "Run the tests", "status": "pending", "priority": "medium"},
]


@dataclass(frozen=True)
class Plan:
    """Call ``tool`` with ``args`` until it has answered ``repeat`` times, then summarize."""

    tool: str
    args: dict[str, Any] = field(default_factory=dict)
    repeat: int = 1


def _word_after(keyword: str, text: str) -> str | None:
    match = re.match(rf"^{keyword}\s+(.+)$", text, re.IGNORECASE | re.DOTALL)
    return match.group(1).strip() if match else None


def _edit(rest: str) -> Plan | None:
    path, _, change = rest.partition(" ")
    old, sep, new = change.partition("=>")
    if not sep or not old.strip():
        return None
    return Plan("edit", {"filePath": path, "oldString": old.strip(), "newString": new.strip()})


def _write(rest: str) -> Plan:
    path, _, content = rest.partition(" ")
    return Plan("write", {"filePath": path, "content": content + "\n" if content else ""})


def _keyword_plan(text: str) -> Plan | None:
    lowered = text.lower()
    fixed = {
        "list": Plan("list", {"path": "."}),
        "question": Plan("question", {"questions": [DEMO_QUESTION]}),
        "todo": Plan("todowrite", {"todos": DEMO_TODOS}),
        "loop": Plan("list", {"path": "."}, repeat=3),
    }
    if lowered in fixed:
        return fixed[lowered]
    if (command := _word_after("bash", text)) is not None:
        return Plan("bash", {"command": command, "description": f"Run {command[:40]}"})
    if (pattern := _word_after("glob", text)) is not None:
        return Plan("glob", {"pattern": pattern})
    if (rest := _word_after("write", text)) is not None:
        return _write(rest)
    if (rest := _word_after("edit", text)) is not None:
        return _edit(rest)
    if (prompt := _word_after("task", text)) is not None:
        args = {"description": "Demo sub-task", "prompt": prompt, "subagent_type": "general"}
        return Plan("task", args)
    return None


def plan_for(prompt: str, project_dir: Path) -> Plan | None:
    """The tool call a prompt asks for, or None for a plain answer."""
    text = prompt.strip()
    plan = _keyword_plan(text)
    if plan is not None or not text or "\n" in text or len(text) >= 4096:
        return plan
    try:
        if (project_dir / text).is_file():
            return Plan("read", {"filePath": text})
    except OSError:
        return None
    return None
