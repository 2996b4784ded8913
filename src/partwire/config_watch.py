"""Editing ``partwire.json`` takes effect: a running server notices its config files
change (the user's and the project's), reloads, and says in the log what changed."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

from partwire.config import CONFIG_FILE, Settings, user_config_dir

log = logging.getLogger(__name__)

WATCH_EVERY_S = 1.0  # PARTWIRE_CONFIG_WATCH_S sets it; 0 turns watching off

Stamp = tuple[tuple[int, int] | None, ...]


def watched_files(settings: Settings) -> tuple[Path, ...]:
    """The files whose change reloads the configuration, present or not yet."""
    return (user_config_dir(settings.source_env) / CONFIG_FILE, settings.project_dir / CONFIG_FILE)


def stamp(files: tuple[Path, ...]) -> Stamp:
    found: list[tuple[int, int] | None] = []
    for path in files:
        try:
            status = path.stat()
        except OSError:
            found.append(None)
        else:
            found.append((status.st_mtime_ns, status.st_size))
    return tuple(found)


def changes(old: Settings, new: Settings) -> list[str]:
    """What a reload changed, in words for the log."""
    said: list[str] = []
    if old.default_model != new.default_model:
        said.append(f"default model {old.default_model} → {new.default_model}")
    added = sorted(set(new.providers) - set(old.providers))
    removed = sorted(set(old.providers) - set(new.providers))
    if added:
        said.append(f"providers added: {', '.join(added)}")
    if removed:
        said.append(f"providers removed: {', '.join(removed)}")
    for provider_id in sorted(set(old.providers) & set(new.providers)):
        before, after = old.providers[provider_id], new.providers[provider_id]
        if before != after:
            said.append(f"provider {provider_id} changed")
    if old.raw_config != new.raw_config and not said:
        said.append("settings changed")
    return said


async def watch(
    current: Callable[[], Settings],
    reload: Callable[[], Awaitable[Settings]],
    every_s: float = WATCH_EVERY_S,
) -> None:
    """Poll the config files; when one changes, ``reload`` and log what changed. A file
    that cannot be read keeps the configuration as it was (the log says why)."""
    files = watched_files(current())
    seen = await asyncio.to_thread(stamp, files)
    while True:
        await asyncio.sleep(every_s)
        now = await asyncio.to_thread(stamp, files)
        if now == seen:
            continue
        seen = now
        before = current()
        try:
            after = await reload()
        except Exception as exc:  # a half-written or broken file: keep what works
            log.warning("config not reloaded, the previous one stays in use: %s", exc)
            continue
        said = changes(before, after) or ["nothing that matters to a run"]
        log.info("config reloaded (%s): %s", ", ".join(map(str, files)), "; ".join(said))
