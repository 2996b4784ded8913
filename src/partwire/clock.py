"""The one clock every part, message and event time is read from."""

from __future__ import annotations

import time


def now_ms() -> int:
    """Milliseconds since the epoch, as opencode's wire times are."""
    return int(time.time() * 1000)
