"""Clients that ask for a long replay and never read, on every transport: the server's
memory stays bounded (it never holds a session's history whole, per client), its other
requests are answered meanwhile, and what the clients took is let go when they leave (a
third round of them reuses it rather than growing). Runs bench/replay.py scaled down:
20,000 logged events and 8 stalled clients per transport, three times."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

TRANSPORTS = ("event", "frames", "aisdk", "agui", "ws", "socketio", "v2")
# Per transport, with 8 clients: before the one cursor, a whole history per client took
# +66 to +160 MB here (AG-UI, /ws, Socket.IO, the AI SDK), and /global/health waited
# up to 1.3 s.
MAX_GROWTH_MB = 30.0
MAX_HEALTH_MS = 200.0
MAX_AGAIN_MB = 10.0  # how much higher the third round may peak than the first two


@pytest.fixture(scope="module")
def table() -> dict[str, list[str]]:
    """One run of the bench for every transport (a server, a session, then each row)."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "replay.py"), "--events", "20000",
         "--transport", "all", "--clients", "8", "--watch-s", "0.5"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = [line.split("|")[1:-1] for line in done.stdout.splitlines() if line.startswith("|  ")]
    return {cells[0].strip(): [c.strip() for c in cells] for cells in rows}


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_stalled_clients_take_bounded_memory(
    table: dict[str, list[str]], transport: str
) -> None:
    cells = table[transport]
    growth, health_ms, again = float(cells[5]), float(cells[7]), float(cells[8])
    assert growth < MAX_GROWTH_MB, f"{transport}: +{growth} MB with 8 stalled clients"
    assert health_ms < MAX_HEALTH_MS, f"{transport}: /global/health took {health_ms} ms"
    assert again < MAX_AGAIN_MB, f"{transport}: a third round took {again} MB more"
