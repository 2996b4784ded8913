"""The Store protocol: what the session layer and the server need from persistence.

Every write takes the events that describe it; the store commits the change and
*then* publishes those events on the bus, giving each a strictly increasing id.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, TypeVar

from partwire.schema.base import Tokens
from partwire.schema.event import Draft, Event, PartDeltaProps
from partwire.schema.message import Message, MessageWithParts
from partwire.schema.part import Part
from partwire.schema.permission import Todo
from partwire.schema.session import Session
from partwire.storage.connection import Conn

T = TypeVar("T")


class EventLogGap(Exception):
    """The requested event is older than the log retains."""

    def __init__(self, oldest: str | None) -> None:
        super().__init__(f"event log starts at {oldest}")
        self.oldest = oldest


class WriteBatch(Protocol):
    """Rows committed together, all or none (storage/batch.py): added in order, each
    with the events that tell of it; ``commit`` writes them (IdConflictError when an id
    belongs to another session's message or another message's part)."""

    def put_session(self, session: Session, events: list[Draft]) -> None: ...
    def put_message(self, message: Message, events: list[Draft]) -> None: ...
    def put_part(self, part: Part, events: list[Draft], *, streaming: bool = False) -> None: ...
    def add_spend(self, session_id: str, tokens: Tokens, cost: float) -> None: ...
    async def commit(self) -> None: ...


class Store(Protocol):
    async def open(self) -> None: ...
    async def close(self) -> None: ...

    async def put_session(
        self, session: Session, events: list[Draft], *, sets_budget: bool = False
    ) -> None:
        """Write the session. Its spend (``tokens``, ``cost``) stays as stored, and so
        does ``metadata.budget`` unless ``sets_budget``: only their own writes change
        them, so a session read earlier never undoes them."""
        ...

    async def create_session(
        self, session: Session, events: list[Draft], *, owner: str | None = None
    ) -> None:
        """Store a new session (owned by the user ``owner``, in the same commit);
        IdConflictError when its id is taken (checked and claimed in one statement, so
        two writers never both get it)."""
        ...

    async def read_with(self, query: Callable[[Conn], T]) -> T:
        """Run ``query`` on a read connection in one transaction."""
        ...

    async def write_with(self, change: Callable[[Conn], T], events: list[Draft]) -> T:
        """Run ``change`` in the writer's transaction, logging ``events`` with it."""
        ...

    async def delete_session(self, session_id: str, events: list[Draft]) -> None: ...
    async def put_message(self, message: Message, events: list[Draft]) -> None: ...
    async def put_part(self, part: Part, events: list[Draft], *, streaming: bool = False) -> None:
        """Write the part row. ``streaming`` means deltas may follow it in the event log."""
        ...

    async def put_history(self, messages: list[MessageWithParts], events: list[Draft]) -> None:
        """Append whole messages with their parts, in order, in one commit; IdConflictError
        when an id belongs to another session's message (or another message's part)."""
        ...

    def batch(self) -> WriteBatch:
        """An empty batch of rows to commit together (one commit, not one a row)."""
        ...

    async def add_spend(self, session_id: str, tokens: Tokens, cost: float) -> None:
        """Add an answer's usage to the session's ``tokens`` and ``cost`` (in the one
        transaction: answers completing at once lose nothing) and publish the session."""
        ...

    def append_delta(self, delta: PartDeltaProps) -> Awaitable[None] | None:
        """Queue a streaming delta: None once it is queued, or (the writer is far behind:
        backpressure) what to await before the next. Its event is published when the
        batch holding it commits. Not a coroutine: a streamed token is one call, not three
        coroutines run to their end."""
        ...

    async def delete_message(self, message_id: str, events: list[Draft]) -> None: ...
    async def delete_part(self, part_id: str, events: list[Draft]) -> None: ...
    async def put_todos(self, session_id: str, todos: list[Todo], events: list[Draft]) -> None: ...
    async def get_todos(self, session_id: str) -> list[Todo]: ...

    def clear_failure(self) -> None:
        """A delta write failed (disk full): append_delta raises that failure until this
        is called, so a stream stops at once instead of queueing writes that cannot land."""
        ...

    async def publish(self, events: list[Draft]) -> None:
        """Log and publish events that change no row (status, idle)."""
        ...

    def announce(self, events: list[Draft]) -> None:
        """Publish events on this server's bus now, unlogged, when the store cannot take
        them (its write lock held elsewhere, the disk full): clients see a message end or
        a session go idle at once. The logged write follows when the store takes it
        again, or recovery makes it at the next start."""
        ...

    async def recover_session(self, session_id: str) -> None:
        """Finish what another server left unfinished in this session (it is gone)."""
        ...

    async def ids_in_use(self, message_ids: list[str], part_ids: list[str]) -> set[str]:
        """Which of these ids name a stored message or part (of any session)."""
        ...

    async def get_session(self, session_id: str) -> Session: ...
    async def list_sessions(self) -> list[Session]: ...
    async def get_message(self, session_id: str, message_id: str) -> MessageWithParts: ...
    async def list_messages(self, session_id: str) -> list[MessageWithParts]: ...
    async def last_event_id(self) -> str | None:
        """The newest logged event's id (None while the log is empty)."""
        ...

    async def snapshot_messages(
        self, session_id: str, *, limit: int | None = None, before: str | None = None
    ) -> tuple[list[MessageWithParts], str | None]: ...
    async def events_behind(self, event_id: str) -> int:
        """How many logged events follow ``event_id``; EventLogGap if the log lacks it."""
        ...

    async def log_page(self, event_id: str, limit: int) -> list[Event]:
        """Up to ``limit`` logged events after ``event_id`` as stored (for replay: their
        ``json`` is the wire form, their properties are not parsed); EventLogGap if the
        log lacks ``event_id``."""
        ...

    async def session_page(
        self,
        session_id: str | Sequence[str],
        types: list[str],
        *,
        after: str | None,
        through: str,
        limit: int,
    ) -> list[Event]:
        """Up to ``limit`` logged events of ``types`` that name ``session_id`` (or any of
        several), after
        ``after`` (None: from the log's start) and up to and including ``through``, parsed,
        oldest first: a session's history is read a page at a time, never whole.
        EventLogGap when the log cannot say (either id unknown)."""
        ...

    async def events_after(self, event_id: str | None) -> list[Event]:
        """Logged events after ``event_id`` (None: from the start) in order; EventLogGap
        when the log does not hold that id (pruned, or never logged here)."""
        ...
