"""`partwire users`, `partwire token`, `partwire access` and `partwire share`: a team's
users and tokens from the command line, and PARTWIRE_TOKEN signing the CLI in."""

from __future__ import annotations

import os
import re
from pathlib import Path

import httpx

from partwire.config import Settings
from tests.cli.test_cli import _run
from tests.served import partwire_serve


async def _token(settings: Settings, user: str, *extra: str) -> str:
    code, out, err = await _run(settings, "token", "create", "--user", user, *extra)
    assert code == 0, err
    return out.splitlines()[0].strip()


async def test_users_and_tokens_are_made_listed_and_revoked(settings: Settings) -> None:
    code, out, err = await _run(settings, "users", "add", "alice")
    assert code == 0 and "added user alice" in out, err
    code, out, err = await _run(settings, "users", "add", "alice")
    assert code != 0 and "exists already" in err and "Traceback" not in err
    code, out, err = await _run(settings, "users", "add", "no spaces")
    assert code != 0 and "user name" in err
    token = await _token(settings, "alice", "--scope", "read", "--expires", "30d")
    assert re.fullmatch(r"pwt_[A-Za-z0-9_-]{43}", token)
    code, out, err = await _run(settings, "token", "create", "--user", "nobody")
    assert code != 0 and "no user 'nobody'" in err
    code, out, err = await _run(settings, "token", "create", "--user", "alice", "--expires", "x")
    assert code != 0 and "--expires" in err
    code, out, err = await _run(settings, "token", "list")
    (row,) = out.splitlines()
    token_id = row.split()[0]
    assert row.split()[1:4] == ["alice", "read", "live"] and "until" in row
    assert token not in out  # only its hash is kept: it cannot be shown again
    stored = (settings.data_dir / "partwire.db").read_bytes()
    assert token.encode() not in stored
    code, out, err = await _run(settings, "token", "revoke", token_id)
    assert code == 0, err
    code, out, err = await _run(settings, "token", "list", "--user", "alice")
    assert out.split()[3] == "revoked"
    code, out, err = await _run(settings, "users", "list")
    assert out.split()[0] == "alice"
    code, out, err = await _run(settings, "users", "remove", "alice")
    assert code == 0
    code, out, err = await _run(settings, "token", "list")
    assert out.strip() == "no tokens"


async def test_the_cli_signs_in_with_partwire_token(settings: Settings, tmp_path: Path) -> None:
    state = settings.data_dir.parent
    assert settings.data_dir == state / "data"
    for user in ("alice", "bob"):
        assert (await _run(settings, "users", "add", user))[0] == 0
    alice, bob = await _token(settings, "alice"), await _token(settings, "bob")
    with partwire_serve(settings.project_dir, state) as url:
        code, out, err = await _run(settings, "sessions", "--attach", url)
        assert code != 0 and "needs credentials" in err
        os.environ["PARTWIRE_TOKEN"] = alice
        try:
            code, out, err = await _run(settings, "run", "--attach", url, "hello")
            assert code == 0, err
            code, out, err = await _run(settings, "sessions", "--attach", url)
            session_id = out.splitlines()[1].split()[0]
            code, out, err = await _run(
                settings, "access", session_id, "--attach", url, "--user", "bob", "--role", "read"
            )
            assert code == 0 and "alice  owner" in out and "bob  read" in out, err
            code, out, err = await _run(settings, "share", session_id, "--attach", url)
            link = out.strip()
            assert code == 0 and link.startswith(f"{url}/share/pwt_"), err
        finally:
            del os.environ["PARTWIRE_TOKEN"]
        async with httpx.AsyncClient(base_url=url) as guest:
            assert (await guest.get(link.removeprefix(url))).status_code == 303
            assert [s["id"] for s in (await guest.get("/session")).json()] == [session_id]
        bearer = {"authorization": f"Bearer {bob}"}
        async with httpx.AsyncClient(base_url=url, headers=bearer) as http:
            assert (await http.get(f"/session/{session_id}")).status_code == 200
            prompt = {"parts": [{"type": "text", "text": "mine now"}]}
            refused = await http.post(f"/session/{session_id}/message", json=prompt)
            assert refused.status_code == 403


def test_run_says_who_watches_and_who_answered() -> None:
    import io

    from rich.console import Console

    from partwire.cli.render import Renderer
    from partwire.schema.event import (
        AskAnswered,
        AskAnsweredProps,
        SessionPresence,
        SessionPresenceProps,
        Watcher,
    )

    err = io.StringIO()
    renderer = Renderer(Console(file=io.StringIO()), Console(file=err, width=200), "ses_a")
    watchers = [
        Watcher(user="alice", client="web", transport="hub", since=1),
        Watcher(user="bob", client="cli", transport="event", since=2),
    ]
    for listed in (watchers, watchers, watchers[1:]):
        props = SessionPresenceProps(session_id="ses_a", instance_id="ins_1", watchers=listed)
        renderer.handle(SessionPresence(props).with_id("evt_1"))
    answered = AskAnsweredProps(session_id="ses_a", request_id="per_1", by="alice", client="web")
    renderer.handle(AskAnswered(answered).with_id("evt_2"))
    assert err.getvalue().splitlines() == [
        "watching: alice (web), bob (cli)",
        "watching: bob (cli)",
        "alice (web) answered per_1",
    ]
