"""Revert a session to a message or part, unrevert, and the session's diff.

Revert restores every file that a later step changed to its state before the
first such step, and records ``session.revert`` (messageID, partID, the
snapshot taken just before reverting, and the diff). Clients hide the messages
from that point on; the next prompt removes them for good. Unrevert puts the
files back as they were at the revert.
"""

from __future__ import annotations

import posixpath
from pathlib import Path, PurePosixPath
from typing import Any

from partwire.errors import BadRequestError, NotFoundError
from partwire.schema.event import (
    MessagePartRemoved,
    MessageRef,
    MessageRemoved,
    PartRef,
    SessionInfo,
    SessionUpdated,
)
from partwire.schema.message import MessageWithParts
from partwire.schema.part import Part, PatchPart, StepStartPart
from partwire.schema.session import Session, SessionRevert, SessionSummary
from partwire.session.snapshot import Snapshots
from partwire.storage.base import Store


async def _save(store: Store, session: Session) -> Session:
    await store.put_session(
        session, [SessionUpdated(SessionInfo(session_id=session.id, info=session))]
    )
    return session


def parts_from(
    history: list[MessageWithParts], message_id: str, part_id: str | None
) -> list[tuple[MessageWithParts, list[Part]]]:
    """Every message from ``message_id`` on, in history order, with the parts from
    ``part_id`` on in that first message (all of them when ``part_id`` is None).
    Positions come from history order, never from comparing ids."""
    start = next((i for i, e in enumerate(history) if e.info.id == message_id), None)
    if start is None:
        return []
    selected: list[tuple[MessageWithParts, list[Part]]] = []
    for entry in history[start:]:
        parts = list(entry.parts)
        if entry.info.id == message_id and part_id is not None:
            cut = next((i for i, p in enumerate(parts) if p.id == part_id), len(parts))
            parts = parts[cut:]
        selected.append((entry, parts))
    return selected


def _patches_from(
    history: list[MessageWithParts], message_id: str, part_id: str | None
) -> list[PatchPart]:
    return [
        part
        for _, parts in parts_from(history, message_id, part_id)
        for part in parts
        if isinstance(part, PatchPart)
    ]


def project_name(project_dir: Path, path: str, origin: str | None = None) -> str | None:
    """``path`` (absolute, or relative to the project) as a name inside ``project_dir``,
    read as text (``..`` collapsed, no symlink followed); a path under ``origin`` (the
    directory an imported session ran in) is taken as the same place here. None when
    it leads out of the project."""
    raw = PurePosixPath(path)
    for root in (str(project_dir), origin):
        if root and raw.is_absolute():
            relative = posixpath.relpath(posixpath.normpath(path), posixpath.normpath(root))
            if not relative.startswith(".."):
                break
    else:
        if raw.is_absolute():
            return None
        relative = posixpath.normpath(path)
    if relative in (".", "") or relative == ".." or relative.startswith("../"):
        return None
    return relative


def check_patch_files(part: Part, project_dir: Path, origin: str | None = None) -> Part:
    """A patch part with its files inside ``project_dir`` (rebased from ``origin``);
    a 400 naming the first file that leads out."""
    if not isinstance(part, PatchPart):
        return part
    files = []
    for index, file in enumerate(part.files):
        name = project_name(project_dir, file, origin)
        if name is None:
            raise BadRequestError(
                f"patch file {file} is outside the project {project_dir}",
                field=f"files.{index}",
            )
        files.append(str(project_dir / name))
    return part.model_copy(update={"files": files})


class Reverts:
    def __init__(self, store: Store, snapshots: Snapshots) -> None:
        self.store = store
        self.snapshots = snapshots

    async def revert(
        self, session: Session, message_id: str, part_id: str | None, *, files: bool = True
    ) -> Session:
        """Hide the session from ``message_id`` (or its part) on; with ``files`` the work
        tree goes back to how it was there (opencode v2 may stage the boundary alone)."""
        history = await self.store.list_messages(session.id)
        target = next((e for e in history if e.info.id == message_id), None)
        if target is None:
            raise NotFoundError("Message", message_id)
        if part_id is not None and all(p.id != part_id for p in target.parts):
            raise NotFoundError("Part", part_id)
        snapshot = session.revert.snapshot if session.revert else await self.snapshots.track()
        restored: set[str] = set()
        for patch in _patches_from(history, message_id, part_id) if files else []:
            for file in patch.files:
                name = project_name(self.snapshots.project_dir, file)
                if name is not None and name not in restored:
                    restored.add(name)
                    await self.snapshots.restore_files(patch.hash, [name])
        diff = ""
        if snapshot is not None and restored:
            diff = "".join(d["patch"] for d in await self.snapshots.diff(snapshot))
        revert = SessionRevert(
            message_id=message_id, part_id=part_id, snapshot=snapshot, diff=diff or None
        )
        return await _save(self.store, session.model_copy(update={"revert": revert}))

    async def unrevert(self, session: Session) -> Session:
        if session.revert is None:
            return session
        snapshot = session.revert.snapshot
        if snapshot is not None:
            files = await self.snapshots.changed_files(snapshot)
            await self.snapshots.restore_files(snapshot, files)
        return await _save(self.store, session.model_copy(update={"revert": None}))

    async def diff(self, session_id: str, message_id: str | None = None) -> list[dict[str, Any]]:
        """What changed in the work tree since the first snapshot (from ``message_id`` on)."""
        history = await self.store.list_messages(session_id)
        if message_id is not None:
            if all(e.info.id != message_id for e in history):
                raise NotFoundError("Message", message_id)
            history = [entry for entry, _ in parts_from(history, message_id, None)]
        for entry in history:
            for part in entry.parts:
                if isinstance(part, StepStartPart) and part.snapshot:
                    return await self.snapshots.diff(part.snapshot)
        return []

    async def summarize_changes(self, session_id: str) -> list[dict[str, Any]]:
        """Recompute the session's diff and its summary counts (after a step that patched)."""
        diffs = await self.diff(session_id)
        session = await self.store.get_session(session_id)
        summary = SessionSummary(
            additions=sum(d["additions"] for d in diffs),
            deletions=sum(d["deletions"] for d in diffs),
            files=len(diffs),
        )
        await _save(self.store, session.model_copy(update={"summary": summary}))
        return diffs


async def cleanup_revert(store: Store, session: Session) -> Session:
    """Before a new prompt: drop what a revert hid, and forget the revert."""
    revert = session.revert
    if revert is None:
        return session
    history = await store.list_messages(session.id)
    for entry, parts in parts_from(history, revert.message_id, revert.part_id):
        info = entry.info
        if info.id == revert.message_id and revert.part_id is not None:
            for part in parts:
                ref = PartRef(session_id=session.id, message_id=info.id, part_id=part.id)
                await store.delete_part(part.id, [MessagePartRemoved(ref)])
            continue
        ref_message = MessageRef(session_id=session.id, message_id=info.id)
        await store.delete_message(info.id, [MessageRemoved(ref_message)])
    return await _save(store, session.model_copy(update={"revert": None}))
