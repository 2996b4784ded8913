"""Identifiers: a prefix, then a time-ordered body, so sorting ids sorts by creation.

The body is 14 hex digits of ``time_ms * 4096 + counter`` (56 bits: no wrap-around
for centuries, unlike a 48-bit field, which wraps every ~795 days) followed by 12
random base62 characters. The counter keeps ids strictly monotonic inside a process even
when many are made in the same millisecond (or the clock steps back). Session ids
are descending (bitwise complement of the time part), so the newest sorts first.
"""

from __future__ import annotations

import contextlib
import re
import secrets
import threading
import time
from typing import Literal

Prefix = Literal["ses", "msg", "prt", "evt", "per", "que", "edr", "call", "ins", "pty", "tok"]

_RANDOM_LENGTH = 12
_TIME_DIGITS = 14
_TIME_MASK = (1 << (4 * 14)) - 1

_lock = threading.Lock()
_last_value = 0


def _next_value() -> int:
    global _last_value
    with _lock:
        candidate = int(time.time() * 1000) * 0x1000
        _last_value = max(candidate, _last_value + 1)
        return _last_value


# token_urlsafe's alphabet is ours plus "-" and "_"; those two become letters. The time
# and counter part already make ids unique within a process: the random part only keeps
# ids of different processes apart, and a slightly uneven letter costs nothing there.
_URLSAFE_TO_BASE62 = str.maketrans("-_", "xz")


def _random_suffix() -> str:
    """12 random base62 characters, drawn in one call (this runs once per event)."""
    return secrets.token_urlsafe(9).translate(_URLSAFE_TO_BASE62)


def ascending(prefix: Prefix) -> str:
    """A new id that sorts after every id this process made before it."""
    return f"{prefix}_{_next_value() & _TIME_MASK:014x}{_random_suffix()}"


def descending(prefix: Prefix) -> str:
    """A new id that sorts before every id this process made before it."""
    return f"{prefix}_{~_next_value() & _TIME_MASK:014x}{_random_suffix()}"


# What a client may send as its own id: the prefix, "_", then letters and digits. That
# admits ids of opencode's scheme and ours; order never depends on them (history is
# ordered by the store's insertion sequence).
CLIENT_MESSAGE_ID = r"^msg_[0-9A-Za-z]{1,64}$"
CLIENT_PART_ID = r"^prt_[0-9A-Za-z]{1,64}$"


def session_id() -> str:
    return descending("ses")


def message_id() -> str:
    return ascending("msg")


def part_id() -> str:
    return ascending("prt")


def event_id() -> str:
    return ascending("evt")


# ---- ids of logged events ----------------------------------------------------------------
#
# A logged event's id is its event log's epoch, then its sequence number in the log:
# ``evt_`` + 14 hex digits + 12 hex digits. It costs nothing to make, needs no index to
# look up, and sorts as the log does. The epoch tells one log from another (an id from
# another data dir is refused, not misread), and is above the time part of every id made
# before the log took this scheme, so older ids still sort first.
_LOGGED_EVENT = re.compile(r"evt_([0-9a-f]{14})([0-9a-f]{12})")


def log_epoch(after: str | None = None) -> int:
    """A new event log's epoch: now, and above the time part of the id ``after``."""
    value = _next_value() & _TIME_MASK
    if after is not None:
        with contextlib.suppress(ValueError):  # an id of another scheme says nothing here
            value = max(value, int(after.split("_", 1)[-1][:_TIME_DIGITS], 16) + 1)
    return value


def logged_event_id(epoch: int, seq: int) -> str:
    return f"evt_{epoch:014x}{seq:012x}"


def logged_event_seq(event_id: str, epoch: int) -> int | None:
    """The sequence number an id of the log with this epoch names; None for any other id."""
    found = _LOGGED_EVENT.fullmatch(event_id)
    if found is None or int(found.group(1), 16) != epoch:
        return None
    return int(found.group(2), 16)
