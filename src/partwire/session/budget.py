"""Budgets that pause and ask: before each step, the session's spend is checked.

A session's budget is its own (``metadata.budget``, set by ``POST /session`` or
``PATCH /session/{id}`` ``budget``) or else its project's (``budget`` in partwire.json).
Spend is the session's stored totals (``tokens`` and ``cost``, which the store adds to
as each answer completes; every kind of token counts), so servers sharing a database
check the same figures. A step would pass the budget when what was spent plus what the
last step spent reaches a limit; then, before the step starts, the run asks the
``budget`` permission: ``once`` allows a further amount (the limit grows by the budget
again), ``always`` lifts the session's limit, ``reject`` ends the run there. A step is
never stopped half way and nothing streamed is lost: the check runs between steps.
"""

from __future__ import annotations

from typing import Any

from partwire.errors import RejectedError
from partwire.permission import Permissions
from partwire.schema.event import SessionInfo, SessionUpdated
from partwire.schema.message import AssistantMessage, MessageWithParts
from partwire.schema.session import Budget, Session
from partwire.storage.base import Store

BUDGET_PERMISSION = "budget"


def budget_of(session: Session, project: Budget | None) -> Budget | None:
    """The budget the session runs under: its own, else its project's (None: no limit)."""
    own = (session.metadata or {}).get("budget")
    return Budget.model_validate(own) if own is not None else project


def limits(budget: Budget) -> tuple[int | None, float | None]:
    """The token and cost limits now: the amounts times one plus the further amounts
    the user allowed."""
    times = 1 + budget.granted
    return (
        budget.tokens * times if budget.tokens is not None else None,
        budget.cost * times if budget.cost is not None else None,
    )


def _last_step(history: list[MessageWithParts]) -> tuple[int, float]:
    for entry in reversed(history):
        if isinstance(entry.info, AssistantMessage) and entry.info.time.completed is not None:
            return entry.info.tokens.counted, entry.info.cost
    return 0, 0.0


def overrun(
    budget: Budget, session: Session, history: list[MessageWithParts]
) -> dict[str, Any] | None:
    """What the next step would pass (spent, the last step's size, the limit), or None."""
    tokens_limit, cost_limit = limits(budget)
    step_tokens, step_cost = _last_step(history)
    spent_tokens = session.tokens.counted if session.tokens else 0
    spent_cost = session.cost or 0.0
    if tokens_limit is not None and spent_tokens + step_tokens >= tokens_limit:
        return {"kind": "tokens", "spent": spent_tokens, "step": step_tokens, "limit": tokens_limit}
    if cost_limit is not None and spent_cost + step_cost >= cost_limit:
        return {"kind": "cost", "spent": spent_cost, "step": step_cost, "limit": cost_limit}
    return None


def describe(passed: dict[str, Any]) -> str:
    """The ask's one line: "$0.91 of $1.00 spent" or "91,000 of 100,000 tokens spent"."""
    if passed["kind"] == "cost":
        return f"${passed['spent']:.2f} of ${passed['limit']:.2f} spent"
    return f"{passed['spent']:,} of {passed['limit']:,} tokens spent"


class Budgets:
    def __init__(self, store: Store, permissions: Permissions) -> None:
        self.store = store
        self.permissions = permissions

    async def allow_step(
        self, session_id: str, history: list[MessageWithParts], project: dict[str, float] | None
    ) -> bool:
        """True when the next step may run: within budget, or the user allowed more.
        Asks (and waits) when the step would pass the budget; False when refused.
        ``project`` is the project's budget (Settings.budget)."""
        session = await self.store.get_session(session_id)
        budget = budget_of(session, Budget.model_validate(project) if project else None)
        passed = overrun(budget, session, history) if budget is not None else None
        if budget is None or passed is None:
            return True
        try:
            reply = await self.permissions.ask(
                session_id=session_id,
                permission=BUDGET_PERMISSION,
                patterns=[describe(passed)],
                agent_rules=[],
                always=[],
                metadata={"budget": budget.wire(), **passed},
                ruled=False,
            )
        except RejectedError:
            return False
        granted = (
            Budget()
            if reply == "always"
            else budget.model_copy(update={"granted": budget.granted + 1})
        )
        await self._keep(session_id, granted)
        return True

    async def _keep(self, session_id: str, budget: Budget) -> None:
        session = await self.store.get_session(session_id)
        metadata = {**(session.metadata or {}), "budget": budget.wire()}
        updated = session.model_copy(update={"metadata": metadata})
        await self.store.put_session(
            updated,
            [SessionUpdated(SessionInfo(session_id=session_id, info=updated))],
            sets_budget=True,
        )
