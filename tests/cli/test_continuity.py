"""Conversations continue across runs, standard input joins the prompt, a failed run
leaves nothing behind, and start-up mistakes are one line."""

from __future__ import annotations

import argparse
import asyncio
import re
import signal
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx

from partwire.config import Settings
from tests.cli.test_cli import _env, _run
from tests.served import partwire_serve


def _session_id(err: str) -> str:
    found = re.search(r"session (ses_\w+)", err)
    assert found, err
    return found.group(1)


async def _sessions(settings: Settings) -> list[list[str]]:
    code, out, err = await _run(settings, "sessions")
    assert code == 0, err
    return [line.split() for line in out.splitlines()[1:] if line.strip()]


async def test_continue_session_and_title(settings: Settings) -> None:
    code, out, err = await _run(settings, "run", "--title", "Counting", "long 2")
    assert code == 0 and "w0 w1" in out
    first = _session_id(err)
    code, out, err = await _run(settings, "run", "-c", "long 3")
    assert code == 0 and _session_id(err) == first and "w0 w1 w2" in out
    code, _, err = await _run(settings, "run", "-s", first, "--title", "Renamed", "long 1")
    assert code == 0 and _session_id(err) == first
    rows = await _sessions(settings)
    assert len(rows) == 1
    session_id, *_, count, title = rows[0]
    assert session_id == first and count == "6" and title == "Renamed"


async def test_standard_input_is_appended_to_the_prompt(settings: Settings) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "partwire", "run", "summarize",
        cwd=settings.project_dir, env=_env(settings),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(b"alpha beta gamma\n"), 60)
    assert process.returncode == 0, err.decode()
    assert "The user wrote 4 words" in err.decode()  # "summarize" + three piped words
    piped_only = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "partwire", "run",
        cwd=settings.project_dir, env=_env(settings),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(piped_only.communicate(b"long 2"), 60)
    assert piped_only.returncode == 0 and "w0 w1" in out.decode(), err.decode()


async def test_a_failed_run_leaves_no_session(settings: Settings) -> None:
    for args in (["--model", "nope/none", "hi"], ["--agent", "nobody", "hi"], ["   "]):
        code, _, err = await _run(settings, "run", *args)
        assert code == 1 and "error:" in err and "Traceback" not in err, (args, err)
    code, _, err = await _run(settings, "sessions")
    assert code == 0 and "no sessions yet" in err
    code, _, err = await _run(settings, "run", "-c", "hi")
    assert code == 1 and "drop --continue" in err


async def test_start_up_mistakes_are_one_line(settings: Settings) -> None:
    for args, words in (
        (["serve", "--port", "99999"], "is not a port"),
        (["serve", "--project", "/no/such/dir"], "no such directory"),
    ):
        code, _, err = await _run(settings, *args)
        assert code == 1 and words in err and "Traceback" not in err, err
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, _, err = await _run(settings, "serve", "--port", str(port))
    assert code == 1 and "already in use" in err and "--port" in err and "Traceback" not in err
    assert "make serve PORT=" in err  # what to type when make started it


async def test_the_banner_shows_the_bound_port(settings: Settings) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "partwire", "serve", "--port", "0",
        cwd=settings.project_dir, env=_env(settings),
        stdin=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert process.stderr is not None
        line = (await asyncio.wait_for(process.stderr.readline(), 30)).decode()
        port = int(line.rsplit(":", 1)[1])
        assert port != 0
        assert (await process.stderr.readline()).decode().startswith("data: ")
        default = (await asyncio.wait_for(process.stderr.readline(), 5)).decode()
        assert default.strip() == "default model: demo/demo"
        _, writer = await asyncio.open_connection("127.0.0.1", port)  # it listens there
        writer.close()
    finally:
        process.terminate()
        await process.wait()


async def test_no_command_shows_help_and_v_shows_the_version(settings: Settings) -> None:
    code, out, _ = await _run(settings)
    assert code == 0 and "usage: partwire" in out and "sessions" in out
    code, out, _ = await _run(settings, "-V")
    assert code == 0 and out.startswith("partwire ")


async def test_run_attach_works_in_the_project_it_is_run_from(
    settings: Settings, tmp_path: Path
) -> None:
    other = tmp_path / "other-project"
    other.mkdir()
    (other / "only-here.txt").write_text("x")
    with partwire_serve(settings.project_dir, tmp_path / "server-state") as url:
        code, out, err = await _run(
            settings, "run", "--attach", url, "--project", str(other), "list"
        )
        assert code == 0, err
        assert "only-here.txt" in out
        async with httpx.AsyncClient(base_url=url) as http:
            session = (await http.get(f"/session/{_session_id(err)}")).json()
        assert session["directory"] == str(other.resolve())
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "partwire", "run", "--attach", url, "list",
            cwd=other, env=_env(settings), stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out_b, err_b = await asyncio.wait_for(process.communicate(), 60)
        assert process.returncode == 0 and "only-here.txt" in out_b.decode(), err_b.decode()


async def _serve_once(settings: Settings, *flags: str) -> str:
    """Serve on a free port, ask for one known and one unknown session, stop: stderr."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "partwire", "serve", "--port", "0", *flags,
        cwd=settings.project_dir, env=_env(settings),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert process.stderr is not None
    banner = (await asyncio.wait_for(process.stderr.readline(), 30)).decode()
    url = re.search(r"http://127\.0\.0\.1:\d+", banner)
    assert url, banner
    async with httpx.AsyncClient(base_url=url.group(0)) as http:
        assert (await http.get("/session")).status_code == 200
        assert (await http.get("/session/ses_missing")).status_code == 404
    process.send_signal(signal.SIGINT)
    _, err = await asyncio.wait_for(process.communicate(), 30)
    return banner + err.decode()


async def test_the_server_logs_requests_to_its_file_or_to_stderr(settings: Settings) -> None:
    err = await _serve_once(settings)
    assert "partwire.http" not in err  # to the file by default
    written = (settings.data_dir / "log" / "partwire.log").read_text()
    assert re.search(r"INFO partwire\.http: GET /session 200 [\d.]+ms", written), written
    assert "GET /session/ses_missing 404" in written

    err = await _serve_once(settings, "--print-logs")
    assert re.search(r"INFO partwire\.http: GET /session/ses_missing 404 [\d.]+ms", err), err

    err = await _serve_once(settings, "--print-logs", "--log-level", "WARN")
    assert "partwire.http" not in err, "requests are INFO, below WARN"
    code, _, err = await _run(settings, "serve", "--log-level", "loud")
    assert code == 2 and "invalid choice: 'LOUD'" in err


async def test_provider_errors_are_logged(settings: Settings) -> None:
    port = 9  # discard: nothing listens on loopback
    options = {"baseURL": f"http://127.0.0.1:{port}/v1", "apiKey": "local-key"}
    config = {"provider": {"local": {"options": options, "models": {"m1": {}}}}}
    (settings.project_dir / "partwire.json").write_text(__import__("json").dumps(config))
    _, _, err = await _run(settings, "run", "--print-logs", "-m", "local/m1", "hi")
    assert re.search(r"WARNING partwire\.session\.processor: local/m1 retry 1 in 1\.0s", err)
    assert "WARNING partwire.session.processor: local/m1 failed: cannot reach" in err


def test_every_option_has_help_text() -> None:
    from partwire.cli import _parser

    def actions(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.Action]]:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from ((f"{name} {where}", a) for where, a in actions(sub))
            else:
                yield parser.prog, action

    found = list(actions(_parser()))
    assert len(found) > 40
    missing = [(where, a.dest) for where, a in found if not a.help]
    assert missing == []
