"""Session statuses: this server's, and with servers sharing a database, every server's
as the log tells them."""

from __future__ import annotations

from typing import Any, cast

from partwire.schema.event import SessionStatusChanged, SessionStatusProps
from partwire.schema.session import SessionStatus, StatusBusy, StatusIdle, StatusRetry
from partwire.session.status import StatusTracker
from partwire.storage.base import Store


class _Published:
    def __init__(self) -> None:
        self.events: list[Any] = []

    async def publish(self, events: list[Any]) -> None:
        self.events += events


def _changed(session_id: str, status: SessionStatus, n: int) -> Any:
    props = SessionStatusProps(session_id=session_id, status=status)
    return SessionStatusChanged(props).with_id(f"evt_{n}")


async def test_other_servers_statuses_show_until_they_go_idle() -> None:
    tracker = StatusTracker(cast(Store, _Published()))
    retry = StatusRetry.model_validate({"type": "retry", "attempt": 1, "message": "m", "next": 5})
    tracker.observe(_changed("ses_b", StatusBusy(), 1))
    tracker.observe(_changed("ses_c", retry, 2))
    await tracker.busy("ses_a")
    assert {sid: s.type for sid, s in tracker.active().items()} == {
        "ses_b": "busy", "ses_c": "retry", "ses_a": "busy",
    }  # fmt: skip
    assert tracker.get("ses_c").type == "retry" and tracker.get("ses_d").type == "idle"
    tracker.observe(_changed("ses_b", StatusIdle(), 3))
    await tracker.idle("ses_a")  # our own idle wins over our busy event still on its way
    tracker.observe(_changed("ses_a", StatusBusy(), 4))
    tracker.observe(_changed("ses_a", StatusIdle(), 5))
    assert list(tracker.active()) == ["ses_c"]
