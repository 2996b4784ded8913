"""The composition root: one store, bus and status for the server, one scope per project.

A ``Project`` is everything tied to a project directory: its settings (the tools'
root), snapshot store, session loop and sessions. The server starts with the
directory it was launched in; requests naming another directory (opencode's
``directory`` query parameter or ``x-opencode-directory`` header) get a scope of
their own, made on first use. Sessions always run in their own directory's scope.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
import uuid
from collections.abc import AsyncIterator, Awaitable, Coroutine
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from partwire import ids
from partwire.accounts import Accounts
from partwire.bus import Bus
from partwire.config import Settings
from partwire.editor import EditorFiles
from partwire.errors import BadRequestError, TooManyRequestsError
from partwire.permission import Permissions
from partwire.presence import Presence
from partwire.private import private_dir
from partwire.providers.builtin import load_builtin_providers
from partwire.providers.registry import Closer
from partwire.question import Questions
from partwire.quotas import Quotas
from partwire.schema.event import Event, InstanceDisposedProps, ServerInstanceDisposed
from partwire.schema.part import ModelRef
from partwire.schema.session import Session
from partwire.session.loop import SessionLoop, leave_running
from partwire.session.ownership import Ownership
from partwire.session.revert import Reverts
from partwire.session.sessions import Sessions
from partwire.session.snapshot import Snapshots
from partwire.session.status import StatusTracker
from partwire.session.subtask import SubtaskRunner
from partwire.session.toolhost import ToolHost
from partwire.storage import lock
from partwire.storage.base import Store
from partwire.storage.migrations import LIFECYCLE_TYPES
from partwire.storage.sqlite import SqliteStore
from partwire.terminals import Terminals
from partwire.tools.registry import load_builtin_tools
from partwire.tracing import Tracing, exporting_provider
from partwire.tuicontrol import TuiControl

if TYPE_CHECKING:
    from partwire.session.recorder import Recorder
    from partwire.session.recording import Recording


@dataclass
class Project:
    settings: Settings
    loop: SessionLoop
    sessions: Sessions
    terminals: Terminals
    _recorder: Recorder | None = None

    @property
    def recorder(self) -> Recorder:
        """Recordings of external loops in this project, made on first use (its modules
        load then, not at start-up)."""
        if self._recorder is None:
            from partwire.session.recorder import Recorder

            loop = self.loop
            self._recorder = Recorder(
                loop.store, loop.host, loop.status, loop.claim, loop.release, self.sessions.create
            )
        return self._recorder

    @property
    def directory(self) -> str:
        return str(self.settings.project_dir)

    def use(self, settings: Settings) -> None:
        """Take new settings (after PATCH /config), keeping this project's directory."""
        scoped = replace(settings, project_dir=self.settings.project_dir)
        self.settings = scoped
        self.loop.settings = scoped
        self.loop.host.settings = scoped
        self.sessions.settings = scoped


def _server_id(data_dir: Path) -> str:
    """This data dir's server, whichever process serves it (made once, kept in the dir)."""
    private_dir(data_dir)  # made, or kept, owner-only
    path = data_dir / "server-id"
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        made = uuid.uuid4().hex
        path.write_text(made + "\n")
        return made


def _store(settings: Settings, bus: Bus) -> Store:
    if settings.database_url:
        from partwire.storage.postgres import PostgresStore

        return PostgresStore(
            settings.database_url,
            bus,
            retain_events=settings.event_log_retain,
            server_id=_server_id(settings.data_dir),
            redis_url=settings.redis_url,
        )
    return SqliteStore(settings.database_path, bus, retain_events=settings.event_log_retain)


# projects (directories) one server holds at once; idle ones beyond are dropped
MAX_PROJECTS = 64


@dataclass
class Runtime:
    settings: Settings
    bus: Bus
    store: Store
    status: StatusTracker
    permissions: Permissions
    questions: Questions
    projects: dict[Path, Project] = field(default_factory=dict)
    disposed: bool = False
    started: bool = False
    closers: list[Closer] = field(default_factory=list)
    # new at every start: server.connected carries it so clients can tell a restart
    instance_id: str = field(default_factory=lambda: ids.ascending("ins"))
    quotas: Quotas = field(default_factory=Quotas)
    editor: EditorFiles | None = None  # set by build: reads through an attached editor
    accounts: Accounts = field(init=False)  # users, tokens, grants (partwire/accounts.py)
    presence: Presence = field(init=False)  # who follows which session here
    background: set[asyncio.Task[None]] = field(default_factory=set)
    tui: TuiControl = field(default_factory=TuiControl)
    _warming: asyncio.Future[None] | None = None
    ownership: Ownership = field(default_factory=Ownership)
    tracing: Tracing | None = None  # OpenTelemetry spans, when OTEL_EXPORTER_OTLP_* is set

    def __post_init__(self) -> None:
        self.accounts = Accounts(self.store)
        self.presence = Presence(self.bus, self.instance_id)

    @classmethod
    def build(cls, settings: Settings) -> Runtime:
        closers = load_builtin_providers(settings)
        load_builtin_tools()
        bus = Bus(queue_limit=settings.subscriber_queue)
        store = _store(settings, bus)
        status = StatusTracker(store)
        runtime = cls(
            settings,
            bus,
            store,
            status,
            Permissions(store),
            Questions(store),
            closers=closers,
            editor=EditorFiles(bus),
        )
        runtime.project(settings.project_dir)
        return runtime

    def spawn(self, work: Coroutine[Any, Any, None], name: str) -> None:
        """Run ``work`` after the request that started it has been answered (held here
        so it is not collected, cancelled at stop)."""
        task = asyncio.get_running_loop().create_task(work, name=name)
        self.background.add(task)
        task.add_done_callback(self.background.discard)
        task.add_done_callback(leave_running)

    # ---- projects ------------------------------------------------------------------------

    def _make_project(self, directory: Path) -> Project:
        settings = replace(self.settings, project_dir=directory)
        host = ToolHost(self.store, self.permissions, self.questions, settings, self.editor)
        reverts = Reverts(self.store, Snapshots(directory, settings.data_dir))
        loop = SessionLoop(self.store, self.status, settings, host, reverts, self.ownership)
        sessions = Sessions(self.store, loop, settings)
        host.subtasks = SubtaskRunner(sessions, loop, self.bus)
        return Project(settings, loop, sessions, Terminals(self.bus, directory))

    def project(self, directory: str | Path | None = None) -> Project:
        """The scope of ``directory`` (default: where the server started), made on first use."""
        if directory is None or directory == "":
            return self.projects[self.settings.project_dir]
        try:
            path = Path(directory).expanduser().resolve()
        except (OSError, ValueError) as exc:
            raise BadRequestError(f"directory: {exc}", field="directory", kind="Query") from None
        found = self.projects.pop(path, None)  # re-inserted last: the oldest used go first
        if found is None:
            if not path.is_dir():
                raise BadRequestError(
                    f"directory {directory} does not exist", field="directory", kind="Query"
                )
            self._make_room()
            found = self._make_project(path)
        self.projects[path] = found
        return found

    def known_project(self, directory: str | None) -> Project | None:
        """The scope of ``directory`` if this server holds it already (never made here)."""
        if not directory:
            return self.projects[self.settings.project_dir]
        try:
            return self.projects.get(Path(directory).expanduser().resolve())
        except (OSError, ValueError):
            return None

    def _make_room(self) -> None:
        """Keep at most MAX_PROJECTS: drop the least recently used idle one (no run, no
        terminal; it is made again when next named), else refuse."""
        if len(self.projects) < MAX_PROJECTS:
            return
        for path, project in self.projects.items():
            idle = not project.loop.running() and not project.terminals.list()
            if path != self.settings.project_dir and idle:
                del self.projects[path]
                return
        raise TooManyRequestsError(
            f"this server holds {MAX_PROJECTS} projects, each busy; finish a run or close "
            "a terminal in one of them first"
        )

    def project_of(self, session: Session) -> Project:
        """Sessions run in their own directory, whatever directory a request names (most
        in the server's own: found without resolving the path on disk)."""
        if session.directory == str(self.settings.project_dir):
            return self.projects[self.settings.project_dir]
        return self.project(session.directory)

    @contextlib.asynccontextmanager
    async def record(
        self,
        session_id: str,
        *,
        role: str = "assistant",
        prompt: str | None = None,
        parent_id: str | None = None,
        model: ModelRef | str | None = None,
        agent: str | None = None,
        message_id: str | None = None,
    ) -> AsyncIterator[Recording]:
        """Record one message of your own agent loop into ``session_id``, live::

            async with runtime.record(session_id, prompt="Fix the test") as msg:
                await msg.add_text_delta("Looking…")

        See :class:`partwire.session.recorder.Recorder.record` for the options."""
        session = await self.store.get_session(session_id)
        recorder = self.project_of(session).recorder
        async with recorder.record(
            session_id,
            role=role,
            prompt=prompt,
            parent_id=parent_id,
            model=model,
            agent=agent,
            message_id=message_id,
        ) as recording:
            yield recording

    @property
    def default(self) -> Project:
        return self.projects[self.settings.project_dir]

    @property
    def loop(self) -> SessionLoop:
        return self.default.loop

    @property
    def sessions(self) -> Sessions:
        return self.default.sessions

    # ---- lifecycle -----------------------------------------------------------------------

    async def start(self) -> None:
        """Take the data dir (one server per data dir) and open the store. Idempotent:
        ``partwire serve`` starts the runtime before uvicorn, so that a refusal is one
        line, and the app's lifespan then finds it started."""
        if self.started:
            return
        traces = exporting_provider(self.settings.source_env)  # a missing extra: refused first
        lock.acquire(self.settings.data_dir)
        try:
            await self.store.open()
        except BaseException:
            lock.release(self.settings.data_dir)
            raise
        self.started = True
        self._share_sessions()
        self.watch_config()
        self.tracing = Tracing(self.bus, traces)
        self.tracing.start()
        # Everything loaded so far lives as long as the process: keep it out of the
        # cyclic collector's scans, whose full passes otherwise show up as latency spikes.
        gc.freeze()

    def _share_sessions(self) -> None:
        """With servers sharing the database: leases decide which one runs a session;
        every prompt stored (by any of them) reaches the one that runs it."""
        if not self.settings.database_url:
            return
        from partwire.storage.pg_leases import PgLeases
        from partwire.storage.postgres import PostgresStore

        assert isinstance(self.store, PostgresStore)
        owner = f"{self.store.server_id}:{self.instance_id}"
        self.ownership.leases = leases = PgLeases(self.store.url, owner)
        self.ownership.bus = self.bus
        store = self.store

        async def forward(command: dict[str, Any]) -> bool:
            """Send to the server holding the run or the ask, if one holds it."""
            if command["op"] == "abort":
                held = await leases.held_elsewhere(command["session"])
            else:
                held = await store.ask_is_open(command["id"])
            if held:
                await store.send_command(command)
            return held

        self.ownership.forward = self.permissions.forward = self.questions.forward = forward
        store.on_command(lambda command: self.spawn(self._obey(command), name="command"))
        self.spawn(self.ownership.keep(self._take_over), name="session leases")
        for event in store.open_elsewhere():
            self._observe(event)
        self.spawn(self._follow_every_server(), name="every server's events")

    async def _obey(self, command: dict[str, Any]) -> None:
        """Another server's command, when this one holds what it names."""
        op, target = command["op"], command.get("id", "")
        if op == "abort":
            loop = await self._loop_of(command["session"])
            if loop.is_busy(command["session"]):
                await loop.abort(command["session"])
        elif op == "permission.reply" and self.permissions.holds(target):
            await self.permissions.reply(target, command["reply"], command.get("message"))
        elif op == "question.reply" and self.questions.holds(target):
            await self.questions.reply(target, command["answers"])
        elif op == "question.reject" and self.questions.holds(target):
            await self.questions.reject(target)

    async def _loop_of(self, session_id: str) -> SessionLoop:
        return self.project_of(await self.store.get_session(session_id)).loop

    async def _take_over(self, session_id: str) -> None:
        await (await self._loop_of(session_id)).take_over(session_id)

    async def _follow_every_server(self) -> None:
        """Prompts stored through any server reach the one that runs the session; asks and
        statuses of every server show in this one's lists."""
        # what GET /session/status, /permission and /question list, from every server's events
        subscription = self.bus.subscribe("message.updated", *LIFECYCLE_TYPES)  # no deltas
        try:
            while (event := await subscription.get()) is not None:
                if event.type == "message.updated":
                    if getattr(getattr(event.properties, "info", None), "role", None) == "user":
                        session_id = event.session_id
                        assert session_id is not None
                        self.spawn(self._answer(session_id), name=f"answer {session_id}")
                else:
                    self._observe(event)
        finally:
            subscription.close()

    def _observe(self, event: Event) -> None:
        self.status.observe(event)
        self.permissions.observe(event)
        self.questions.observe(event)

    async def _answer(self, session_id: str) -> None:
        await (await self._loop_of(session_id)).answer_waiting(session_id)

    def warm_up(self) -> None:
        """Once the port is bound, what the first prompt would otherwise wait for: on a
        worker thread, the configured providers' SDKs, the tools' schemas (pydantic
        takes milliseconds a tool) and the processor's module; on the loop, whether the
        project is a git repository (a subprocess). The start waited for none of it."""
        if self._warming is not None:
            return
        apis: set[str] = {provider.api for provider in self.settings.providers.values()}
        loop = asyncio.get_running_loop()
        self._warming = loop.run_in_executor(None, _warm, apis)
        snapshots = self.project().loop.reverts.snapshots
        self.spawn(_quietly(snapshots.enabled()), "warm-up: git")

    async def warmed(self) -> None:
        """Until ``warm_up``'s imports are done (at once if it never ran)."""
        if self._warming is not None:
            await asyncio.shield(self._warming)

    async def reconfigure(self) -> Settings:
        """Re-read the configuration and re-register providers (after PATCH /config, a
        config file's change, or a dispose); returns the new settings."""
        settings = await asyncio.to_thread(self.settings.reload)
        for close in self.closers:
            await close()
        self.closers = load_builtin_providers(settings)
        self.settings = settings
        for project in self.projects.values():
            project.use(settings)
        return settings

    def watch_config(self) -> None:
        """Reload whenever a config file changes (``config_watch``)."""
        from partwire import config_watch

        if self.settings.config_watch_s <= 0:
            return
        every = self.settings.config_watch_s
        watcher = config_watch.watch(lambda: self.settings, self.reconfigure, every)
        task = asyncio.get_running_loop().create_task(watcher, name="config watch")
        self.background.add(task)
        task.add_done_callback(self.background.discard)

    def announce_shutdown(self) -> None:
        """Tell every subscriber the instance is going away, then end their streams."""
        if self.disposed:
            return
        self.disposed = True
        props = InstanceDisposedProps(directory=str(self.settings.project_dir))
        self.bus.publish(ServerInstanceDisposed(props).with_id(ids.event_id()))
        self.bus.close()

    async def dispose(self, directory: str | Path | None = None, *, reload: bool = True) -> None:
        """Dispose of one directory's instance, as opencode's ``/instance/dispose`` does:
        its runs stop, it is made anew (state, config) on next use, and subscribers get
        ``server.instance.disposed`` (their streams stay open). ``reload``: read the
        configuration files again first (a caller disposing of several does it once)."""
        project = self.project(directory)
        path = project.settings.project_dir
        if reload:  # made anew: with the configuration as the files say now
            await self.reconfigure()
        await project.loop.shutdown()
        await project.terminals.close_all()
        self.projects[path] = self._make_project(path)
        props = InstanceDisposedProps(directory=str(path))
        self.bus.publish(ServerInstanceDisposed(props).with_id(ids.event_id()))

    async def shutdown_sessions(self) -> None:
        for project in list(self.projects.values()):
            await project.loop.shutdown()
            await project.terminals.close_all()

    async def stop(self) -> None:
        self.announce_shutdown()
        for task in tuple(self.background):
            task.cancel()
        await self.shutdown_sessions()
        if self.tracing is not None:
            await self.tracing.stop()
        for close in self.closers:
            await close()
        leases = self.ownership.leases
        if leases is not None and hasattr(leases, "close"):
            await asyncio.to_thread(leases.close)
        await self.store.close()
        if self.started:
            self.started = False
            lock.release(self.settings.data_dir)

    def advertise(self, url: str) -> None:
        """Record the URL this runtime serves on in the data dir's lock file."""
        lock.advertise(self.settings.data_dir, url)


def _warm(apis: set[str]) -> None:
    from partwire.providers import configured
    from partwire.tools.registry import tool_specs

    if apis:
        configured.warm_up(apis)
    tool_specs()  # each tool's schema is made once, and kept
    # the agent loop's step (the start leaves it out: about 3 ms of import)
    importlib.import_module("partwire.session.processor")


async def _quietly(work: Awaitable[object]) -> None:
    """Warm-up work whose failure the first prompt meets again, and reports."""
    with contextlib.suppress(Exception):
        await work
