"""The Chat Completions request body and how refusals are classified, without a server."""

from __future__ import annotations

import base64
import json

import pytest

from partwire.config import ProviderConfig
from partwire.errors import ProviderError
from partwire.providers import openai_chat
from partwire.providers.failures import retry_after_s, status_error
from partwire.providers.openai_chat import ChatClient, OpenAIChatModel, chat_body, encoded_body
from partwire.providers.stream import (
    AssistantTurn,
    FileRef,
    ModelRequest,
    ReasoningRecord,
    StreamStart,
    ToolCallRecord,
    ToolResultTurn,
    ToolSpec,
    UserTurn,
)

PIXEL = "data:image/png;base64,iVBORw0KGgo="


def _data(mime: str, payload: bytes) -> str:
    return f"data:{mime};base64,{base64.b64encode(payload).decode()}"


def test_a_conversation_maps_onto_chat_messages() -> None:
    request = ModelRequest(
        system="You are terse.",
        messages=(
            UserTurn(text="look", files=(FileRef(mime="image/png", url=PIXEL),)),
            AssistantTurn(
                text="reading",
                tool_calls=(ToolCallRecord("call_1", "read", {"path": "a.txt"}),),
                reasoning=(ReasoningRecord("first the file"),),
            ),
            ToolResultTurn(call_id="call_1", tool="read", output="hello"),
            ToolResultTurn(call_id="call_2", tool="bash", output="exit 1", is_error=True),
            AssistantTurn(text="", tool_calls=()),
            UserTurn(text="and now?"),
        ),
        tools=(ToolSpec("ls", "List", {"type": "object"}),),
    )
    body = chat_body("m-1", request)
    assert body["model"] == "m-1" and body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    system, user, assistant, result, failed, empty, last = body["messages"]
    assert system == {"role": "system", "content": "You are terse."}
    assert user["content"] == [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": PIXEL}},
    ]
    # reasoning goes back in think tags, ahead of the text; arguments as JSON text
    assert assistant["content"] == "<think>\nfirst the file\n</think>\n\nreading"
    [call] = assistant["tool_calls"]
    assert call == {
        "id": "call_1",
        "type": "function",
        "function": {"name": "read", "arguments": '{"path": "a.txt"}'},
    }
    assert result == {"role": "tool", "tool_call_id": "call_1", "content": "hello"}
    assert failed["content"] == "Error: exit 1"
    assert empty == {"role": "assistant", "content": ""}
    assert last == {"role": "user", "content": "and now?"}
    # an object schema without properties gets an empty one; the caller's dict is untouched
    [tool] = body["tools"]
    assert tool["function"]["parameters"] == {"type": "object", "properties": {}}
    assert request.tools[0].parameters == {"type": "object"}
    assert body["tool_choice"] == "auto"
    json.dumps(body)  # all of it is JSON


def test_the_bytes_sent_are_the_body_and_the_tools_json_is_made_once_a_set() -> None:
    tools = (ToolSpec("ls", "List", {"type": "object"}), ToolSpec("cat", "Print", {}))
    first = ModelRequest(system="s", messages=(UserTurn(text="hi"),), tools=tools)
    later = ModelRequest(system="s", messages=(UserTurn(text="and now?"),), tools=tools)
    for request in (first, later):
        body = chat_body("m", request)
        assert json.loads(encoded_body(body, request.tools)) == body
    made = [entry for entry in openai_chat._TOOLS_JSON.values() if entry[0] is tools]
    assert len(made) == 1  # the second step's request reused the first one's tools JSON
    bare = chat_body("m", ModelRequest(system="s", messages=(UserTurn(text="hi"),)))
    assert json.loads(encoded_body(bare, ())) == bare


def test_a_request_without_tools_sends_no_tool_fields() -> None:
    body = chat_body("m", ModelRequest(system="s", messages=(UserTurn(text="hi"),)))
    assert "tools" not in body and "tool_choice" not in body


def test_attached_files_by_kind() -> None:
    pdf = _data("application/pdf", b"%PDF-1.4")
    text = _data("text/plain", "héllo".encode())
    files = (
        FileRef(mime="application/pdf", url=pdf, filename="a.pdf"),
        FileRef(mime="text/plain", url=text, filename="notes.txt"),
        FileRef(mime="application/pdf", url="https://example.com/b.pdf", filename="b.pdf"),
    )
    body = chat_body("m", ModelRequest(system="s", messages=(UserTurn(text="t", files=files),)))
    _, as_file, as_text, named = body["messages"][1]["content"]
    assert as_file == {"type": "file", "file": {"filename": "a.pdf", "file_data": pdf}}
    assert as_text == {
        "type": "text",
        "text": '<file name="notes.txt" type="text/plain">\nhéllo\n</file>',
    }
    # the API takes no URL for a document: the model is told where it is
    assert named == {"type": "text", "text": "[attached file b.pdf: https://example.com/b.pdf]"}


@pytest.mark.parametrize(
    ("status", "body", "headers", "kind", "retryable", "wait"),
    [
        (429, {"error": {"message": "Slow down", "code": "rate_limit"}}, {"retry-after": "2"},
         "api", True, 2.0),
        (503, {"error": {"message": "busy"}}, {"retry-after-ms": "250"}, "api", True, 0.25),
        (500, None, {}, "api", True, None),
        # out of credit: a 429 that waiting does not cure
        (429, {"error": {"message": "quota", "code": "insufficient_quota"}}, {}, "api", False,
         None),
        (400, {"error": {"message": "x", "code": "context_length_exceeded"}}, {},
         "context_overflow", False, None),
        (400, {"error": {"message": "This model's maximum context length is 8192 tokens."}}, {},
         "context_overflow", False, None),
        (401, {"error": {"message": "Incorrect API key"}}, {}, "auth", False, None),
        (403, {"error": "forbidden"}, {}, "auth", False, None),
        (400, {"error": {"message": "flagged", "code": "content_filter"}}, {}, "content_filter",
         False, None),
        (400, {"error": {"message": "bad tool schema"}}, {}, "api", False, None),
    ],
)  # fmt: skip
def test_error_statuses_are_classified(
    status: int,
    body: object,
    headers: dict[str, str],
    kind: str,
    retryable: bool,
    wait: float | None,
) -> None:
    error = status_error("p", status, body, headers)
    assert (error.kind, error.retryable, error.retry_after_s) == (kind, retryable, wait)
    assert error.status_code == status
    if kind == "auth":
        assert error.message.startswith("authentication failed for provider p")


def test_an_error_body_that_is_not_json_is_quoted() -> None:
    error = status_error("p", 502, None, {}, "<html>Bad gateway</html>\n")
    assert error.message == "<html>Bad gateway</html>" and error.retryable
    assert status_error("p", 502, None, {}).message == "HTTP 502"


def test_retry_after_as_an_http_date() -> None:
    when = "Wed, 21 Oct 2026 07:28:05 GMT"
    from email.utils import parsedate_to_datetime

    now = parsedate_to_datetime(when).timestamp() - 3
    assert retry_after_s({"retry-after": when}, now=now) == pytest.approx(3)
    assert retry_after_s({"retry-after": "soon"}) is None
    assert retry_after_s({}) is None


def test_the_key_goes_in_the_header_only_when_there_is_one() -> None:
    keyed = ChatClient(ProviderConfig(id="p", api="openai", api_key="sk-1", headers={"X-A": "1"}))
    assert keyed.headers["Authorization"] == "Bearer sk-1" and keyed.headers["X-A"] == "1"
    assert keyed.url == "https://api.openai.com/v1/chat/completions"
    local = ChatClient(
        ProviderConfig(id="l", api="openai-compatible", base_url="http://127.0.0.1:9/v1/")
    )
    assert "Authorization" not in local.headers
    assert local.url == "http://127.0.0.1:9/v1/chat/completions"


async def test_a_blocked_provider_is_refused_before_anything_is_sent() -> None:
    config = ProviderConfig(id="p", api="openai", api_key="sk-1", blocked="key would leak")
    stream = OpenAIChatModel(ChatClient(config), "m").stream(
        ModelRequest(system="s", messages=(UserTurn(text="hi"),))
    )
    assert isinstance(await anext(stream), StreamStart)
    with pytest.raises(ProviderError, match="key would leak"):
        await anext(stream)
