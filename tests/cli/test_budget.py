"""`partwire run` at a budget ask: never allowed by --yes; without a terminal, stopped."""

from __future__ import annotations

import json

from partwire.config import Settings
from tests.cli.test_cli import _run
from tests.cli.test_continuity import _session_id


async def test_yes_never_allows_more_spend_and_no_terminal_stops_the_run(
    settings: Settings,
) -> None:
    (settings.project_dir / "partwire.json").write_text(json.dumps({"budget": {"tokens": 1}}))
    code, _, err = await _run(settings, "run", "--yes", "bash echo spent")
    assert code == 0, err
    assert "? permission the session's budget:" in err
    assert "tokens spent, and the next step would pass it" in err
    assert "rejected: no terminal to ask at (raise the budget to go on)" in err
    assert "allowed once" not in err
    _, exported, _ = await _run(settings, "export", _session_id(err))
    messages = json.loads(exported)["messages"]
    assert [m["info"]["role"] for m in messages] == ["user", "assistant"]  # stopped after one
    assert json.loads(exported)["info"]["tokens"]["output"] > 0


async def test_a_bad_budget_in_partwire_json_is_one_line(settings: Settings) -> None:
    (settings.project_dir / "partwire.json").write_text(json.dumps({"budget": {"cost": -2}}))
    code, out, err = await _run(settings, "run", "hello")
    assert code == 1 and out == ""
    assert "budget.cost in partwire.json: a number greater than 0" in err
    assert "Traceback" not in err
