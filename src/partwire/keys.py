"""API keys set through ``PUT /auth/{provider}`` (opencode's /connect): ``auth.json`` in the
data dir, readable by its owner only. The configuration reads them after partwire.json and
the environment."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

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


def store(data_dir: Path, provider_id: str, key: str | None) -> bool:
    """Set (or with None remove) a provider's stored API key; False when removing one
    that was not there. Written to a new file, then moved, readable by the owner only."""
    path = data_dir / AUTH_FILE
    current: dict[str, Any] = {}
    if path.is_file():
        try:
            loaded = json.loads(path.read_text())
            current = loaded if isinstance(loaded, dict) else {}
        except (OSError, ValueError):
            current = {}
    if key is None:
        if provider_id not in current:
            return False
        del current[provider_id]
    else:
        current[provider_id] = {"type": "api", "key": key}
    data_dir.mkdir(parents=True, exist_ok=True)
    fresh = path.with_suffix(".tmp")
    descriptor = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(json.dumps(current, indent=2) + "\n")
    os.replace(fresh, path)
    return True
