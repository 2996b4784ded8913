"""API keys set through ``PUT /auth/{provider}`` (opencode's /connect): ``auth.json`` in the
data dir, readable by its owner only. The configuration reads them after partwire.json and
the environment."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from partwire.private import write_private

AUTH_FILE = "auth.json"


def stored(data_dir: Path) -> dict[str, str]:
    """API keys set through PUT /auth, by provider (``auth.json`` in the data dir, 0600).
    A file that cannot be read counts as none (the log says why)."""
    path = data_dir / AUTH_FILE
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        logging.getLogger(__name__).warning("%s unreadable, no stored keys: %s", path, exc)
        return {}
    keys = {}
    for provider_id, entry in (data if isinstance(data, dict) else {}).items():
        if (
            isinstance(entry, dict)
            and entry.get("type") == "api"
            and isinstance(entry.get("key"), str)
        ):
            keys[str(provider_id)] = entry["key"]
    return keys


def labels(data_dir: Path) -> dict[str, str]:
    """The label each stored key was given (v2's credentials), by provider."""
    found = {}
    for provider_id, entry in _load(data_dir).items():
        if isinstance(entry, dict) and isinstance(entry.get("label"), str):
            found[str(provider_id)] = entry["label"]
    return found


def store(data_dir: Path, provider_id: str, key: str | None, *, label: str | None = None) -> bool:
    """Set (or with None remove) a provider's stored API key; False when removing one
    that was not there. Written to a new file, then moved, readable by the owner only."""
    path = data_dir / AUTH_FILE
    current = _load(data_dir)
    if key is None:
        if provider_id not in current:
            return False
        del current[provider_id]
    else:
        entry: dict[str, str] = {"type": "api", "key": key}
        if label is not None:
            entry["label"] = label
        current[provider_id] = entry
    _write(path, current)
    return True


def relabel(data_dir: Path, provider_id: str, label: str) -> bool:
    """Give a stored key a new label; False when there is none for the provider."""
    current = _load(data_dir)
    entry = current.get(provider_id)
    if not isinstance(entry, dict) or entry.get("type") != "api":
        return False
    entry["label"] = label
    _write(data_dir / AUTH_FILE, current)
    return True


def _load(data_dir: Path) -> dict[str, Any]:
    """auth.json as it is; one that cannot be read counts as empty."""
    path = data_dir / AUTH_FILE
    try:
        loaded = json.loads(path.read_text()) if path.is_file() else {}
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _write(path: Path, current: dict[str, Any]) -> None:
    write_private(path, json.dumps(current, indent=2) + "\n")
