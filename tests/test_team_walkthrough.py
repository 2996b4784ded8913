"""The README's "Running partwire for a team", run as written: three servers on Postgres
and Redis behind nginx, users and tokens, sharing, a link, metrics and traces. Only the
addresses at its top are this test's own."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import sys
from pathlib import Path

from tests.conftest import require_installed
from tests.postgres_server import PostgresServer
from tests.redis_server import RedisServer
from tests.served import free_port
from tests.test_tracing import receiver  # noqa: F401 (a fixture)

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def walkthrough() -> str:
    section = README.split("## Running partwire for a team", 1)[1].split("\n## ", 1)[0]
    return section.split("```sh", 1)[1].split("```", 1)[0]


async def test_the_readme_team_walkthrough_runs(
    postgres: PostgresServer,
    redis_server: RedisServer,
    receiver: tuple[str, list[str]],  # noqa: F811
    project: Path,
    tmp_path: Path,
) -> None:
    nginx = shutil.which("nginx") or (
        "/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK) else None
    )
    require_installed(nginx, "nginx")
    require_installed(shutil.which("curl"), "curl")
    assert nginx is not None
    endpoint, spans = receiver
    state = tmp_path / "state"
    state.mkdir()
    bin_dir = tmp_path / "bin"  # `partwire` and `nginx` as the script calls them
    bin_dir.mkdir()
    (bin_dir / "partwire").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m partwire "$@"\n')
    (bin_dir / "partwire").chmod(0o755)
    (bin_dir / "nginx").symlink_to(nginx)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "PARTWIRE_DATABASE_URL": postgres.new_database(),
        "PARTWIRE_REDIS_URL": redis_server.url().removesuffix("/0") + "/3",
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_BSP_SCHEDULE_DELAY": "50",
        "PARTWIRE_DEMO_DELAY_MS": "0",
        "PARTWIRE_CONFIG_DIR": str(tmp_path / "config"),
        "STATE": str(state),
        "PORTS": " ".join(str(free_port()) for _ in range(3)),
        "PROXY": str(free_port()),
        "CONF": str(ROOT / "deploy" / "nginx.conf"),
        "COLUMNS": "200",
        "NO_COLOR": "1",
    }
    stop = (
        'trap \'nginx -p "$STATE/nginx" -c "$STATE/nginx/nginx.conf" -s stop 2>/dev/null; '
        "kill $(jobs -p) 2>/dev/null; wait' EXIT\nset -euo pipefail\n"
    )
    process = await asyncio.create_subprocess_exec(
        "bash", "-c", stop + walkthrough(),
        cwd=project, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 180)
    said = out.decode()
    assert process.returncode == 0, f"{said}\n{err.decode()}"
    assert "bob before: 404" in said and "bob after: 200" in said
    link = re.search(r"^link: 303 (\S+)$", said, re.M)
    assert link is not None and "/#/session/ses_" in link.group(1), said
    tokens = [line for line in said.splitlines() if line.startswith("partwire_tokens_total")]
    assert tokens and any('model="demo"' in line for line in tokens), said
    for _ in range(100):  # the exporter sends in the background
        if "invoke_agent build" in spans:
            break
        await asyncio.sleep(0.05)
    assert "invoke_agent build" in spans and any(n.startswith("chat") for n in spans), spans
