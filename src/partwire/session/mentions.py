"""Files mentioned in a prompt (``@path`` → a ``file://`` part): their text goes to the model.

As opencode does, a mentioned text file stays a file part (what the UI shows) and gets
a synthetic text part next to it holding what the read tool would have returned, so
every provider sees the content; the ``file://`` URL itself is never sent.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from urllib.parse import unquote, urlparse

from partwire import ids
from partwire.errors import BadRequestError, ToolError
from partwire.schema.part import FilePart, Part, TextPart
from partwire.tools.paths import inside, relative
from partwire.tools.read import DEFAULT_LIMIT, read_window


def is_local_file(part: Part) -> bool:
    return isinstance(part, FilePart) and part.url.startswith("file://")


def _path_of(part: FilePart, project_dir: Path) -> Path:
    target = (project_dir / unquote(urlparse(part.url).path)).resolve()
    if not inside(project_dir, target):
        raise BadRequestError(
            f"{part.url} is outside the project; only project files can be mentioned",
            field="parts",
        )
    return target


async def _content(part: FilePart, project_dir: Path) -> TextPart:
    path = _path_of(part, project_dir)
    name = relative(project_dir, path)
    try:
        text, _ = await asyncio.to_thread(read_window, path, name, 0, DEFAULT_LIMIT)
    except (ToolError, OSError) as error:
        raise BadRequestError(f"cannot read the mentioned file {name}: {error}") from error
    call = json.dumps({"filePath": str(path)})
    return TextPart(
        id=ids.part_id(),
        session_id=part.session_id,
        message_id=part.message_id,
        text=f"Called the Read tool with the following input: {call}\n\n{text}",
        synthetic=True,
    )


async def with_mentioned_files(parts: list[Part], project_dir: Path) -> list[Part]:
    """The parts, each mentioned text file joined by a synthetic part with its content."""
    result: list[Part] = []
    for part in parts:
        if isinstance(part, FilePart) and is_local_file(part) and part.mime.startswith("text/"):
            result.append(await _content(part, project_dir))
        result.append(part)
    return result
