"""Real ``partwire serve`` processes to kill, and SSE followers that reduce what they see.

A :class:`Follower` is a client as the guarantees promise it: it applies every event
to a :class:`ClientState`, remembers the last logged event id, and after a drop
resumes with ``Last-Event-ID``. Checks compare its state with what the server stores.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from partwire.client.reducer import ClientState, reduce
from partwire.schema.event import REGISTRY, Event, parse_event
from tests.served import free_port

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


class Served:
    """One data dir and port, served by successive ``partwire serve`` processes."""

    def __init__(
        self, project: Path, state: Path, delay_ms: int = 2, database_url: str | None = None
    ) -> None:
        self.project = project
        self.data_dir = state / "data"
        self.database_url = database_url  # a Postgres database instead of the SQLite file
        self.env = {
            **os.environ,
            "PARTWIRE_DATA_DIR": str(self.data_dir),
            "PARTWIRE_CONFIG_DIR": str(state / "config"),
            "PARTWIRE_DEMO_DELAY_MS": str(delay_ms),
            **({"PARTWIRE_DATABASE_URL": database_url} if database_url else {}),
        }
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: asyncio.subprocess.Process | None = None

    async def spawn(self) -> None:
        self.process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "partwire", "serve", "--port", str(self.port),
            "--project", str(self.project),
            env=self.env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip

    async def start(self) -> None:
        await self.spawn()
        async with httpx.AsyncClient(base_url=self.url) as http:
            for _ in range(400):
                assert self.process is not None
                if self.process.returncode is not None:
                    raise AssertionError(f"partwire serve exited with {self.process.returncode}")
                try:
                    await http.get("/global/health", timeout=1)
                    return
                except httpx.TransportError:
                    await asyncio.sleep(0.025)
        raise AssertionError("partwire serve did not start")

    async def kill(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.send_signal(signal.SIGKILL)
            await self.process.wait()
        self.process = None

    async def stop(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.terminate()
            await self.process.wait()
        self.process = None

    def integrity(self) -> list[str]:
        if self.database_url:
            return _postgres_integrity(self.database_url)
        conn = sqlite3.connect(f"file:{self.data_dir / 'partwire.db'}?mode=ro", uri=True)
        try:
            rows = [row[0] for row in conn.execute("PRAGMA integrity_check").fetchall()]
        finally:
            conn.close()
        return [] if rows == ["ok"] else rows


# A crash cannot tear a Postgres page; what it could break is the rows' own consistency.
_POSTGRES_CHECKS = {
    "part without its message": "SELECT COUNT(*) FROM part p "
    "WHERE NOT EXISTS (SELECT 1 FROM message m WHERE m.id = p.message_id)",
    "message without its session": "SELECT COUNT(*) FROM message m "
    "WHERE NOT EXISTS (SELECT 1 FROM session s WHERE s.id = m.session_id)",
    "streaming part after recovery": "SELECT COUNT(*) FROM part WHERE delta_seq IS NOT NULL "
    "AND NOT EXISTS (SELECT 1 FROM event_log WHERE seq > part.delta_seq)",
}


def _postgres_integrity(url: str) -> list[str]:
    from partwire.storage.pg_connection import connect

    conn = connect(url, autocommit=True)
    try:
        return [
            f"{what}: {count}"
            for what, sql in _POSTGRES_CHECKS.items()
            if (count := conn.execute(sql).fetchone()[0])
        ]
    finally:
        conn.close()


@dataclass
class Follower:
    """An SSE client that reduces every event and resumes with Last-Event-ID."""

    url: str
    state: ClientState = field(default_factory=ClientState)
    logged: list[str] = field(default_factory=list)  # logged event ids, in arrival order
    events: list[Event] = field(default_factory=list)
    instances: list[str] = field(default_factory=list)
    resyncs: int = 0
    last_id: str | None = None
    _task: asyncio.Task[None] | None = None
    _connected: asyncio.Event = field(default_factory=asyncio.Event)
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def connect(self) -> None:
        """(Re)connect, resuming after the last logged event seen; return once connected."""
        await self.drop()
        self._connected.clear()
        self._task = asyncio.create_task(self._read(self.last_id))
        waiter = asyncio.create_task(self._connected.wait())
        done, _ = await asyncio.wait(
            {waiter, self._task}, timeout=10, return_when="FIRST_COMPLETED"
        )
        if waiter not in done:
            waiter.cancel()
            raise AssertionError("the event stream did not connect")

    async def drop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _read(self, last_id: str | None) -> None:
        headers = {"Last-Event-ID": last_id} if last_id else {}
        timeout = httpx.Timeout(None, connect=5.0)
        try:
            async with (
                httpx.AsyncClient(base_url=self.url, timeout=timeout) as http,
                http.stream("GET", "/event", headers=headers) as response,
            ):
                async for line in response.aiter_lines():
                    if line.startswith("data:"):
                        self._apply(parse_event(json.loads(line[5:])))
        except (httpx.TransportError, httpx.RemoteProtocolError):
            return  # the server went away: resume later with connect()

    def _apply(self, event: Event) -> None:
        self.events.append(event)
        if event.type == "server.connected":
            self.instances.append(event.properties.instance_id)  # type: ignore[attr-defined]
            self._connected.set()
        elif event.type == "server.resync":
            self.resyncs += 1
        reduce(self.state, event)
        if REGISTRY[event.type].logged:
            self.logged.append(event.id)
            self.last_id = event.id
        self._changed.set()

    async def wait_for(self, predicate: Any, limit_s: float = 20) -> Event:
        """The first event (already seen or new) that satisfies ``predicate``."""
        checked = 0
        async with asyncio.timeout(limit_s):
            while True:
                for event in self.events[checked:]:
                    if predicate(event):
                        return event
                checked = len(self.events)
                self._changed.clear()
                await self._changed.wait()

    async def settle(self, quiet_s: float = 0.4, limit_s: float = 15) -> None:
        """Wait until no event has arrived for ``quiet_s`` (at most ``limit_s``: the loop
        checks its own deadline rather than trusting a cancellation to end it)."""
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), quiet_s)
            except TimeoutError:
                return
        raise AssertionError(f"events kept arriving for {limit_s} s")

    def texts(self) -> dict[str, str]:
        """part id → streamed text, as this client has it now."""
        return {
            part.id: part.text  # type: ignore[union-attr]
            for parts in self.state.part.values()
            for part in parts
            if part.type in ("text", "reasoning")
        }


class Violations(Counter[str]):
    """Violations by class, plus a count of iterations, for the report."""

    def report(self, name: str, iterations: int, extra: dict[str, Any] | None = None) -> str:
        ARTIFACTS.mkdir(exist_ok=True)
        body = {"iterations": iterations, "violations": dict(self), **(extra or {})}
        (ARTIFACTS / f"{name}.json").write_text(json.dumps(body, indent=2))
        lines = [f"{name}: {iterations} iterations"]
        lines += [f"  {kind}: {count}" for kind, count in sorted(self.items())] or ["  none"]
        return "\n".join(lines)


def open_parts(messages: list[dict[str, Any]]) -> list[str]:
    """Descriptions of everything that is not terminal in a session's stored messages."""
    found: list[str] = []
    for message in messages:
        info = message["info"]
        if info["role"] == "assistant" and "completed" not in info["time"]:
            found.append(f"message {info['id']} not completed")
        for part in message["parts"]:
            if part["type"] == "tool" and part["state"]["status"] in ("pending", "running"):
                found.append(f"tool {part['id']} {part['state']['status']}")
            if part["type"] in ("text", "reasoning") and "end" not in part.get("time", {"end": 0}):
                found.append(f"{part['type']} {part['id']} without end")
    return found
