"""A configured provider does not slow the start: its SDKs load after the port is bound."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = """
import asyncio, sys
from pathlib import Path
from partwire.config import load_settings
from partwire.server.app import create_app

SDKS = ("openai", "anthropic", "pydantic_ai", "partwire.providers.openai_chat")
env = {sys.argv[3]: "sk-test"}
settings = load_settings(project_dir=Path(sys.argv[1]), data_dir=Path(sys.argv[2]), env=env)

async def main():
    runtime = create_app(settings).state.runtime
    await runtime.start()
    print("started:", [m for m in SDKS if m in sys.modules])
    runtime.warm_up()
    await runtime._warming
    print("warmed up:", [m for m in SDKS if m in sys.modules])
    await runtime.stop()

asyncio.run(main())
"""


@pytest.mark.parametrize(
    ("key", "warmed"),
    [
        # Chat Completions need no SDK at all: only our own client loads
        ("OPENAI_API_KEY", "['partwire.providers.openai_chat']"),
        ("ANTHROPIC_API_KEY", "['anthropic', 'pydantic_ai']"),
    ],
)
def test_sdks_load_after_the_start_not_during_it(
    project: Path, tmp_path: Path, key: str, warmed: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(project), str(tmp_path / "data"), key],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "started: []",
        f"warmed up: {warmed}",  # only what a provider uses
    ]


LOADED_ON_USE = (
    "socketio", "engineio", "aiohttp", "partwire.builder", "partwire.session.recorder",
    "partwire.session.recording",
    "partwire.schema.frames", "partwire.schema.ingest", "partwire.protocol.blocks",
    "partwire.schema.session_events", "partwire.protocol.session_state",
    "partwire.protocol.conversation",
    "partwire.protocol.partframes", "ag_ui", "partwire.protocol.agui", "acp",
    "httpx", "regex", "tree_sitter", "tree_sitter_bash",  # webfetch, searches, bash commands
)  # fmt: skip


def test_what_only_some_requests_need_loads_on_first_use(project: Path, tmp_path: Path) -> None:
    """Socket.IO, the external-loop recorder, the frame and block adapters, AG-UI's
    models, ACP, webfetch's HTTP client, the pattern engine and the bash grammar stay out
    of the start: they load with the first request that needs them."""
    script = (
        "import sys\nfrom pathlib import Path\nfrom partwire.config import load_settings\n"
        "from partwire.server.app import create_app\n"
        "create_app(load_settings(project_dir=Path(sys.argv[1]), data_dir=Path(sys.argv[2])))\n"
        f"print([m for m in {LOADED_ON_USE!r} if m in sys.modules])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(project), str(tmp_path / "data")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


UNUSED_SDK_PARTS = """
import sys
from partwire.providers.configured import leave_out_unused_sdk_modules, warm_up
if sys.argv[1] == "openai-first":
    import openai
leave_out_unused_sdk_modules()
warm_up({"openai-compatible", "anthropic"})
import openai
print("aiohttp" in sys.modules)
try:
    openai.DefaultAioHttpClient()
except RuntimeError as exc:
    print("refused:", "aiohttp" in str(exc))
"""


def _run_unused_sdk_parts(case: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", UNUSED_SDK_PARTS, case],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_serve_leaves_out_the_sdks_aiohttp_clients() -> None:
    """``partwire serve`` marks the SDKs' optional aiohttp clients missing before any SDK
    loads (~9 MB it never uses): both SDKs still import, and asking for that client says
    what is missing."""
    assert _run_unused_sdk_parts("fresh") == ["False", "refused: True"]


def test_an_sdk_loaded_before_is_left_as_it_is() -> None:
    """Too late once the SDK is imported: its aiohttp client stays usable."""
    lines = _run_unused_sdk_parts("openai-first")
    assert lines[0] == "True"
    assert lines[1:] != ["refused: True"]
