"""The session loop: store the prompt, run steps until the model is done, queue the rest.

``prompt()`` stores the user message. If the session is idle it starts a run;
if a run is going, the new message is picked up by that run's next decision and
the caller waits with the others. Every caller resolves with the run's final
assistant message. Each decision: answer a pending compaction with a summary,
stop when the newest user message is answered, otherwise run one model call;
when that call overflows the model's context, ask for a compaction. Abort
cancels the current step; the processor closes its parts and the run ends,
releasing every waiter.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from partwire import ids
from partwire.clock import now_ms
from partwire.config import Settings
from partwire.errors import BadRequestError, NotFoundError, SessionBusyError
from partwire.providers.base import LanguageModel
from partwire.providers.registry import parse_model_ref, refuse_variant, resolve_model
from partwire.providers.stream import SUMMARY_PROMPT, ModelRequest, UserTurn
from partwire.schema.event import (
    SessionCompacted,
    SessionDiff,
    SessionDiffProps,
    SessionError,
    SessionErrorProps,
    SessionInfo,
    SessionRef,
    SessionUpdated,
)
from partwire.schema.input import PromptInput
from partwire.schema.message import (
    AssistantMessage,
    AssistantWithParts,
    MessageWithParts,
    UserMessage,
    new_assistant_message,
)
from partwire.schema.part import ModelRef, ToolPart
from partwire.schema.session import Session, SessionStatus, SnapshotFileDiff
from partwire.session.admission import StartGate
from partwire.session.agents import DEFAULT_AGENT, get_agent
from partwire.session.budget import Budgets
from partwire.session.compaction import overflows, pending_compaction, prune
from partwire.session.delegate import Delegation, pending_subtask
from partwire.session.history import to_turns
from partwire.session.ownership import Ownership
from partwire.session.prompt import (
    UNTITLED_PREFIX,
    prompt_words,
    refuse_taken_ids,
    store_compaction_request,
    store_synthetic_text,
    store_user_message,
)
from partwire.session.replay import ToolLookup, recorded_lookup, recording_for
from partwire.session.revert import Reverts, cleanup_revert
from partwire.session.snapshot import Snapshots
from partwire.session.status import StatusTracker
from partwire.session.titles import Titler
from partwire.session.toolhost import ToolHost
from partwire.session.writer import save_message

if TYPE_CHECKING:
    from partwire.session.processor import Processor
from partwire.skills import system_text
from partwire.storage.base import Store
from partwire.tools.base import MetadataUpdate, ToolContext
from partwire.tools.registry import all_tools, enabled_lookup, get_tool, tool_specs

log = logging.getLogger(__name__)

MAX_STEPS = 50
SYSTEM_PROMPT = "You are a coding agent working in the user's project through tools."
CONTINUE_AFTER_COMPACTION = (
    "Continue if you have next steps, or stop and ask for clarification if you are unsure "
    "how to proceed."
)


@dataclass
class _Run:
    task: asyncio.Task[None] | None = None
    step: asyncio.Task[AssistantMessage] | None = None
    waiters: list[asyncio.Future[AssistantWithParts]] = field(default_factory=list)
    aborted: bool = False
    blocked: bool = False  # the user rejected a permission or question: stop after this step
    resume_after_compaction: bool = False
    compacted_for_overflow: bool = False
    wakeups: int = 0  # prompts attached to this run; a change after a decision means decide again
    on_abort: Callable[[], Awaitable[None]] | None = None  # an external loop's recording
    released: asyncio.Event = field(default_factory=asyncio.Event)  # a recording's end
    processor: Processor | None = None  # the step's, while one runs
    starting: asyncio.Future[None] | None = None  # its wait at the start gate, while it waits


def leave_running(future: asyncio.Future[Any]) -> None:
    """For a run whose outcome nobody awaits (it is logged, and streamed to clients): take
    its exception, so asyncio does not report it as never retrieved."""
    if not future.cancelled():
        future.exception()


class SessionLoop:
    def __init__(
        self,
        store: Store,
        status: StatusTracker,
        settings: Settings,
        host: ToolHost,
        reverts: Reverts,
        ownership: Ownership | None = None,
    ) -> None:
        self.store = store
        self.ownership = ownership or Ownership()
        self.status = status
        self.settings = settings
        self.host = host
        self.reverts = reverts
        self._runs: dict[str, _Run] = {}
        self._held: dict[str, set[asyncio.Task[None]]] = {}  # enqueue_after_turn's prompts
        self.starts = StartGate()  # a busy loop's new answers (and titles) wait for it
        self.titler = Titler(store, self.starts)
        self.budgets = Budgets(store, host.permissions)
        self._no_reply: set[str] = set()  # user messages stored with noReply: never answered

    def is_busy(self, session_id: str) -> bool:
        return session_id in self._runs

    def enqueue_after_turn(self, session_id: str, body: PromptInput) -> None:
        """Hold a prompt until the session's run (if any) has ended, then enqueue it
        (opencode v2's ``delivery: queue``); ``wait_idle`` waits for it too."""
        held = asyncio.get_running_loop().create_task(self._after_turn(session_id, body))
        waiting = self._held.setdefault(session_id, set())
        waiting.add(held)
        held.add_done_callback(waiting.discard)
        held.add_done_callback(leave_running)

    async def _after_turn(self, session_id: str, body: PromptInput) -> None:
        await self._run_ended(session_id)
        (await self.enqueue(session_id, body)).add_done_callback(leave_running)

    async def _run_ended(self, session_id: str) -> None:
        """Return once no run (ours or an external loop's recording) holds the session."""
        while (run := self._runs.get(session_id)) is not None:
            if run.task is not None:
                await asyncio.wait({run.task})
            else:
                await asyncio.sleep(0.05)  # a recording: it ends when its loop says so

    def running(self) -> list[str]:
        """The sessions a run (or an external loop's recording) holds now."""
        return list(self._runs)

    async def prompt(self, session_id: str, body: PromptInput) -> AssistantWithParts:
        """Store the prompt and wait for the run that answers it."""
        future = await self.enqueue(session_id, body)
        return await future

    async def enqueue(
        self, session_id: str, body: PromptInput, *, waiting: bool = True
    ) -> asyncio.Future[AssistantWithParts]:
        """Store the prompt and start (or join) the run that answers it: a future for the
        run's final message; with ``waiting`` False nobody reads it (prompt_async), and a
        run only they started never reads its answer back whole."""
        assert not body.no_reply, "a noReply prompt goes through add_without_reply"
        # the lease first: the other servers see the prompt once it is stored, and the
        # server it was sent to should be the one that answers it
        ours = self.is_busy(session_id) or await self.ownership.acquire(session_id)
        try:
            await self._store_prompt(session_id, body)
        except BaseException:
            if ours:
                await self.ownership.release(session_id, lambda: session_id in self._runs)
            raise
        if not ours:
            return self._answered_elsewhere(session_id)  # another server runs the session
        if self.recording(session_id):  # stored; answered once the external loop is done
            return asyncio.ensure_future(self._after_recording(session_id))
        return self._wake(session_id, waiting=waiting)

    def recording(self, session_id: str) -> bool:
        """Whether an external loop's recording holds the session now."""
        run = self._runs.get(session_id)
        return run is not None and run.on_abort is not None

    async def _after_recording(self, session_id: str) -> AssistantWithParts:
        """The answer to a prompt stored while an external loop recorded: the run that
        starts once the recording is done (a prompt to a busy session queues)."""
        while (run := self._runs.get(session_id)) is not None and run.on_abort is not None:
            await run.released.wait()
        return await self._wake(session_id)  # a run already going takes it up

    def _answered_elsewhere(self, session_id: str) -> asyncio.Future[AssistantWithParts]:
        """The answer of the server that runs the session: its last assistant message
        once the session goes idle (every server sees every server's events)."""
        assert self.ownership.bus is not None
        subscription = self.ownership.bus.subscribe("session.idle", session_id=session_id)

        async def answer() -> AssistantWithParts:
            try:
                while (event := await subscription.get()) is not None:
                    if event.type == "session.idle" and event.session_id == session_id:
                        break
            finally:
                subscription.close()
            last = _last_assistant(await self.store.list_messages(session_id))
            if last is None:
                raise NotFoundError("Message", f"the answer in session {session_id}")
            found = await self.store.get_message(session_id, last.id)
            return AssistantWithParts.model_validate(found.model_dump())

        return asyncio.ensure_future(answer())

    async def answer_waiting(self, session_id: str) -> None:
        """A prompt was stored for the session (here or on another server): the run
        going here takes it up, or, when no server runs the session, this one answers."""
        run = self._runs.get(session_id)
        if run is not None:
            run.wakeups += 1  # decide again: a run that just answered finds nothing new
            return
        if await self.ownership.acquire(session_id):
            await self._answer_or_release(session_id)

    async def take_over(self, session_id: str) -> None:
        """The server that ran the session is gone (this one holds its lease now): finish
        what it left, then answer any prompt still waiting."""
        await self.store.recover_session(session_id)
        await self._answer_or_release(session_id)

    async def _answer_or_release(self, session_id: str) -> None:
        history = await self.store.list_messages(session_id)
        user = _last_user(history, await self._not_to_answer(session_id))
        if session_id not in self._runs and user is not None and not _answered(history, user):
            self._wake(session_id).add_done_callback(leave_running)
        else:
            await self.ownership.release(session_id, lambda: session_id in self._runs)

    async def add_without_reply(self, session_id: str, body: PromptInput) -> MessageWithParts:
        """Store a prompt as context only (``noReply``): the model is not called for it.
        Other servers sharing the database learn so before the prompt is stored."""
        message_id = body.message_id or ids.message_id()
        self._no_reply.add(message_id)
        await self.ownership.mark_no_reply(session_id, message_id)
        user = await self._store_prompt(
            session_id, body.model_copy(update={"message_id": message_id})
        )
        return await self.store.get_message(session_id, user.id)

    async def _not_to_answer(self, session_id: str) -> set[str]:
        return self._no_reply | await self.ownership.no_reply(session_id)

    async def _store_prompt(self, session_id: str, body: PromptInput) -> UserMessage:
        """Check everything a prompt names, then store it (a bad prompt stores nothing)."""
        session = await self.store.get_session(session_id)
        model = self._model_ref(body, session)
        language_model = resolve_model(model.provider_id, model.model_id, self.settings)
        refuse_variant(model.provider_id, model.model_id, body.variant, "variant")
        agent = body.agent or session.agent or DEFAULT_AGENT
        get_agent(agent)
        _check_tool_switches(body.tools)
        await refuse_taken_ids(self.store, body.message_id, [p.id for p in body.parts])
        if not self.is_busy(session_id):
            session = await cleanup_revert(self.store, session)
        user, touched = await store_user_message(
            self.store, session, body, model, agent, self.settings.project_dir
        )
        if (
            session.title.startswith(UNTITLED_PREFIX)
            and model.provider_id in self.settings.providers
        ):  # titled by the prompt's words for now
            self.titler.start(session_id, language_model, prompt_words(body), touched.title)
        return user

    async def summarize(
        self, session_id: str, model: ModelRef, *, auto: bool = False
    ) -> AssistantWithParts:
        """Compact the session now (POST /session/{id}/summarize); it must be idle.

        ``auto`` (as opencode) marks the compaction automatic: after the summary the
        loop adds a "continue" prompt and goes on working."""
        session = await self.store.get_session(session_id)
        await self.ensure_idle(session_id)
        resolve_model(model.provider_id, model.model_id, self.settings)
        history = await self.store.list_messages(session_id)
        last = _last_user(history)
        if last is None:
            raise BadRequestError(f"Session {session_id} has no messages to summarize yet")
        user = last.model_copy(update={"model": model})
        await store_compaction_request(self.store, session, user, auto=auto, overflow=False)
        future = self._wake(session_id)
        self._runs[session_id].resume_after_compaction = auto
        return await future

    def _wake(self, session_id: str, *, waiting: bool = True) -> asyncio.Future[AssistantWithParts]:
        """A future for the run's final message, starting a run if none is going (cancelled
        at once when nobody is ``waiting`` for it)."""
        future: asyncio.Future[AssistantWithParts] = asyncio.get_running_loop().create_future()
        run = self._runs.get(session_id)
        if run is None:
            run = _Run()
            self._runs[session_id] = run
            run.task = asyncio.create_task(self._run(session_id, run), name=f"run {session_id}")
        if waiting:
            run.waiters.append(future)
        else:
            future.cancel()
        run.wakeups += 1
        return future

    def _model_ref(self, body: PromptInput, session: Session) -> ModelRef:
        """The prompt's model, else the session's (set at creation), else the default."""
        if body.model is not None:
            return body.model
        if session.model is not None:
            return ModelRef(provider_id=session.model.provider_id, model_id=session.model.id)
        provider_id, model_id = parse_model_ref(self.settings.default_model)
        return ModelRef(provider_id=provider_id, model_id=model_id)

    def claim(self, session_id: str, on_abort: Callable[[], Awaitable[None]]) -> object:
        """Mark the session busy for an external loop's recording (SessionBusyError if it
        is busy already); ``abort`` then calls ``on_abort``. Returns the claim to release."""
        self.ensure_idle_now(session_id)
        run = self._runs[session_id] = _Run(on_abort=on_abort)
        return run

    def release(self, session_id: str, claim: object) -> bool:
        """End ``claim``; False when it had ended already."""
        if self._runs.get(session_id) is not claim:
            return False
        del self._runs[session_id]
        if isinstance(claim, _Run):
            claim.released.set()
        return True

    async def abort(self, session_id: str, *, shutdown: bool = False) -> bool:
        """Stop the session's run; ``shutdown``: the server is stopping (its message and
        tools then say so, not that a user stopped them)."""
        run = self._runs.get(session_id)
        if run is None:  # another server may run it
            forward = self.ownership.forward
            return forward is not None and await forward({"op": "abort", "session": session_id})
        run.aborted = True
        if shutdown and run.processor is not None:
            run.processor.stop_reason = "shutdown"
        if run.on_abort is not None:  # end the external message first, then its asks
            await run.on_abort()
        if run.step is not None:
            run.step.cancel()
        if run.starting is not None:
            run.starting.cancel()
        # Tell clients that the asks they are showing are gone.
        await self.host.permissions.cancel_session(session_id)
        await self.host.questions.cancel_session(session_id)
        if run.task is not None:
            await asyncio.wait({run.task})
        return True

    async def wait_idle(self, session_id: str) -> None:
        """Return once no run (ours or an external loop's recording) holds the session and
        no prompt waits for the run to end."""
        while True:
            await self._run_ended(session_id)
            held = self._held.get(session_id)
            if not held:
                self._held.pop(session_id, None)
                return
            await asyncio.wait(set(held))

    async def ensure_idle(self, session_id: str) -> None:
        self.ensure_idle_now(session_id)

    def ensure_idle_now(self, session_id: str) -> None:
        if self.is_busy(session_id):
            raise SessionBusyError(session_id)

    async def shutdown(self) -> None:
        await self.titler.shutdown()
        for session_id in list(self._runs):
            await self.abort(session_id, shutdown=True)

    # ---- the run -------------------------------------------------------------------------

    async def _run(self, session_id: str, run: _Run) -> None:
        last: AssistantMessage | None = None
        failure: BaseException | None = None
        try:
            await self.status.busy(session_id)
            await self._start_gate(run)
            while True:
                seen = run.wakeups
                last = await self._steps(session_id, run) or last
                if run.aborted or run.wakeups == seen:
                    break
                run.blocked = False  # a prompt came during the last decision: decide again
        except Exception as exc:
            log.exception("session %s run failed", session_id)
            failure = exc
        finally:
            del self._runs[session_id]
            try:
                await self.status.idle(session_id)
            except Exception as exc:  # e.g. a full disk: the waiters must still be released
                log.exception("session %s: could not publish idle", session_id)
                failure = failure or exc
            try:  # once idle is logged: the next server to run it starts after that
                await self.ownership.release(session_id, lambda: session_id in self._runs)
            except Exception:  # the lease runs out by itself: another server takes it then
                log.exception("session %s: could not give its lease back", session_id)
            await self._release_waiters(session_id, run, last, failure)

    async def _start_gate(self, run: _Run) -> None:
        """Wait at the start gate; an abort meanwhile ends the wait (the run then stops)."""
        run.starting = self.starts.ask()
        if run.starting is None:
            return
        try:
            await run.starting
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if not run.aborted or (task is not None and task.cancelling()):
                raise  # the run itself was cancelled (a shutdown), not only its wait
        finally:
            run.starting = None

    async def _release_waiters(
        self,
        session_id: str,
        run: _Run,
        last: AssistantMessage | None,
        failure: BaseException | None,
    ) -> None:
        """Resolve the run's waiters with its last answer, read whole only when someone
        waits for it (a prompt_async has nobody)."""
        waiting = [waiter for waiter in run.waiters if not waiter.done()]
        final: AssistantWithParts | None = None
        if waiting and last is not None:
            try:
                stored = await self.store.get_message(session_id, last.id)
                final = AssistantWithParts.model_validate(stored.model_dump())
            except Exception as exc:
                failure = exc
        for waiter in waiting:
            if waiter.done():
                continue
            if final is not None:
                waiter.set_result(final)
            else:
                waiter.set_exception(failure or NotFoundError("Session", session_id))

    async def _steps(self, session_id: str, run: _Run) -> AssistantMessage | None:
        last: AssistantMessage | None = None
        for _ in range(MAX_STEPS):
            history = await self.store.list_messages(session_id)
            user = _last_user(history, await self._not_to_answer(session_id))
            if user is None or run.aborted or run.blocked:
                break
            request = pending_compaction(history)
            if request is None and _answered(history, user):
                break
            if not await self.budgets.allow_step(session_id, history, self.settings.budget):
                run.blocked = True  # the user stopped it at its budget (a summary is a step)
                break
            if request is not None:
                last = await self._compact(session_id, run, request, history)
                continue
            last = await self._step(session_id, run, user, history)
            if _overflowed(last) and not run.compacted_for_overflow and not run.aborted:
                # the provider refused the request as too long: summarize, then go on
                run.compacted_for_overflow = True
                session = await self.store.get_session(session_id)
                await store_compaction_request(self.store, session, user, auto=True, overflow=True)
                run.resume_after_compaction = True
            elif last.error is not None:
                await self.store.publish(
                    [SessionError(SessionErrorProps(session_id=session_id, error=last.error))]
                )
            elif overflows(last, self._model(user)) and not run.aborted:
                session = await self.store.get_session(session_id)
                await store_compaction_request(self.store, session, user, auto=True, overflow=True)
                run.resume_after_compaction = last.finish == "tool-calls"
        if last is None:
            last = _last_assistant(await self.store.list_messages(session_id))
        return last

    def _model(self, user: UserMessage) -> LanguageModel:
        return resolve_model(user.model.provider_id, user.model.model_id, self.settings)

    def _assistant(
        self,
        session_id: str,
        user: UserMessage,
        model: LanguageModel,
        *,
        summary: bool | None = None,
        mode: str | None = None,
    ) -> AssistantMessage:
        return new_assistant_message(
            session_id=session_id,
            parent_id=user.id,
            provider_id=model.provider_id,
            model_id=model.model_id,
            agent=user.agent,
            root=str(self.settings.project_dir),
            mode=mode,
            summary=summary,
        )

    async def _step(
        self, session_id: str, run: _Run, user: UserMessage, history: list[MessageWithParts]
    ) -> AssistantMessage:
        model: LanguageModel = self._model(user)
        subtask = pending_subtask(user, history)
        if subtask is not None:  # the user delegated: the task call comes before the model
            model = Delegation(subtask, model)
        message = self._assistant(session_id, user, model)
        disabled = _disabled_tools(user)
        skills = "" if "skill" in disabled else system_text(await self.host.skills())
        system = "\n\n".join(part for part in (SYSTEM_PROMPT, skills, user.system) if part)
        request = ModelRequest(system, to_turns(history), tool_specs(disabled))
        return await self._call(
            session_id, run, user, model, message, request, history, self.reverts.snapshots
        )

    async def _compact(
        self, session_id: str, run: _Run, request: MessageWithParts, history: list[MessageWithParts]
    ) -> AssistantMessage:
        """Answer a compaction request with a summary of everything before it."""
        assert isinstance(request.info, UserMessage)
        user = request.info
        before = history[: history.index(request)]
        await prune(self.store, before)
        await self._set_compacting(session_id, now_ms())
        model = self._model(user)
        message = self._assistant(session_id, user, model, summary=True, mode="compaction")
        turns = (*to_turns(await self._reload(session_id, before)), UserTurn(SUMMARY_PROMPT))
        summary = await self._call(
            session_id, run, user, model, message, ModelRequest(SYSTEM_PROMPT, turns), history
        )
        await self._set_compacting(session_id, None)
        if summary.error is None:
            await self.store.publish([SessionCompacted(SessionRef(session_id=session_id))])
            if run.resume_after_compaction:
                await store_synthetic_text(self.store, user, CONTINUE_AFTER_COMPACTION)
        run.resume_after_compaction = False
        return summary

    async def _publish_diff(self, session_id: str) -> None:
        diffs = await self.reverts.summarize_changes(session_id)
        props = SessionDiffProps(
            session_id=session_id, diff=[SnapshotFileDiff.model_validate(d) for d in diffs]
        )
        await self.store.publish([SessionDiff(props)])

    async def _reload(
        self, session_id: str, before: list[MessageWithParts]
    ) -> list[MessageWithParts]:
        """``before`` as stored now (pruning may have changed it)."""
        wanted = {entry.info.id for entry in before}
        return [e for e in await self.store.list_messages(session_id) if e.info.id in wanted]

    async def _set_compacting(self, session_id: str, since: int | None) -> None:
        session = await self.store.get_session(session_id)
        stamp = session.time.model_copy(update={"compacting": since})
        updated = session.model_copy(update={"time": stamp})
        await self.store.put_session(
            updated, [SessionUpdated(SessionInfo(session_id=session_id, info=updated))]
        )

    async def _tools(self, session_id: str, user: UserMessage) -> ToolLookup:
        """The tools a step may call; in a replay with recorded tools, each answers from
        the recording the calls it holds."""
        lookup = enabled_lookup(_disabled_tools(user))
        recording = await recording_for(self.store, await self.store.get_session(session_id))
        return lookup if recording is None else recorded_lookup(lookup, recording)

    async def _call(
        self,
        session_id: str,
        run: _Run,
        user: UserMessage,
        model: LanguageModel,
        message: AssistantMessage,
        request: ModelRequest,
        history: list[MessageWithParts],
        snapshots: Snapshots | None = None,
    ) -> AssistantMessage:
        """One model call for ``message``, abortable; returns the finished message."""
        agent = get_agent(user.agent)

        def make_context(call_id: str, update: MetadataUpdate, abort: asyncio.Event) -> ToolContext:
            return self.host.context(
                session_id=session_id,
                message_id=message.id,
                call_id=call_id,
                agent=agent,
                model=user.model,
                history=history,
                abort=abort,
                update_metadata=update,
            )

        async def set_status(status: SessionStatus) -> None:
            await self.status.set(session_id, status)

        from partwire.session.processor import Processor  # with the first prompt: a lean start

        processor = Processor(
            self.store,
            message,
            model,
            await self._tools(session_id, user),
            make_context,
            _recent_calls(history),
            set_status,
            snapshots,
        )
        await save_message(self.store, message)
        run.processor = processor
        step = run.step = asyncio.create_task(processor.run(request))
        if run.aborted:  # abort() came while this step was being set up
            step.cancel()
        try:
            finished = await step
            run.blocked = run.blocked or processor.blocked
            if processor.patched:
                await self._publish_diff(session_id)
            return finished
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if not step.cancelled() or (current is not None and current.cancelling()):
                raise
            # aborted before the processor began: it never ran, so finish the message here
            return await processor.finish_aborted()
        finally:
            run.step = None


def _last_user(
    history: list[MessageWithParts], skip: set[str] | frozenset[str] = frozenset()
) -> UserMessage | None:
    for entry in reversed(history):
        if isinstance(entry.info, UserMessage) and entry.info.id not in skip:
            return entry.info
    return None


def _disabled_tools(user: UserMessage) -> frozenset[str]:
    return frozenset(name for name, enabled in (user.tools or {}).items() if not enabled)


def _check_tool_switches(switches: dict[str, bool] | None) -> None:
    for name in switches or {}:
        if get_tool(name) is None:
            known = ", ".join(tool.id for tool in all_tools())
            raise BadRequestError(f"tools.{name}: no tool {name!r}; tools: {known}", field="tools")


def _last_assistant(history: list[MessageWithParts]) -> AssistantMessage | None:
    for entry in reversed(history):
        if isinstance(entry.info, AssistantMessage):
            return entry.info
    return None


def _recent_calls(history: list[MessageWithParts]) -> list[tuple[str, str]]:
    """(tool, input) of the finished tool calls since the last user message, in order."""
    calls: list[tuple[str, str]] = []
    for entry in history:
        if isinstance(entry.info, UserMessage):
            calls.clear()
            continue
        for part in entry.parts:
            if isinstance(part, ToolPart) and part.state.status in ("completed", "error"):
                calls.append((part.tool, json.dumps(part.state.input, sort_keys=True)))
    return calls


def _overflowed(message: AssistantMessage) -> bool:
    return message.error is not None and message.error.name == "ContextOverflowError"


def _answered(history: list[MessageWithParts], user: UserMessage) -> bool:
    """True when the newest assistant message answering ``user`` (by parentID) is done."""
    answers = [
        e.info
        for e in history
        if isinstance(e.info, AssistantMessage) and e.info.parent_id == user.id
    ]
    if not answers:
        return False
    last = answers[-1]
    return last.error is not None or last.finish not in (None, "tool-calls")
