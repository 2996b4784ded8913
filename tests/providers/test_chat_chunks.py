"""The lean Chat Completions decoder on chunk sequences the e2e mock does not send."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from partwire.providers.chat_chunks import ChunkDecoder, SseSplitter
from partwire.providers.stream import (
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    StreamEvent,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCall,
)


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def run(chunks: list[dict[str, Any]]) -> tuple[ChunkDecoder, list[StreamEvent]]:
    decoder = ChunkDecoder("openai")
    events: list[StreamEvent] = []
    for c in chunks:
        events += decoder.feed(c)
    return decoder, events + decoder.finish()


def texts(events: list[StreamEvent], kind: type) -> str:
    return "".join(e.delta for e in events if isinstance(e, kind))  # type: ignore[attr-defined]


def test_think_tags_split_across_deltas_become_reasoning() -> None:
    pieces = ["<th", "ink>pon", "dering</th", "ink>\n\nThe answer", " is 4."]
    _, events = run([chunk({"content": p}) for p in pieces])
    assert texts(events, ReasoningDelta) == "pondering"
    assert texts(events, TextDelta) == "The answer is 4."
    kinds = [type(e) for e in events]
    assert kinds.index(ReasoningEnd) < kinds.index(TextStart)


def test_text_that_only_looks_like_a_tag_stays_text() -> None:
    _, events = run([chunk({"content": p}) for p in ["<t", "able> is HTML"]])
    assert texts(events, TextDelta) == "<table> is HTML"
    assert not any(isinstance(e, ReasoningStart) for e in events)


def test_reasoning_field_then_text_closes_reasoning_first() -> None:
    decoder, events = run(
        [chunk({"reasoning": "hmm"}), chunk({"content": "Hi"}), chunk({}, "stop")]
    )
    assert [type(e) for e in events] == [
        ReasoningStart,
        ReasoningDelta,
        ReasoningEnd,
        TextStart,
        TextDelta,
        TextEnd,
    ]
    assert decoder.reason() == "stop"


def test_interleaved_parallel_tool_fragments_keep_their_own_arguments() -> None:
    def call(index: int, **fields: Any) -> dict[str, Any]:
        return chunk({"tool_calls": [{"index": index, **fields}]})

    decoder, events = run(
        [
            call(0, id="a", function={"name": "read", "arguments": '{"p'}),
            call(1, id="b", function={"name": "grep", "arguments": '{"q'}),
            call(0, function={"arguments": '": 1}'}),
            call(1, function={"arguments": '": 2}'}),
            chunk({}, "tool_calls"),
        ]
    )
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert [(c.call_id, c.tool_name, json.loads(c.input)) for c in calls] == [
        ("a", "read", {"p": 1}),
        ("b", "grep", {"q": 2}),
    ]
    assert decoder.reason() == "tool-calls"


def test_an_error_chunk_ends_the_stream_with_its_message() -> None:
    decoder, _ = run([chunk({"content": "par"}), {"error": {"message": "overloaded", "code": 529}}])
    assert decoder.error is not None and decoder.error.message == "overloaded"
    assert decoder.error.retryable


def test_a_chunk_is_read_as_json_reads_it_with_space_around_or_not() -> None:
    body = json.dumps(chunk({"content": "hi"}))
    for data in (body, f"  {body}\n", f"{body} "):
        decoder = ChunkDecoder("openai")
        assert texts(decoder.feed_data(data.encode()), TextDelta) == "hi"
        assert decoder.error is None


def test_a_chunk_with_more_after_its_value_is_not_json() -> None:
    for data in (b'{"choices": []} {"choices": []}', b'{"choices": []}x', b"{", b"\xff"):
        decoder = ChunkDecoder("openai")
        assert decoder.feed_data(data) == []
        assert decoder.error is not None and "not JSON" in decoder.error.message


NO_TAGS = st.text(st.characters(blacklist_characters="<"), min_size=1, max_size=12)


@given(st.lists(NO_TAGS, min_size=1, max_size=30), st.data())
def test_sse_bytes_split_anywhere_decode_to_the_same_text(words: list[str], data: Any) -> None:
    body = (
        b"".join(
            b"data: " + json.dumps(chunk({"content": w})).encode() + b"\r\n\r\n" for w in words
        )
        + b": keep-alive\n\ndata: [DONE]\n\n"
    )
    cuts = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=8)))
    splitter, decoder, events = SseSplitter(), ChunkDecoder("openai"), []
    for start, end in zip([0, *cuts], [*cuts, len(body)], strict=True):
        for payload in splitter.feed(body[start:end]):
            events += decoder.feed_data(payload)
    for payload in splitter.close():
        events += decoder.feed_data(payload)
    events += decoder.finish()
    assert texts(events, TextDelta) == "".join(words)
    assert sum(isinstance(e, TextStart) for e in events) == 1


SSE_LINE = st.sampled_from([b"data: {}", b"data:{}", b"data: ", b"data: a: b", b": ping", b"id: 7"])


@given(st.lists(st.lists(SSE_LINE, min_size=1, max_size=3), max_size=8), st.booleans())
def test_events_fed_one_a_read_split_as_the_whole_stream_does(
    events: list[list[bytes]], crlf: bool
) -> None:
    """A read that is one whole single-line event takes the short path; whatever the reads,
    the events' data are those of the stream read at once."""
    end = b"\r\n" if crlf else b"\n"
    reads = [end.join(lines) + end + end for lines in events]
    whole = SseSplitter()
    expected = whole.feed(b"".join(reads)) + whole.close()
    splitter = SseSplitter()
    got = [data for read in reads for data in splitter.feed(read)] + splitter.close()
    assert got == expected


class _FieldByField(ChunkDecoder):
    """The decoder without its way for a chunk of more text: each read field by field."""

    def _more_text(self, chunk: dict[str, Any]) -> str | None:
        return None


_DELTAS = st.sampled_from(
    [
        {"content": "a"},
        {"role": "assistant", "content": "b "},
        {"content": ""},
        {"content": None},
        {"content": "c", "reasoning_content": "r"},
        {"reasoning": "think"},
        {"content": "<think>x</think>y"},
        {"content": "d", "refusal": None},
        {"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "f", "arguments": "{"}}]},
        {},
    ]
)
_CHUNKS = st.one_of(
    _DELTAS.map(chunk),
    st.tuples(_DELTAS, st.sampled_from(["stop", "length"])).map(lambda d: chunk(*d)),
    _DELTAS.map(lambda d: {**chunk(d), "usage": {"prompt_tokens": 3, "completion_tokens": 2}}),
    _DELTAS.map(lambda d: {"choices": [{"index": 1, "delta": d}]}),
    _DELTAS.map(lambda d: {"choices": [chunk(d)["choices"][0], {"index": 1, "delta": d}]}),
    st.just({"choices": []}),
)


@given(st.lists(_CHUNKS, max_size=12))
def test_a_chunk_of_more_text_decodes_as_reading_it_field_by_field(
    chunks: list[dict[str, Any]],
) -> None:
    fast, slow = ChunkDecoder("openai"), _FieldByField("openai")
    for c in chunks:
        assert fast.feed(c) == slow.feed(c)
    assert fast.finish() == slow.finish()
    assert (fast.usage, fast.finish_reason, fast.reason()) == (
        slow.usage,
        slow.finish_reason,
        slow.reason(),
    )
