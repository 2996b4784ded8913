"""The built-in agents: build (everything), plan (read-only; edits and bash ask), general."""

from __future__ import annotations

from partwire.errors import BadRequestError
from partwire.schema.permission import Agent
from partwire.schema.session import PermissionRule


def _rules(*triples: tuple[str, str, str]) -> list[PermissionRule]:
    return [PermissionRule(permission=p, pattern=pat, action=a) for p, pat, a in triples]


# Later rules win. Leaving the project and repeating a call three times always ask.
_BASE = (("*", "*", "allow"), ("external_directory", "*", "ask"), ("doom_loop", "*", "ask"))

BUILD = Agent(
    name="build",
    description="The default agent: reads, edits and runs commands in the project.",
    mode="primary",
    native=True,
    permission=_rules(*_BASE),
)
PLAN = Agent(
    name="plan",
    description="Plans without changing anything: edits and bash ask first.",
    mode="primary",
    native=True,
    permission=_rules(*_BASE, ("edit", "*", "ask"), ("bash", "*", "ask")),
)
GENERAL = Agent(
    name="general",
    description="General-purpose sub-agent for multi-step research and tasks (used by task).",
    mode="subagent",
    native=True,
    permission=_rules(*_BASE, ("todowrite", "*", "deny"), ("todoread", "*", "deny")),
)

AGENTS: dict[str, Agent] = {agent.name: agent for agent in (BUILD, PLAN, GENERAL)}
DEFAULT_AGENT = BUILD.name
DEFAULT_SUBAGENT = GENERAL.name


def get_agent(name: str) -> Agent:
    agent = AGENTS.get(name)
    if agent is None:
        raise BadRequestError(
            f"Unknown agent {name!r}; available: {', '.join(AGENTS)}", field="agent"
        )
    return agent


def list_agents() -> list[Agent]:
    return list(AGENTS.values())
