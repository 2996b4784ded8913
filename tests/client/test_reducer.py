"""The reducer on hand-built events: upserts in id order, deltas, removals."""

from __future__ import annotations

from partwire.client.reducer import ClientState, reduce
from partwire.schema.event import (
    MessagePartDelta,
    MessagePartRemoved,
    MessagePartUpdated,
    MessageRef,
    MessageRemoved,
    PartDeltaProps,
    PartRef,
    PartUpdatedProps,
    SessionDeleted,
    SessionInfo,
    SessionStatusChanged,
    SessionStatusProps,
)
from partwire.schema.part import StreamTime, TextPart
from partwire.schema.session import Session, SessionTime, StatusBusy


def _part(pid: str, text: str = "") -> TextPart:
    return TextPart(
        id=pid, session_id="ses_1", message_id="msg_1", text=text, time=StreamTime(start=1)
    )


def _updated(part: TextPart, n: int) -> object:
    return MessagePartUpdated(PartUpdatedProps(session_id="ses_1", part=part, time=1)).with_id(
        f"evt_{n}"
    )


def test_parts_keep_arrival_order_whatever_their_ids_and_updates_replace() -> None:
    state = ClientState()
    for n, pid in enumerate(["prt_3", "prt_1", "prt_2"]):
        reduce(state, _updated(_part(pid), n))  # type: ignore[arg-type]
    reduce(state, _updated(_part("prt_2", "new"), 9))  # type: ignore[arg-type]
    assert [(p.id, p.text) for p in state.part["msg_1"]] == [  # type: ignore[union-attr]
        ("prt_3", ""), ("prt_1", ""), ("prt_2", "new")
    ]  # fmt: skip
    assert state.last_event_id == "evt_9"


def test_deltas_append_to_the_named_field_and_unknown_parts_are_ignored() -> None:
    state = ClientState()
    reduce(state, _updated(_part("prt_1", "a"), 1))  # type: ignore[arg-type]
    for n, (pid, delta) in enumerate([("prt_1", "b"), ("prt_x", "?"), ("prt_1", "c")]):
        props = PartDeltaProps(
            session_id="ses_1", message_id="msg_1", part_id=pid, field="text", delta=delta
        )
        reduce(state, MessagePartDelta(props).with_id(f"evt_{n + 2}"))
    assert state.part["msg_1"][0].text == "abc"  # type: ignore[union-attr]


def test_removals_and_session_deletion() -> None:
    state = ClientState()
    reduce(state, _updated(_part("prt_1"), 1))  # type: ignore[arg-type]
    reduce(state, _updated(_part("prt_2"), 2))  # type: ignore[arg-type]
    ref = PartRef(session_id="ses_1", message_id="msg_1", part_id="prt_1")
    reduce(state, MessagePartRemoved(ref).with_id("evt_3"))
    assert [p.id for p in state.part["msg_1"]] == ["prt_2"]
    reduce(
        state, MessageRemoved(MessageRef(session_id="ses_1", message_id="msg_1")).with_id("evt_4")
    )
    assert "msg_1" not in state.part
    session = Session(
        id="ses_1", slug="s", project_id="p", directory="/", title="t", version="0",
        time=SessionTime(created=1, updated=1),
    )  # fmt: skip
    reduce(
        state,
        SessionStatusChanged(SessionStatusProps(session_id="ses_1", status=StatusBusy())).with_id(
            "evt_5"
        ),
    )
    assert state.session_status["ses_1"].type == "busy"
    reduce(state, SessionDeleted(SessionInfo(session_id="ses_1", info=session)).with_id("evt_6"))
    assert "ses_1" not in state.session_status
