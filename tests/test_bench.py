"""The benchmark scripts still run end to end (figures are not asserted: see README)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from partwire import ids, processes
from partwire.schema.event import PartDeltaProps
from partwire.storage import sqlite
from tests.postgres_server import PostgresServer
from tests.redis_server import RedisServer

ROOT = Path(__file__).resolve().parents[1]
# a bound far above any p99: the tests that drive capacity.py and scale.py check their
# tables, not latency
LENIENT_MS = "60000"
_UNDER_230 = [1, 5, 10, 20, 30, 40, 50, 60, 80, 100, 125, 150, 200]


async def ran(script: str, *args: str, limit_s: float = 120) -> tuple[int | None, bytes, bytes]:
    """Run bench/<script> with ``args``: its exit code, standard output and error."""
    process = await processes.start(
        sys.executable, str(ROOT / "bench" / script), *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await processes.finish(process, limit_s=limit_s)
    return process.returncode, out, err


async def run_bench(script: str, *args: str, limit_s: float = 120) -> str:
    """Run bench/<script> with ``args``; its standard output (it must exit 0)."""
    code, out, err = await ran(script, *args, limit_s=limit_s)
    assert code == 0, err.decode()
    return out.decode()


@pytest.mark.parametrize(
    ("script", "first_column", "extra"),
    [
        ("stream.py", ["long", "N", "delay", "ms", "deltas/s"], []),
        ("stream.py", ["long", "N", "delay", "ms", "deltas/s"], ["--delay-ms", "1"]),
        ("provider.py", ["tokens", "delay", "ms", "deltas/s"], []),
    ],
)
async def test_bench_prints_its_table(
    script: str, first_column: list[str], extra: list[str]
) -> None:
    out = await run_bench(script, "--words", "200", *extra)
    lines = out.splitlines()
    header = lines[1].split()
    assert header[: len(first_column)] == first_column
    assert header[-9:] == ["B/B", "peak", "RSS", "MB", "CPU", "ms/1k", "first", "delta", "ms"]
    row = lines[3].split()
    assert row[0] == "200" and row[1] == (extra[1] if extra else "0")
    assert "KB/delta" in header and float(row[-5]) > 0  # KB/delta, SQLite B/B, peak RSS
    assert float(row[-2]) > 0  # the server's CPU per 1k deltas
    assert 0 < float(row[-1]) < 10_000  # the prompt sent → the first delta read


async def test_ui_bench_prints_its_tables() -> None:
    from tests.web.conftest import require_ui

    require_ui()
    text = await run_bench("ui.py", "--messages", "120", "--words", "200", limit_s=300)
    assert "Open a session of 120 messages" in text
    rows = text.split("Stream long 200")[1].splitlines()[2:4]
    assert [row.split()[0] for row in rows] == ["0", "2"]


async def test_capacity_bench_prints_its_steps_and_the_largest_k() -> None:
    out = await run_bench(
        "capacity.py", "--max-sessions", "5", "--tokens", "100", "--rate", "500",
        "--limit-ms", LENIENT_MS, limit_s=180,
    )  # fmt: skip
    lines = out.splitlines()
    assert lines[1].split()[:3] == ["sessions", "deltas", "p50"]
    rows = [row.split() for row in lines[3:5]]
    assert [row[:2] for row in rows] == [["1", "100"], ["5", "500"]]  # every delta read
    # CPU is read in clock ticks (10 ms): 500 deltas take several
    assert float(rows[1][4]) > 0
    assert lines[-2].startswith(f"largest K with p99 <= {LENIENT_MS} ms: 5 sessions (")
    assert lines[-1] == "the bound was not passed up to --max-sessions 5"


def _bench_module(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("refine", "least", "expected"),
    [
        (3, 1, [*_UNDER_230, 250, 225, 237, 231]),  # 225 under, 237 and 231 over
        (0, 1, [*_UNDER_230, 250]),
        (3, 5, [*_UNDER_230[1:], 250, 225, 237, 231]),
    ],
)
async def test_capacity_search_narrows_the_bound_once_it_is_passed(
    refine: int, least: int, expected: list[int]
) -> None:
    """A server whose p99 in ms equals its sessions, bound 230: the steps up to 250 (the
    first over it), then halvings between 200 and 250."""
    capacity = _bench_module("capacity")
    tried: list[int] = []

    async def measure(sessions: int) -> Any:
        tried.append(sessions)
        return capacity.Step(sessions, sessions, sessions / 2, float(sessions), 1.0)

    measured = await capacity.search(measure, 230, 5000, refine, least=least)
    assert tried == expected == [step.sessions for step in measured]


async def test_capacity_search_stops_where_the_steps_stop_and_when_the_first_fails() -> None:
    capacity = _bench_module("capacity")

    def measuring(p99_ms: float) -> Any:
        async def measure(sessions: int) -> Any:
            return capacity.Step(sessions, sessions, 1.0, p99_ms, 1.0)

        return measure

    under = await capacity.search(measuring(1.0), 50, 20)
    assert [step.sessions for step in under] == [1, 5, 10, 20]
    over = await capacity.search(measuring(99.0), 50, 20)  # nothing under it to narrow to
    assert [step.sessions for step in over] == [1]


async def test_capacity_bench_splits_the_cpu_into_starts_and_deltas() -> None:
    out = await run_bench(
        "capacity.py", "--max-sessions", "1", "--tokens", "40", "--rate", "400", "--split",
        limit_s=180,
    )  # fmt: skip
    found = re.search(
        r"at 1 sessions: starting and ending an answer took ([\d.]+) ms of server CPU a "
        r"session, each delta (\d+) µs more; the starts were (\d+)% of the server's CPU",
        out.splitlines()[-1],
    )
    assert found is not None, out
    assert float(found[1]) >= 0 and 0 <= int(found[3]) <= 100


async def test_capacity_split_divides_the_cpu_by_what_the_short_answers_cost() -> None:
    capacity = _bench_module("capacity")
    # 10 sessions of 101 tokens: 1,010 deltas at 20 ms/1k = 20.2 ms of CPU in all
    full = capacity.Step(10, 1010, 1.0, 2.0, 20.0)
    short = capacity.Step(10, 10, 1.0, 2.0, 500.0)  # one token each: 5 ms of CPU
    parts = capacity.split(full, 101, short)
    assert parts.start_ms == pytest.approx(0.5)
    assert parts.delta_us == pytest.approx((20.2 - 5.0) * 1000 / 1000)
    assert parts.start_share == pytest.approx(5.0 / 20.2)
    line = capacity.split_line(parts)
    assert line.startswith("at 10 sessions: starting and ending an answer took 0.50 ms")
    assert "each delta 15 µs more; the starts were 25% of the server's CPU" in line


async def test_capacity_bench_refuses_a_split_of_one_token_answers() -> None:
    code, _, err = await ran("capacity.py", "--tokens", "1", "--split")
    assert code != 0
    assert "--split: answers of at least 2 tokens" in err.decode()


async def test_capacity_bench_says_what_limited_it() -> None:
    """A bound no step can meet: the first step passes it, and the bench names the limit."""
    out = await run_bench(
        "capacity.py", "--max-sessions", "5", "--tokens", "20", "--rate", "200",
        "--limit-ms", "0.001", limit_s=180,
    )  # fmt: skip
    lines = out.splitlines()
    assert [row.split()[0] for row in lines[3:-2]] == ["1"]
    assert lines[-2].startswith("largest K with p99 <= 0.001 ms: 0 sessions")
    assert re.match(r"at 1 sessions p99 was [\d.]+ ms; the limit: (the server's CPU|the "
                    r"machine|neither CPU was full)", lines[-1])  # fmt: skip


async def test_capacity_bench_records_external_loops_through_ingest_with_the_loops_lag() -> None:
    out = await run_bench(
        "capacity.py", "--max-sessions", "5", "--tokens", "20", "--rate", "200",
        "--via", "ingest", "--loop-lag",
        "--limit-ms", LENIENT_MS, limit_s=180,
    )  # fmt: skip
    lines = out.splitlines()
    assert "external loops through ingest" in lines[0]
    assert lines[1].split()[-4:] == ["loop", "lag", "p99", "ms"]
    rows = [row.split() for row in lines[3:5]]
    assert [row[:2] for row in rows] == [["1", "20"], ["5", "100"]]  # every delta ingested
    assert all(float(row[3]) > 0 and float(row[-1]) >= 0 for row in rows)  # p99, lag measured


def _quota_root() -> Path:
    """Where bench/_cpu_quota.py makes its cgroups; the test is skipped where it cannot (not
    root, or no cgroup cpu controller)."""
    spec = importlib.util.spec_from_file_location("_cpu_quota", ROOT / "bench" / "_cpu_quota.py")
    assert spec is not None and spec.loader is not None
    quotas = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(quotas)
    try:
        root, _ = quotas.quota_root()
    except quotas.QuotaError as exc:
        pytest.skip(str(exc))
    return Path(root)


async def test_capacity_bench_holds_the_server_to_a_cpu_quota_and_staggers_the_prompts() -> None:
    root = _quota_root()
    out = await run_bench(
        "capacity.py", "--max-sessions", "5", "--tokens", "20", "--rate", "200",
        "--cpu-quota", "0.5", "--stagger-ms", "30",
        "--limit-ms", LENIENT_MS, limit_s=180,
    )  # fmt: skip
    lines = out.splitlines()
    assert lines[0].endswith(
        "started 30 ms apart, one client on /event, partwire's loop, the server held to 0.5 CPUs"
    )
    assert [row.split()[:2] for row in lines[3:5]] == [["1", "20"], ["5", "100"]]
    assert lines[-2].endswith("10 sessions per server core")  # 5 sessions on half a CPU
    assert not [g for g in root.iterdir() if g.name.startswith("partwire-bench-")]  # removed


async def test_scale_bench_prints_one_row_per_fanout_servers_and_sessions(
    postgres: PostgresServer,  # Postgres and Redis are installed (the bench starts its own)
    redis_server: RedisServer,
) -> None:
    out = await run_bench(
        "scale.py", "--instances", "1", "2", "--sessions", "4", "--tokens", "20",
        "--rate", "200", "--spread-s", "0.2", limit_s=240,
    )  # fmt: skip
    assert "20 tokens an answer, started over 0.2 s" in out.splitlines()[0]
    assert out.splitlines()[1].split()[-4:] == ["servers'", "CPUs", "others'", "CPUs"]
    rows = [line.split() for line in out.splitlines()[3:]]
    assert [row[:4] for row in rows] == [
        [fanout, servers, "4", "80"] for fanout in ("notify", "redis") for servers in "12"
    ]
    assert all(float(row[5]) > 0 and int(row[6]) > 0 for row in rows)  # p99, CPU measured
    assert all(float(row[7]) >= 0 and float(row[8]) >= 0 for row in rows)  # both CPUs read


async def test_capacity_bench_watches_each_session_on_its_own_stream_when_asked() -> None:
    out = await run_bench(
        "capacity.py", "--max-sessions", "5", "--tokens", "20", "--rate", "200",
        "--watch", "session",
        "--limit-ms", LENIENT_MS, limit_s=180,
    )  # fmt: skip
    lines = out.splitlines()
    assert lines[0].endswith("a client per session, partwire's loop")
    rows = [row.split() for row in lines[3:5]]
    assert [row[:2] for row in rows] == [["1", "20"], ["5", "100"]]  # every delta, per stream
    assert all(float(row[3]) > 0 and int(row[4]) > 0 for row in rows)  # p99, CPU measured


async def test_scale_bench_holds_each_server_to_a_cpu_quota_and_watches_each_session_there(
    postgres: PostgresServer,
) -> None:
    root = _quota_root()
    out = await run_bench(
        "scale.py", "--cpu-quota", "0.5", "--instances", "2", "--sessions", "4",
        "--fanout", "notify", "--tokens", "20", "--rate", "200", "--watch", "session",
        limit_s=240,
    )  # fmt: skip
    lines = out.splitlines()
    assert lines[0].endswith("each server held to 0.5 CPU; a client per session")
    assert [line.split()[:4] for line in lines[3:]] == [["notify", "2", "4", "80"]]
    assert not [g for g in root.iterdir() if g.name.startswith("partwire-bench-")]  # removed


async def test_scale_bench_finds_the_largest_number_of_sessions_each_carries(
    postgres: PostgresServer,
) -> None:
    out = await run_bench(
        "scale.py", "--capacity", "--instances", "1", "--fanout", "notify", "--tokens", "10",
        "--rate", "200", "--limit-ms", LENIENT_MS, "--max-sessions", "5", "--repeat", "2",
        limit_s=240,
    )  # fmt: skip
    lines = out.splitlines()
    assert lines[1].split()[-1] == "run"
    steps = [line.split() for line in lines[3:-2]]
    assert [row[:4] + row[-1:] for row in steps] == [
        ["notify", "1", sessions, deltas, run]
        for run in "12"
        for sessions, deltas in (("1", "10"), ("5", "50"))
    ]
    assert all(0 < float(row[5]) <= float(LENIENT_MS) for row in steps)  # the bound holds
    assert lines[-2:] == [
        f"notify run {run}: largest K with p99 <= {LENIENT_MS} ms: 1 servers 5 (1.00x)"
        for run in "12"
    ]


def test_scale_bench_gives_the_median_of_its_runs_ratios() -> None:
    scale = _bench_module("scale")
    runs = [{1: 20, 3: 70}, {1: 25, 3: 60}, {1: 30, 3: 90}, {1: 0, 3: 40}]
    lines = scale.capacity_lines("notify", 50, [1, 3], runs)
    assert lines[:2] == [
        "notify run 1: largest K with p99 <= 50 ms: 1 servers 20 (1.00x), 3 servers 70 (3.50x)",
        "notify run 2: largest K with p99 <= 50 ms: 1 servers 25 (1.00x), 3 servers 60 (2.40x)",
    ]
    assert lines[3] == "notify run 4: largest K with p99 <= 50 ms: 1 servers 0, 3 servers 40"
    # 3.5, 2.4 and 3.0; the run where one server carried nothing has no ratio
    assert lines[-1] == "notify: median of 4 runs' ratios: 3 servers over 1: 3.00x"
    assert scale.capacity_lines("redis", 50, [1, 3], [{1: 20, 3: 50}], [["  a note"]]) == [
        "redis: largest K with p99 <= 50 ms: 1 servers 20 (1.00x), 3 servers 50 (2.50x)",
        "  a note",
    ]


def test_scale_bench_says_what_limited_each_number_of_servers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    scale, capacity = _bench_module("scale"), _bench_module("capacity")
    one = capacity.Step(31, 15500, 9.8, 95.5, 126, server_cpus=0.38, others_cpus=0.9)
    three = capacity.Step(82, 41000, 10.3, 51.9, 133, server_cpus=0.95, others_cpus=0.9)
    bounds = {1: scale.Bound(30, one), 3: scale.Bound(80, three), 5: scale.Bound(90, None)}
    lines = scale.limit_lines(bounds, 0.4)
    assert lines == [
        "  server at 31 sessions: p99 95.5 ms; the limit: the server's CPU (server 0.38 of "
        "0.4 CPUs, Postgres, model, client 0.90, machine 2 CPUs)",
        "  3 servers at 82 sessions: p99 51.9 ms; the limit: the machine: the Postgres, "
        "model, client took the CPU the servers lacked (servers 0.95 of 1.2 CPUs, Postgres, "
        "model, client 0.90, machine 2 CPUs)",
    ]  # 0.38 of 0.4 is the quota full; 0.95 of 1.2 is not, but 1.85 of 2 cores is


async def test_scale_bench_refuses_repeat_without_capacity() -> None:
    code, out, err = await ran("scale.py", "--repeat", "2")
    assert code == 1 and not out
    assert err.decode().strip() == "--repeat: a number of runs of at least 1, with --capacity"


async def test_start_bench_prints_both_cases() -> None:
    out = await run_bench("start.py", "--repeat", "1")
    rows = out.splitlines()[2:]
    assert [row.split("  ")[0].strip() for row in rows] == list(
        ("demo model only", "OPENAI_API_KEY set")
    )
    for row in rows:  # health answers first; the app's first request comes after
        health, app = (float(x) for x in row.split("  ")[-1].split("/"))
        assert 0 < health <= app


async def test_ingest_bench_prints_its_table() -> None:
    # enough deltas for the CPU figure to span several clock ticks (it is read in 10 ms units)
    out = await run_bench("ingest.py", "--deltas", "3000", "--repeat", "2")
    lines = out.splitlines()
    assert lines[0].split() == ["run", "deltas", "paced", "ms", "deltas/s", "CPU", "ms/1k"]
    rows = [line.split() for line in lines[1:]]
    assert [r[:2] for r in rows] == [["1", "3000"], ["2", "3000"]]
    assert all(float(r[3].replace(",", "")) > 0 and float(r[4]) > 0 for r in rows)


async def test_ingest_bench_measures_deltas_after_a_long_text() -> None:
    out = await run_bench(
        "ingest.py", "--deltas", "2000", "--repeat", "1", "--prefix-kb", "20", "1024"
    )
    lines = out.splitlines()
    at = lines.index(next(line for line in lines if line.strip().startswith("after text KB")))
    rows = [line.split() for line in lines[at + 1 :]]
    assert [r[:2] for r in rows] == [["20", "2000"], ["1,024", "2000"]]
    assert all(float(r[2]) >= 0 for r in rows)


async def test_recorder_bench_prints_cpu_after_each_prefix_and_bytes_per_argument_delta() -> None:
    out = await run_bench(
        "recorder.py", "--deltas", "200", "--prefix-kb", "20", "1024",
        "--args-deltas", "10", "100", "--repeat", "1",
    )  # fmt: skip
    lines = out.splitlines()
    at = lines.index(next(line for line in lines if line.strip().startswith("after text KB")))
    assert [line.split()[:2] for line in lines[at + 1 : at + 3]] == [
        ["20", "200"],
        ["1,024", "200"],
    ]
    at = lines.index(next(line for line in lines if line.strip().startswith("arg deltas")))
    rows = [line.split() for line in lines[at + 1 :]]
    assert [r[0] for r in rows] == ["10", "100"]
    # every argument delta reaches the store (batched part rows, not only the store's calls)
    assert all(float(r[1].replace(",", "")) > 100 for r in rows)


async def test_floor_bench_prints_the_floor_and_partwire_at_each_pace() -> None:
    # enough deltas that partwire's CPU spans several of /proc's 10 ms ticks
    out = await run_bench("floor.py", "--deltas", "400", "--delay-ms", "1,2")
    lines = out.splitlines()
    assert re.split(r"\s{2,}", lines[1].strip()) == ["variant", "1 ms apart", "2 ms apart"]
    rows = [re.split(r"\s{2,}", line.strip()) for line in lines[3:]]
    floor = ["relay", "inline commit", "writer thread", "writer follows"]
    assert [row[0] for row in rows] == [
        *floor,
        "partwire",
        "writer follows, beside partwire",
        "partwire / writer follows beside it",
    ]
    assert all(float(cpu) >= 0 for row in rows[:4] for cpu in row[1:])
    partwire, beside, ratio = rows[4][1:], rows[5][1:], rows[6][1:]
    assert len(partwire) == 2 and all(float(cpu) > 0 for cpu in partwire)
    assert len(beside) == 2 and all(float(cpu) > 0 for cpu in beside)
    assert len(ratio) == 2 and all(cell.endswith("x") and float(cell[:-1]) > 0 for cell in ratio)


async def test_floor_bench_shows_medians_and_each_rounds_ratio() -> None:
    out = await run_bench("floor.py", "--deltas", "100", "--delay-ms", "2", "--rounds", "2")
    lines = out.splitlines()
    assert lines[0].endswith("medians of 2 rounds")
    rows = [re.split(r"\s{2,}", line.strip()) for line in lines[3:]]
    assert [row[0] for row in rows][-2:] == [
        "writer follows, beside partwire",
        "partwire / writer follows beside it",
    ]
    ratio = re.fullmatch(r"([\d.]+)x \(([\d.]+), ([\d.]+)\)", rows[-1][1])
    assert ratio is not None, rows[-1]
    median, first, second = (float(x) for x in ratio.groups())
    assert abs(median - (first + second) / 2) <= 0.1  # each shown to a tenth


def test_floor_reads_the_mock_models_bytes_and_writes_partwires_event() -> None:
    """The floor does partwire's work on the same bytes: the paced mock model's chunk in,
    a message.part.delta event of partwire's wire shape out (its row: the properties)."""
    floor = _bench_module("floor")
    paced = _bench_module("_mock_paced").Paced(tokens=3, rate=100)
    words, chunks = paced.answer(b"{}")
    assert floor.model_chunk(words[2]) == chunks[2]  # the first chunk also names the role
    properties, event_json = floor.delta_event(7, "w2 ")
    event = json.loads(event_json)
    assert event["type"] == "message.part.delta"
    assert ids.logged_event_seq(event["id"], floor.EPOCH) == 7
    assert json.loads(properties) == event["properties"]
    props = PartDeltaProps.model_validate(event["properties"])
    assert props.wire_json() == properties
    assert props.delta == "w2 "


async def _gated_floor_relay(deltas: int) -> asyncio.subprocess.Process:
    """floor.py's "writer follows" relay, 1 ms a delta, started as partwire's bench starts
    the one beside it: gated on a line on its stdin."""
    argv = _bench_module("floor").relay_argv("writer follows", deltas, 1, gated=True)
    pipe = asyncio.subprocess.PIPE
    return await processes.start(*argv, stdin=pipe, stdout=pipe, stderr=pipe)


async def test_floor_beside_partwire_streams_only_once_told_to() -> None:
    """The floor run beside partwire waits for partwire's measured stream: its model
    sends nothing until a line comes on the relay's stdin, then all of its deltas (enough
    for /proc's CPU ticks)."""
    relay = await _gated_floor_relay(deltas=400)
    try:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(asyncio.shield(relay.wait()), 1.5)
    except BaseException:
        await processes.stop(relay)
        raise
    out, _ = await processes.finish(relay, b"go\n", limit_s=60)
    assert relay.returncode == 0
    assert float(out) > 0


async def test_floor_beside_partwire_fails_if_never_told_to_go() -> None:
    """partwire's step must start the floor beside it (capacity.step's ``measuring``): a
    gated relay whose stdin ends first exits with an error, and so fails the bench."""
    relay = await _gated_floor_relay(deltas=10)
    out, err = await processes.finish(relay, b"", limit_s=60)
    assert relay.returncode == 1 and out == b""
    assert "stdin ended before it was told to go" in err.decode()


async def test_floor_bench_refuses_a_pace_that_is_not_a_number() -> None:
    code, out, err = await ran("floor.py", "--delay-ms", "5,soon")
    assert code == 2 and out == b""
    assert "not a list of milliseconds: '5,soon'" in err.decode()
    assert "Traceback" not in err.decode()


async def test_per_delta_bench_profiles_the_window_and_divides_by_its_deltas(
    tmp_path: Path,
) -> None:
    saved = tmp_path / "server.prof"
    out = await run_bench(
        "per_delta.py", "--sessions", "2", "--tokens", "150", "--rate", "100", "--top", "200",
        "--save", str(saved),
    )  # fmt: skip
    lines = out.splitlines()
    assert lines[0].startswith("partwire per delta — 2 sessions at 100 tokens/s")
    assert re.split(r"\s{2,}", lines[1].strip()) == [
        "calls/delta", "own µs/delta", "with callees µs/delta", "function"
    ]  # fmt: skip
    rows = {
        row[3]: row
        for row in (re.split(r"\s{2,}", line.strip(), maxsplit=3) for line in lines[3:-1])
    }
    # the session writer's text_delta and the builder's grow: once a delta each (a signal
    # may open or close the window between the two calls of one delta)
    writer = _row(rows, "partwire/session/writer.py:", " text_delta")
    builder = _row(rows, "partwire/builder.py:", " grow")
    assert abs(float(writer[0]) - 1) <= 0.02 and abs(float(builder[0]) - 1) <= 0.02
    assert float(writer[2]) >= float(writer[1]) > 0  # with its callees, at least its own
    seen = re.fullmatch(
        r"(\d+) deltas in the window: (\d+) calls a delta \((\d+) of Python.*", lines[-1]
    )
    assert seen is not None, lines[-1]
    # the window leaves out the starts and the ends: under the 300 deltas streamed
    assert 20 < int(seen[1]) < 300 and int(seen[2]) > int(seen[3]) > 20
    assert saved.stat().st_size > 0  # kept for python -m pstats


def _row(rows: dict[str, list[str]], module: str, function: str) -> list[str]:
    return next(
        row for name, row in rows.items() if name.startswith(module) and name.endswith(function)
    )


async def test_per_delta_bench_refuses_a_step_too_short_to_have_a_window() -> None:
    code, out, err = await ran("per_delta.py", "--tokens", "50", "--rate", "100")
    assert code == 2 and out == b""
    assert "every session must stream together for a second" in err.decode()
    assert "Traceback" not in err.decode()


async def test_log_append_bench_prints_each_size_and_gap_against_another_build() -> None:
    out = await run_bench(
        "log_append.py", "--rows", "1,4", "--gap-ms", "0", "--commits", "5", "--rounds", "2",
        "--against", str(ROOT / "src"),
    )  # fmt: skip
    lines = out.splitlines()
    assert lines[0].endswith("medians of 2 rounds of 5 commits")
    header = re.split(r"\s{2,}", lines[1].strip())
    logs = ["bare table", "partwire log", "implicit BEGIN", "other build's log"]
    ratios = [f"partwire / {logs[0]}", f"partwire / {logs[2]}", f"partwire / {logs[3]}"]
    assert header == ["rows", "gap ms", *logs, *ratios]
    rows = [re.split(r"\s{2,}", line.strip()) for line in lines[3:]]
    assert [row[:2] for row in rows] == [["1", "0"], ["4", "0"]]
    assert all(float(us) > 0 for row in rows for us in row[2:6])
    assert all(cell.endswith("x") and float(cell[:-1]) > 0 for row in rows for cell in row[6:])


async def test_log_append_bench_refuses_a_folder_without_partwire(tmp_path: Path) -> None:
    code, out, err = await ran("log_append.py", "--against", str(tmp_path))
    assert code == 2 and out == b""
    assert f"{tmp_path} is no src folder" in err.decode() and "Traceback" not in err.decode()


async def test_client_write_bench_prints_each_client_count_and_merge() -> None:
    out = await run_bench(
        "client_write.py", "--clients", "2,3", "--merge", "2,1", "--ticks", "6",
        "--tick-ms", "1", "--rounds", "2",
    )  # fmt: skip
    lines = out.splitlines()
    assert lines[0].endswith("a tick every 1 ms; medians of 2 rounds of 6 ticks")
    header = re.split(r"\s{2,}", lines[1].strip())
    assert header == [
        "clients", "deltas a write", "writer µs/delta", "reader µs/delta", "writer / 1 a write"
    ]  # fmt: skip
    rows = [re.split(r"\s{2,}", line.strip()) for line in lines[3:]]
    assert [row[:2] for row in rows] == [["2", "1"], ["2", "2"], ["3", "1"], ["3", "2"]]
    assert all(re.fullmatch(r"-?\d+\.\d", cell) for row in rows for cell in row[2:4])  # µs
    assert [row[4] for row in rows if row[1] == "1"] == ["1.00", "1.00"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--merge", "0"], "--clients and --merge take whole numbers of at least 1"),
        (["--clients", "many"], "not a list of non-negative numbers: 'many'"),
        (["--merge", "4", "--ticks", "3"], "--ticks 3 is fewer than one write of 4 deltas"),
    ],
)
async def test_client_write_bench_refuses_what_it_cannot_run(args: list[str], message: str) -> None:
    code, out, err = await ran("client_write.py", *args)
    assert code == 2 and out == b""
    assert message in err.decode() and "Traceback" not in err.decode()


async def test_log_prune_bench_prints_a_row_a_build_and_round_and_their_ratio() -> None:
    out = await run_bench(
        "log_prune.py", "--sessions", "20", "--seconds", "1.2", "--retain", "50",
        "--rounds", "2", "--against", str(ROOT / "src"),
    )  # fmt: skip
    lines = out.splitlines()
    assert lines[0].startswith("20 streams of 100 deltas/s for 1.2 s into a log at its retention")
    header = re.split(r"\s{2,}", lines[1].strip())
    assert header == [
        "build", "round", "deltas", "CPU µs/delta", "p50 ms", "p99 ms", "p99.9 ms", "max ms",
        "pruned",
    ]  # fmt: skip
    rows = [re.split(r"\s{2,}", line.strip()) for line in lines[3:-1]]
    assert [row[:2] for row in rows] == [
        ["this build", "1"], ["this build", "2"], ["other build", "1"], ["other build", "2"]
    ]  # fmt: skip
    for row in rows:
        deltas, pruned = int(row[2]), int(row[8])
        assert 2_000 < deltas <= 20 * 100 * 1.2 + 20  # the deltas appended, each timed once
        # the log was at its retention: all but the last prune's 2,000 events were shed
        assert pruned >= deltas - sqlite.PRUNE_EVERY_EVENTS
        assert float(row[4]) <= float(row[5]) <= float(row[6]) <= float(row[7])
    assert re.fullmatch(r"CPU per delta, this build / other build: \d+\.\d{3} .*", lines[-1])


async def test_log_prune_bench_refuses_what_it_cannot_run(tmp_path: Path) -> None:
    code, out, err = await ran("log_prune.py", "--sessions", "0")
    assert code == 2 and out == b"" and "--sessions, --retain and --rounds" in err.decode()
    code, out, err = await ran("log_prune.py", "--against", str(tmp_path))
    assert code == 2 and f"{tmp_path} is no src folder" in err.decode()
    assert "Traceback" not in err.decode()


async def test_replay_bench_prints_its_four_rows() -> None:
    out = await run_bench("replay.py", "--events", "2000", "--watch-s", "0.6")
    rows = [line for line in out.splitlines() if line.startswith("|") and line[2].isspace()]
    assert len(rows) == 4
    assert all(row.split("|")[-2].strip() in ("ok", "OVER") for row in rows)


async def test_mentions_bench_prints_its_table() -> None:
    out = await run_bench("mentions.py", "--ignored", "200", "--tracked", "20", "--repeat", "1")
    lines = out.splitlines()
    assert lines[1].split() == ["lookup", "median", "ms", "max", "ms"]
    rows = lines[2:]
    assert [row[:28].strip() for row in rows] == ["first (lists the tree)", "next keystrokes"]
    assert all(float(row.split()[-1]) > 0 for row in rows)


async def test_timetravel_bench_prints_its_forks_and_a_replay() -> None:
    out = await run_bench("timetravel.py", "--messages", "60", "--prompts", "3", "--repeat", "1")
    lines = out.splitlines()
    assert lines[0].startswith("fork: a session of 60 messages")
    rows = [re.split(r"\s{2,}", line.strip()) for line in lines[2:5]]
    assert [row[0] for row in rows] == ["whole", "at a part halfway", "before the last tool call"]
    assert int(rows[0][1]) == 60 and int(rows[1][1]) == 31
    assert all(float(row[2]) > 0 and float(row[3]) >= 0 for row in rows)
    assert lines[6] == "replay: 3 prompts, demo model, recorded tools"
    replay = re.split(r"\s{2,}", lines[8].strip())
    assert replay[:2] == ["recorded tools", "3"] and float(replay[2]) > 0


async def test_pair_bench_runs_two_builds_side_by_side_and_prints_their_ratio() -> None:
    watch, rounds = "session", 2  # --watch event: the --starts test below
    src = str(ROOT / "src")
    out = await run_bench(
        "pair.py", src, src, "--sessions", "3", "--tokens", "500", "--rate", "200",
        "--rounds", str(rounds), "--watch", watch, limit_s=180,
    )  # fmt: skip
    lines = out.splitlines()
    assert lines[0].startswith("partwire pair") and "3 sessions on each server" in lines[0]
    assert f"watch {watch}" in lines[0]
    rows = [row.split() for row in lines[3 : 3 + rounds]]
    assert [row[0] for row in rows] == [str(n + 1) for n in range(rounds)]
    for row in rows:  # CPU per delta of each build, their ratio, each build's p99
        a_us, b_us, ratio, a_p99, b_p99 = map(float, row[1:])
        assert a_us > 0 and b_us > 0 and ratio == pytest.approx(b_us / a_us, abs=0.002)
        assert a_p99 > 0 and b_p99 > 0
    assert lines[3 + rounds].startswith("median B/A: ")


async def test_pair_bench_weighs_an_answers_start_and_end_with_starts() -> None:
    src = str(ROOT / "src")
    out = await run_bench(
        "pair.py", src, src, "--sessions", "3", "--rounds", "1", "--starts", "--watch", "event"
    )
    lines = out.splitlines()
    assert "watch event" in lines[0]
    assert "A µs/answer" in lines[1] and "B µs/answer" in lines[1]
    a_us, b_us, ratio = map(float, lines[3].split()[1:4])
    assert a_us > 200 and b_us > 200  # a start and an end: far more than a delta's CPU
    assert ratio == pytest.approx(b_us / a_us, abs=0.002)
    assert lines[4].startswith("median B/A: ") and "CPU per answer" in lines[4]


async def test_pair_bench_streams_through_ingest_with_via_ingest() -> None:
    src = str(ROOT / "src")
    out = await run_bench(
        "pair.py", src, src, "--sessions", "3", "--tokens", "500", "--rate", "200",
        "--rounds", "1", "--watch", "event", "--via", "ingest", limit_s=180,
    )  # fmt: skip
    lines = out.splitlines()
    assert "watch event, via ingest" in lines[0]
    a_us, b_us, ratio, a_p99, b_p99 = map(float, lines[3].split()[1:])
    assert a_us > 0 and b_us > 0 and ratio == pytest.approx(b_us / a_us, abs=0.002)
    assert a_p99 > 0 and b_p99 > 0  # each delta timed from its own feeder's line
    assert lines[4].startswith("median B/A: ")


async def test_pair_bench_refuses_a_load_too_short_to_measure() -> None:
    src = str(ROOT / "src")
    code, out, err = await ran("pair.py", src, src, "--tokens", "50")
    assert code != 0 and out == b""
    assert "must stream together for a second" in err.decode()
    assert "Traceback" not in err.decode()


async def test_follow_bench_reads_the_busy_server_and_each_follower_for_each_build(
    postgres: PostgresServer,  # Postgres is installed (the bench starts its own)
) -> None:
    src = str(ROOT / "src")
    out = await run_bench(
        "follow.py", "--sessions", "2", "--followers", "2", "--rounds", "2", "--tokens", "20",
        "--rate", "200", "--builds", src, src, limit_s=240,
    )  # fmt: skip
    lines = out.splitlines()
    assert lines[0].endswith("2 idle servers following")
    assert lines[1].split() == ["build", "round", "busy", "ms/s", "follower", "1", "follower", "2"]
    rows = [line.split() for line in lines[3:7]]
    assert [row[:2] for row in rows] == [[src, "1"], [src, "1"], [src, "2"], [src, "2"]]
    # the busy server's CPU is read; a follower's may be under a clock tick in so short a run
    assert all(float(row[2]) > 0 and float(row[3]) >= 0 and float(row[4]) >= 0 for row in rows)
    assert lines[7].startswith(f"{src}: median busy ") and lines[7].endswith(" ms/s")


async def test_follow_bench_refuses_a_folder_without_partwire(tmp_path: Path) -> None:
    code, _, err = await ran("follow.py", "--builds", str(tmp_path))
    assert code == 2 and f"--builds: {tmp_path} holds no partwire package" in err.decode()
