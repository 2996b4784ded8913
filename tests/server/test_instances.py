"""Three ``partwire serve`` processes on one Postgres database: a client of any of them
sees every server's events, in one order, and resumes on another without a gap; one
server runs a session at a time; a killed server's session recovers on another. Each
case runs with events shared through Postgres' NOTIFY and through Redis."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import shutil
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import httpx
import pytest

from tests.conftest import require_installed
from tests.postgres_server import PostgresServer
from tests.redis_server import RedisServer
from tests.served import free_port


@pytest.fixture(params=["notify", "redis"])
def shared(request: pytest.FixtureRequest, postgres: PostgresServer) -> dict[str, str]:
    """What the servers share: a new database, and Redis for the events or not."""
    env = {"PARTWIRE_DATABASE_URL": postgres.new_database()}
    if request.param == "redis":
        env["PARTWIRE_REDIS_URL"] = request.getfixturevalue("redis_server").url()
    return env


@asynccontextmanager
async def _instance(project: Path, state: Path, shared: dict[str, str]) -> AsyncIterator[str]:
    async with _process(project, state, shared) as (url, _):
        yield url


@asynccontextmanager
async def _process(
    project: Path, state: Path, shared: dict[str, str]
) -> AsyncIterator[tuple[str, asyncio.subprocess.Process]]:
    port = free_port()
    env = {
        **os.environ,
        "PARTWIRE_DATA_DIR": str(state / "data"),
        "PARTWIRE_CONFIG_DIR": str(state / "config"),
        "PARTWIRE_DEMO_DELAY_MS": "3",
        **shared,
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "partwire", "serve", "--port", str(port),
        "--project", str(project),
        env=env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient(base_url=url) as http:
            for _ in range(400):
                try:
                    if (await http.get("/session/status", timeout=1)).status_code == 200:
                        break
                except httpx.TransportError:
                    await asyncio.sleep(0.05)
            else:
                raise AssertionError("partwire serve did not start")
        yield url, process
    finally:
        if process.returncode is None:
            process.terminate()
        await process.wait()


async def _deltas(
    url: str, session_id: str, last_id: str | None, until: int, out: list[tuple[str, str]]
) -> None:
    """Follow GET /event (from ``last_id``), appending (event id, delta) of the session's
    text deltas to ``out`` until it holds ``until`` of them."""
    headers = {"Last-Event-ID": last_id} if last_id else {}
    async with (
        httpx.AsyncClient(base_url=url, timeout=60) as http,
        http.stream("GET", "/event", headers=headers) as response,
    ):
        event_id = None
        async for line in response.aiter_lines():
            if line.startswith("id:"):
                event_id = line[3:].strip()
            elif line.startswith("data:") and '"message.part.delta"' in line:
                props = json.loads(line[5:])["properties"]
                if props["sessionID"] == session_id and event_id:
                    out.append((event_id, props["delta"]))
                    if len(out) >= until:
                        return


async def test_clients_of_any_instance_see_one_stream_and_resume_anywhere(
    project: Path, tmp_path: Path, shared: dict[str, str]
) -> None:
    async with AsyncExitStack() as stack:
        a, b, c = [
            await stack.enter_async_context(_instance(project, tmp_path / name, shared))
            for name in "abc"
        ]
        words = 300
        async with httpx.AsyncClient(timeout=60) as http:
            sid = (await http.post(f"{b}/session", json={})).json()["id"]
            on_a: list[tuple[str, str]] = []
            watching = asyncio.create_task(_deltas(a, sid, None, words, on_a))
            first_half: list[tuple[str, str]] = []
            resuming = asyncio.create_task(_deltas(c, sid, None, words // 3, first_half))
            await asyncio.sleep(0.3)  # both clients are listening
            prompt = {"parts": [{"type": "text", "text": f"long {words}"}]}
            assert (await http.post(f"{b}/session/{sid}/prompt_async", json=prompt)).is_success
            await asyncio.wait_for(resuming, 60)  # a third of the way: this client drops
            rest: list[tuple[str, str]] = []
            await asyncio.wait_for(
                _deltas(c, sid, first_half[-1][0], words - len(first_half), rest), 60
            )
            await asyncio.wait_for(watching, 60)
            messages = (await http.get(f"{a}/session/{sid}/message")).json()

    stored = "".join(p["text"] for p in messages[-1]["parts"] if p["type"] == "text")
    seen_on_a = [event_id for event_id, _ in on_a]
    assert seen_on_a == sorted(seen_on_a) and len(set(seen_on_a)) == len(seen_on_a)
    assert "".join(delta for _, delta in on_a) == stored  # every delta, in order, once
    assert first_half + rest == on_a  # resumed on another instance: nothing missed or repeated
    if "PARTWIRE_REDIS_URL" in shared:  # the deltas travelled through Redis
        assert _appended_deltas(shared, sid) == [delta for _, delta in on_a]


def _appended_deltas(shared: dict[str, str], session_id: str) -> list[str]:
    """The session's text deltas in the Redis stream of the database's log, in order."""
    from partwire.storage import redis_log
    from partwire.storage.pg_connection import connect

    conn = connect(shared["PARTWIRE_DATABASE_URL"], autocommit=True)
    try:
        epoch = int(conn.execute("SELECT value FROM meta WHERE key = 'event_epoch'").fetchone()[0])
    finally:
        conn.close()
    stream = redis_log.client(shared["PARTWIRE_REDIS_URL"])
    try:
        found = stream.xrange(redis_log.Keys(epoch).log)
    finally:
        stream.close()
    rows = sorted(row for _, fields in found for row in redis_log.rows_of(fields))  # type: ignore[union-attr]
    deltas = [json.loads(payload) for _, kind, payload in rows if kind == "message.part.delta"]
    return [d["delta"] for d in deltas if d["sessionID"] == session_id]


def _id(state: Path) -> str:
    """The server-id of the server with this state directory."""
    return (state / "data" / "server-id").read_text().strip()


def _owner(database: str, session_id: str) -> str:
    """The server-id of the server whose lease runs the session now."""
    from partwire.storage.pg_connection import connect

    conn = connect(database, autocommit=True)
    try:
        sql = "SELECT owner FROM session_lease WHERE session_id = ?"
        return str(conn.execute(sql, (session_id,)).fetchone()[0]).split(":")[0]
    finally:
        conn.close()


async def test_a_killed_servers_session_recovers_on_another_within_ten_seconds(
    project: Path, tmp_path: Path, shared: dict[str, str]
) -> None:
    database = shared["PARTWIRE_DATABASE_URL"]
    async with AsyncExitStack() as stack:
        servers = {
            name: await stack.enter_async_context(_process(project, tmp_path / name, shared))
            for name in "ab"
        }
        a, b = servers["a"][0], servers["b"][0]
        async with httpx.AsyncClient(timeout=60) as http:
            sid = (await http.post(f"{b}/session", json={})).json()["id"]
            seen: list[tuple[str, str]] = []
            watching = asyncio.create_task(_deltas(a, sid, None, 100, seen))
            await asyncio.sleep(0.3)
            prompt = {"parts": [{"type": "text", "text": "long 5000"}]}
            assert (await http.post(f"{b}/session/{sid}/prompt_async", json=prompt)).is_success
            await asyncio.wait_for(watching, 60)
            # whichever server took the prompt up (either may): kill that one
            owner = _owner(database, sid)
            [(dead, process)] = [
                (name, proc)
                for name, (_, proc) in servers.items()
                if (tmp_path / name / "data" / "server-id").read_text().strip() == owner
            ]
            process.kill()  # SIGKILL: no lease given back, nothing finished
            await process.wait()
            alive = servers["b" if dead == "a" else "a"][0]
            killed = asyncio.get_running_loop().time()
            # recovered: the message ended and the session idle; the idle status reaches
            # the alive server through the bus a moment after the commit it reads
            while True:
                messages = (await http.get(f"{alive}/session/{sid}/message")).json()
                status = (await http.get(f"{alive}/session/status")).json()
                if "error" in messages[-1]["info"] and status == {}:
                    break
                assert asyncio.get_running_loop().time() - killed < 10, "not recovered in 10 s"
                await asyncio.sleep(0.2)

    assistant = messages[-1]
    assert assistant["info"]["error"]["name"] == "MessageAbortedError"
    text = next(p for p in assistant["parts"] if p["type"] == "text")
    assert text["text"].startswith("".join(delta for _, delta in seen)), "a seen delta was lost"
    assert "end" in text["time"]


async def test_two_servers_prompting_one_session_never_run_it_at_once(
    project: Path, tmp_path: Path, shared: dict[str, str]
) -> None:
    async with AsyncExitStack() as stack:
        a, b = [
            await stack.enter_async_context(_instance(project, tmp_path / name, shared))
            for name in "ab"
        ]
        async with httpx.AsyncClient(timeout=60) as http:
            sid = (await http.post(f"{a}/session", json={})).json()["id"]
            # a prompt stored as context through the server that does not run the session,
            # while a run goes on: no server answers it (the run takes it as context)
            streaming = await _listen(a, "message.part.delta", sid)
            idle = await _listen(b, "session.idle", sid)
            first = {"parts": [{"type": "text", "text": "long 200"}]}
            assert (await http.post(f"{a}/session/{sid}/prompt_async", json=first)).is_success
            await asyncio.wait_for(streaming, 30)
            non_owner = (
                b if _owner(shared["PARTWIRE_DATABASE_URL"], sid) != _id(tmp_path / "b") else a
            )
            context = {"noReply": True, "parts": [{"type": "text", "text": "long 10"}]}
            kept = (await http.post(f"{non_owner}/session/{sid}/message", json=context)).json()
            await asyncio.wait_for(idle, 30)
            await asyncio.sleep(1.0)  # a server that would answer it has begun by now
            alone = (await http.get(f"{a}/session/{sid}/message")).json()
            assert [m["info"]["role"] for m in alone] == ["user", "assistant", "user"]
            answers = await asyncio.gather(
                *(
                    http.post(
                        f"{url}/session/{sid}/message",
                        json={"parts": [{"type": "text", "text": f"long {n}"}]},
                    )
                    for url, n in ((a, 150), (b, 120), (a, 90), (b, 60))
                )
            )
            messages = (await http.get(f"{b}/session/{sid}/message")).json()

    assert all(answer.status_code == 200 for answer in answers), [a.text for a in answers]
    users = [m["info"] for m in messages if m["info"]["role"] == "user"]
    runs = [m["info"] for m in messages if m["info"]["role"] == "assistant"]
    assert len(users) == 6 and runs and all("error" not in r for r in runs)
    # as on one server, a run answers the newest prompt it finds (the model reads them all)
    assert users[1]["id"] == kept["info"]["id"]
    assert runs[0]["parentID"] == users[0]["id"]
    assert {r["parentID"] for r in runs} <= {u["id"] for u in users} - {kept["info"]["id"]}
    assert runs[-1]["parentID"] == users[-1]["id"] and "completed" in runs[-1]["time"]
    for earlier, later in itertools.pairwise(runs):  # one run at a time
        assert later["time"]["created"] >= earlier["time"]["completed"], (earlier, later)


async def _listen(url: str, kind: str, session_id: str) -> asyncio.Task[dict[str, object]]:
    """A task that returns the first ``kind`` event of the session on GET /event, once its
    stream has started (the server subscribes it before it answers): nothing published
    from then on is missed, however long a busy machine takes to connect it."""
    started = asyncio.Event()
    task = asyncio.create_task(_first(url, kind, session_id, started))
    waiting = asyncio.create_task(started.wait())
    await asyncio.wait([task, waiting], timeout=30, return_when=asyncio.FIRST_COMPLETED)
    waiting.cancel()
    assert started.is_set() or task.done(), f"GET /event on {url} did not start"
    return task


async def _first(
    url: str, kind: str, session_id: str, started: asyncio.Event | None = None
) -> dict[str, object]:
    """The properties of the first ``kind`` event of the session on GET /event."""
    async with (
        httpx.AsyncClient(base_url=url, timeout=60) as http,
        http.stream("GET", "/event") as response,
    ):
        if started is not None:
            started.set()
        async for line in response.aiter_lines():
            if line.startswith("data:") and f'"{kind}"' in line:
                event = json.loads(line[5:])
                if event["type"] == kind and event["properties"].get("sessionID") == session_id:
                    return dict(event["properties"])
    raise AssertionError(f"no {kind}")


async def _listed(
    http: httpx.AsyncClient, url: str, path: str, waited_for: str | None
) -> list[dict[str, object]]:
    """GET ``path`` (a list of asks) once it shows ``waited_for`` (None: once it is empty;
    another server's events reach this one within moments)."""
    for _ in range(100):
        listed: list[dict[str, object]] = (await http.get(f"{url}{path}")).json()
        ids = [item["id"] for item in listed]
        if (waited_for in ids) if waited_for else not ids:
            return listed
        await asyncio.sleep(0.05)
    return listed


async def test_answers_and_aborts_reach_the_server_that_runs_the_session(
    project: Path, tmp_path: Path, shared: dict[str, str]
) -> None:
    """A question asked by one server's run is listed and answered through another, and
    through a server started after it was asked; an abort sent to a server that does not
    run the session stops the run where it goes."""
    database = shared["PARTWIRE_DATABASE_URL"]
    async with AsyncExitStack() as stack:
        servers = {
            name: (await stack.enter_async_context(_process(project, tmp_path / name, shared)))[0]
            for name in "ab"
        }
        ids = {(tmp_path / name / "data" / "server-id").read_text().strip(): name for name in "ab"}
        async with httpx.AsyncClient(timeout=60) as http:
            sid = (await http.post(f"{servers['a']}/session", json={})).json()["id"]
            asked = await _listen(servers["a"], "question.asked", sid)
            prompt = {"parts": [{"type": "text", "text": "question"}]}
            assert (
                await http.post(f"{servers['a']}/session/{sid}/prompt_async", json=prompt)
            ).is_success
            request = await asyncio.wait_for(asked, 30)
            other = servers["b" if ids[_owner(database, sid)] == "a" else "a"]
            late = await stack.enter_async_context(_instance(project, tmp_path / "c", shared))
            for url in (other, late):  # every server lists the owner's ask and status
                listed = await _listed(http, url, "/question", request["id"])
                assert [q["sessionID"] for q in listed] == [sid], url
                status = (await http.get(f"{url}/session/status")).json()
                assert status[sid]["type"] == "busy", (url, status)
            idle = await _listen(other, "session.idle", sid)
            # past what a NOTIFY payload may carry: the command goes through a row
            answer = {"answers": [["Blue" + ", and more" * 900]]}
            replied = await http.post(f"{other}/question/{request['id']}/reply", json=answer)
            assert replied.status_code == 200, replied.text
            made_up = await http.post(f"{other}/question/que_nobody/reply", json=answer)
            assert made_up.status_code == 404  # an ask no server holds is still refused
            await asyncio.wait_for(idle, 30)
            for url in (other, late):  # answered: gone from every server's lists
                assert await _listed(http, url, "/question", None) == [], url
                assert sid not in (await http.get(f"{url}/session/status")).json()
            messages = (await http.get(f"{other}/session/{sid}/message")).json()
            [tool] = [p for m in messages for p in m["parts"] if p["type"] == "tool"]
            assert tool["state"]["status"] == "completed", tool["state"]
            assert ", and more" * 900 in tool["state"]["output"]
            assert all("error" not in m["info"] for m in messages)

            prompt = {"parts": [{"type": "text", "text": "long 5000"}]}
            assert (
                await http.post(f"{servers['a']}/session/{sid}/prompt_async", json=prompt)
            ).is_success
            await asyncio.wait_for(_first(servers["b"], "message.part.delta", sid), 30)
            other = servers["b" if ids[_owner(database, sid)] == "a" else "a"]
            assert (await http.post(f"{other}/session/{sid}/abort")).json() is True
            for _ in range(50):
                messages = (await http.get(f"{other}/session/{sid}/message")).json()
                if "error" in messages[-1]["info"]:
                    break
                await asyncio.sleep(0.1)
    assert messages[-1]["info"]["error"]["name"] == "MessageAbortedError"


def _nginx_binary() -> str | None:
    found = shutil.which("nginx")
    return found or next((p for p in ("/usr/sbin/nginx",) if os.access(p, os.X_OK)), None)


@asynccontextmanager
async def _nginx(root: Path, ports: list[int]) -> AsyncIterator[str]:
    """deploy/nginx.conf, its three upstream ports and its own port rewritten."""
    binary = _nginx_binary()
    require_installed(binary, "nginx")
    assert binary is not None
    conf = (Path(__file__).parents[2] / "deploy" / "nginx.conf").read_text()
    for default, port in zip((4096, 4097, 4098), ports, strict=True):
        conf = conf.replace(f"server 127.0.0.1:{default} ", f"server 127.0.0.1:{port} ")
    listen = free_port()
    conf = conf.replace("listen 127.0.0.1:8080;", f"listen 127.0.0.1:{listen};")
    for folder in ("logs", "tmp"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    (root / "nginx.conf").write_text(conf)
    process = await asyncio.create_subprocess_exec(
        binary, "-p", str(root), "-c", str(root / "nginx.conf"), "-g", "daemon off;",
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{listen}"
    try:
        async with httpx.AsyncClient(base_url=url) as http:
            for _ in range(100):
                try:
                    if (await http.get("/global/health", timeout=1)).status_code == 200:
                        break
                except httpx.TransportError:
                    await asyncio.sleep(0.05)
            else:
                raise AssertionError("nginx did not start: " + _log(root))
        yield url
    finally:
        process.terminate()
        await process.wait()


def _log(root: Path) -> str:
    path = root / "logs" / "error.log"
    return path.read_text() if path.exists() else ""


async def test_behind_nginx_a_client_survives_losing_the_instance_it_streams_from(
    project: Path, tmp_path: Path, postgres: PostgresServer, redis_server: RedisServer
) -> None:
    """The deployment the README describes: Postgres, Redis, three servers, deploy/
    nginx.conf in front. The instance a client streams from is killed mid-answer; the
    client reconnects through the proxy with Last-Event-ID, lands on another instance,
    misses nothing and sees the session recovered there."""
    shared = {
        "PARTWIRE_DATABASE_URL": postgres.new_database(),
        "PARTWIRE_REDIS_URL": redis_server.url(),
    }
    async with AsyncExitStack() as stack:
        servers = {
            name: await stack.enter_async_context(_process(project, tmp_path / name, shared))
            for name in "abc"
        }
        ports = [int(url.rsplit(":", 1)[1]) for url, _ in servers.values()]
        proxy = await stack.enter_async_context(_nginx(tmp_path / "nginx", ports))
        async with httpx.AsyncClient(base_url=proxy, timeout=60) as http:
            sid = (await http.post("/session", json={})).json()["id"]
            seen: list[tuple[str, str]] = []
            watching = asyncio.create_task(_deltas(proxy, sid, None, 100, seen))
            await asyncio.sleep(0.3)
            prompt = {"parts": [{"type": "text", "text": "long 5000"}]}
            assert (await http.post(f"/session/{sid}/prompt_async", json=prompt)).is_success
            await asyncio.wait_for(watching, 60)
            owner = _owner(shared["PARTWIRE_DATABASE_URL"], sid)
            [process] = [
                proc for name, (_, proc) in servers.items() if _id(tmp_path / name) == owner
            ]
            # the instance the proxy sends this client to: the prompt went there, and the
            # server a prompt is sent to runs it
            process.kill()
            await process.wait()
            rest: list[tuple[str, str]] = []
            recovered = asyncio.create_task(_first_after(proxy, seen[-1][0], sid, rest))
            await asyncio.wait_for(recovered, 30)
            messages = (await http.get(f"/session/{sid}/message")).json()
            status = (await http.get("/session/status")).json()

    assistant = messages[-1]
    assert assistant["info"]["error"]["name"] == "MessageAbortedError"
    text = next(p for p in assistant["parts"] if p["type"] == "text")["text"]
    streamed = seen + rest
    ids = [event_id for event_id, _ in streamed]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)  # nothing twice, in order
    assert text == "".join(delta for _, delta in streamed)  # every stored delta, seen once
    assert sid not in status


async def _first_after(url: str, last_id: str, session_id: str, out: list[tuple[str, str]]) -> None:
    """Resume GET /event after ``last_id`` (retrying while the proxy finds a live
    instance), collecting the session's text deltas until it goes idle."""
    for _ in range(100):
        try:
            async with (
                httpx.AsyncClient(base_url=url, timeout=60) as http,
                http.stream("GET", "/event", headers={"Last-Event-ID": last_id}) as response,
            ):
                if response.status_code != 200:
                    raise httpx.TransportError(f"status {response.status_code}")
                event_id = None
                async for line in response.aiter_lines():
                    if line.startswith("id:"):
                        event_id = line[3:].strip()
                    elif line.startswith("data:"):
                        event = json.loads(line[5:])
                        props = event["properties"]
                        if props.get("sessionID") != session_id:
                            continue
                        if event["type"] == "message.part.delta" and event_id:
                            out.append((event_id, props["delta"]))
                        elif event["type"] == "session.idle":
                            return
        except httpx.TransportError:
            await asyncio.sleep(0.1)
    raise AssertionError("never resumed")


async def test_a_budget_counts_what_every_server_spent(
    project: Path, tmp_path: Path, shared: dict[str, str]
) -> None:
    async with AsyncExitStack() as stack:
        a = await stack.enter_async_context(_instance(project, tmp_path / "a", shared))
        b = await stack.enter_async_context(_instance(project, tmp_path / "b", shared))
        async with httpx.AsyncClient(timeout=60) as http:
            made = await http.post(f"{a}/session", json={"budget": {"tokens": 1}})
            sid = made.json()["id"]
            hello = {"parts": [{"type": "text", "text": "hello"}]}
            assert (await http.post(f"{a}/session/{sid}/message", json=hello)).is_success
            spent = (await http.get(f"{b}/session/{sid}")).json()["tokens"]
            assert spent["output"] > 0  # a's answer, in the store b reads
            # through b: what a's answer spent is past the budget, so b asks before its step
            again = {"parts": [{"type": "text", "text": "again"}]}
            assert (await http.post(f"{b}/session/{sid}/prompt_async", json=again)).is_success
            asks: list[dict[str, object]] = []
            for _ in range(100):  # the ask, as seen on the other server too
                asks = [
                    p for p in (await http.get(f"{a}/permission")).json() if p["sessionID"] == sid
                ]
                if asks:
                    break
                await asyncio.sleep(0.1)
            assert [p["permission"] for p in asks] == ["budget"]
            reply = await http.post(
                f"{a}/permission/{asks[0]['id']}/reply", json={"reply": "reject"}
            )
            assert reply.is_success, reply.text
            for _ in range(100):
                if (await http.get(f"{b}/session/status")).json() == {}:
                    break
                await asyncio.sleep(0.1)
            messages = (await http.get(f"{b}/session/{sid}/message")).json()
    assert [m["info"]["role"] for m in messages] == ["user", "assistant", "user"]
