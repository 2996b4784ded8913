"""`partwire replay` and `partwire eval`: a table, JSON and markdown, and their mistakes."""

from __future__ import annotations

import json

from partwire.client.http import PartwireClient
from partwire.config import Settings
from partwire.server.runner import serve_in_background
from tests.cli.test_cli import _run
from tests.cli.test_continuity import _session_id
from tests.cli.test_transfer import _made_session


async def test_replay_with_recorded_tools_then_the_comparison(settings: Settings) -> None:
    session_id = await _made_session(settings)  # the demo model: bash echo moved
    code, out, err = await _run(settings, "replay", session_id, "-m", "demo/demo")
    assert code == 0, err
    assert f"replaying 1 prompts of {session_id} with demo/demo" in err
    replay_id = _session_id(err.split("with demo/demo", 1)[1])
    assert replay_id != session_id
    assert "1 prompts · mean similarity 1.00 · 0 diverging calls" in out
    code, out, err = await _run(settings, "eval", session_id, replay_id, "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    assert report["a"] == session_id and report["b"] == replay_id
    turn = report["turns"][0]
    assert turn["prompt"] == "bash echo moved" and turn["diverging"] == []
    assert (
        turn["a"]["calls"]
        == turn["b"]["calls"]
        == ['bash {"command": "echo moved", "description": "Run echo moved"}']
    )
    code, out, err = await _run(settings, "eval", session_id, replay_id, "--format", "markdown")
    assert code == 0 and out.startswith(f"# {session_id} (A) against {replay_id} (B)")


async def test_eval_over_a_tag_replays_each_tagged_session(settings: Settings) -> None:
    tagged = await _made_session(settings)
    await _made_session(settings)  # not tagged: left alone
    code, _, err = await _run(settings, "run", "-s", tagged, "--title", "Moving", "hello")
    assert code == 0, err
    async with serve_in_background(settings) as url, PartwireClient(url) as client:
        await client.update_session(tagged, metadata={"tags": ["nightly"]})
    code, out, err = await _run(
        settings, "eval", "--tag", "nightly", "-m", "demo/demo", "--format", "json"
    )
    assert code == 0, err
    reports = json.loads(out)
    assert [r["a"] for r in reports] == [tagged]
    assert [t["prompt"] for t in reports[0]["turns"]] == ["bash echo moved", "hello"]


async def test_replay_and_eval_mistakes_are_one_line(settings: Settings) -> None:
    session_id = await _made_session(settings)
    cases = [
        (["eval", session_id], "eval compares two sessions"),
        (["eval", "--tag", "x"], "--tag replays a set with a model"),
        (["eval", "--tag", "none", "-m", "demo/demo"], "no session is tagged 'none'"),
        (["replay", session_id, "-m", "nope/x"], "nope"),
        (["replay", "ses_nope", "-m", "demo/demo"], "ses_nope"),
    ]
    for args, expected in cases:
        code, out, err = await _run(settings, *args)
        assert code == 1 and expected in err and "Traceback" not in err, (args, err)
        assert out == ""
