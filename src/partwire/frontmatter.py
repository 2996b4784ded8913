"""Markdown files with YAML front matter (skills' SKILL.md, custom commands): the fields
between the leading ``---`` lines, and the body after them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from partwire.errors import ConfigError


def split(text: str, source: Path) -> tuple[dict[str, Any], str]:
    """(front matter, body); a file without front matter is all body. Front matter that
    is not a YAML mapping is a ConfigError naming the file."""
    import yaml  # loaded with the first skill or command, not at start-up

    if not text.startswith("---"):
        return {}, text.strip()
    head, sep, body = text[3:].partition("\n---")
    if not sep:
        raise ConfigError(f"{source}: the front matter has no closing ---")
    try:
        fields = yaml.safe_load(head) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: front matter is not YAML ({exc})") from None
    if not isinstance(fields, dict):
        raise ConfigError(f"{source}: front matter must be key: value lines")
    return {str(k): v for k, v in fields.items()}, body.partition("\n")[2].strip()
