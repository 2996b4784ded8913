"""Claude Code's ``--output-format stream-json --include-partial-messages`` lines → ingest events.

Lines are the claude-agent-sdk message types:

- ``system`` ``init`` names the model: every message is stored as ``anthropic/<model>``;
- a ``user`` line holding the user's words starts a message that answers them (a
  ``start`` with the prompt); one holding ``tool_result`` blocks gives tool results;
- ``stream_event`` lines carry the Anthropic stream of each model call (converted as
  such); an ``assistant`` line repeats a message whole, so it is used only for messages
  whose stream was not seen (Claude Code run without partial messages);
- ``result`` reports the query's cost (``total_cost_usd``, sub-agents included): the
  query's last step carries it and every other step 0, so the stored cost is the
  reported one (a query with no result line is priced from the catalogue); an error
  result ends the message with it;
- a line with ``parent_tool_use_id`` belongs to the sub-agent that Task call runs: the
  same conversion, wrapped as ``subagent`` events of that call, so it becomes a child
  session linked from the call with its own messages and tool calls.
"""

from __future__ import annotations

from collections.abc import Mapping

from partwire.protocol.converters.anthropic import AnthropicConverter
from partwire.protocol.jsonread import JSONMap, as_map, list_of, map_of, number_of, text_of
from partwire.schema import ingest
from partwire.schema.base import JSON
from partwire.schema.ingest import IngestEvent
from partwire.schema.part import ModelRef


class _Thread:
    """One conversation of the stream: the main one, or a sub-agent's."""

    def __init__(self, sub: bool) -> None:
        self.sub = sub
        self.stream = AnthropicConverter(announce_model=False)  # init names it
        self.streamed: set[str] = set()  # message ids whose stream events were seen
        self.started = False  # a message is open
        self.held: ingest.StepFinish | None = None  # the newest step's end, held for the cost


class ClaudeCodeConverter:
    def __init__(self) -> None:
        self._model: ModelRef | None = None
        self._threads: dict[str, _Thread] = {}

    def feed(self, item: object) -> list[IngestEvent]:
        line = as_map(item)
        parent = text_of(line, "parent_tool_use_id")
        thread = self._threads.get(parent)
        if thread is None:
            thread = self._threads[parent] = _Thread(bool(parent))
        return _wrapped(parent, self._convert(line, thread))

    def end(self) -> list[IngestEvent]:
        out: list[IngestEvent] = []
        for parent, thread in self._threads.items():
            out += _wrapped(parent, self._release(thread, [*thread.stream.end()]))
        return out

    def _convert(self, line: JSONMap, thread: _Thread) -> list[IngestEvent]:
        kind = line.get("type")
        if kind == "system" and line.get("subtype") == "init" and text_of(line, "model"):
            self._model = ModelRef(provider_id="anthropic", model_id=text_of(line, "model"))
            return []
        if kind == "user":
            return self._user(map_of(line, "message"), thread)
        if kind == "result":
            return self._result(line, thread)
        if kind not in ("stream_event", "assistant"):
            return []
        out: list[IngestEvent] = []
        if not thread.started:  # an answer with no prompt in the stream (--prompt gives it)
            thread.started = True
            out.append(ingest.IngestStart(model=self._model))
        if kind == "stream_event":
            event = map_of(line, "event")
            if event.get("type") == "message_start":
                thread.streamed.add(str(map_of(event, "message").get("id")))
            return self._release(thread, [*out, *thread.stream.feed(event)])
        return self._release(thread, [*out, *self._whole(map_of(line, "message"), thread)])

    def _user(self, message: JSONMap, thread: _Thread) -> list[IngestEvent]:
        content = message.get("content")
        words = _text(content) if _is_prompt(content) else ""
        if words:  # the user's words: a new message answers them
            out = self._release(thread, [*thread.stream.end()], last=True)
            thread.started = True
            return [*out, ingest.IngestStart(prompt=words, model=self._model)]
        results: list[IngestEvent] = []
        for block in list_of(message, "content"):
            if isinstance(block, Mapping) and block.get("type") == "tool_result":
                results.append(
                    ingest.ToolResult(
                        call_id=str(block.get("tool_use_id")),
                        output=_text(block.get("content")),
                        is_error=bool(block.get("is_error")),
                    )
                )
        return self._release(thread, results)

    def _result(self, line: JSONMap, thread: _Thread) -> list[IngestEvent]:
        out = [*thread.stream.end()]
        cost = number_of(line, "total_cost_usd")
        out = self._release(thread, out, last=True, cost=cost)
        if line.get("is_error"):
            detail = text_of(line, "result") or text_of(line, "subtype") or "Claude Code failed"
            out.append(ingest.StreamError(message=detail))
        return out

    def _release(
        self,
        thread: _Thread,
        events: list[IngestEvent],
        *,
        last: bool = False,
        cost: float | None = None,
    ) -> list[IngestEvent]:
        """``events`` with each step's end held back until something follows it, so the
        query's last step can carry the reported cost (``last``: the query ended)."""
        if thread.sub:  # the query's reported cost covers its sub-agents: the parent has it
            return [
                e.model_copy(update={"cost": 0.0}) if isinstance(e, ingest.StepFinish) else e
                for e in events
            ]
        out: list[IngestEvent] = []
        for event in events:
            if thread.held is not None:
                out.append(thread.held.model_copy(update={"cost": 0.0}))
                thread.held = None
            if isinstance(event, ingest.StepFinish):
                thread.held = event
            else:
                out.append(event)
        if last and thread.held is not None:
            out.append(thread.held.model_copy(update={"cost": cost}))
            thread.held = None
        return out

    def _whole(self, message: JSONMap, thread: _Thread) -> list[IngestEvent]:
        if str(message.get("id")) in thread.streamed:
            return []
        events: list[JSONMap] = [
            {"type": "message_start", "message": {"id": message.get("id"), "usage": {}}}
        ]
        for index, block in enumerate(list_of(message, "content")):
            events.append({"type": "content_block_start", "index": index, "content_block": block})
            events.append({"type": "content_block_stop", "index": index})
        events.append(
            {
                "type": "message_delta",
                "delta": {"stop_reason": message.get("stop_reason")},
                "usage": map_of(message, "usage"),
            }
        )
        events.append({"type": "message_stop"})
        out: list[IngestEvent] = []
        for event in events:
            out += thread.stream.feed(event)
        return out


def _wrapped(parent: str, events: list[IngestEvent]) -> list[IngestEvent]:
    """A sub-agent's events (its lines name ``parent``, the Task call) as subagent events."""
    if not parent:
        return events
    return [ingest.SubagentEvent(call_id=parent, event=e) for e in events]


def _is_prompt(content: JSON) -> bool:
    """A user message of words (text), not of tool results."""
    if isinstance(content, str):
        return True
    blocks = content if isinstance(content, list) else []
    return bool(blocks) and all(isinstance(b, Mapping) and b.get("type") == "text" for b in blocks)


def _text(content: JSON) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(text_of(block, "text") for block in content if isinstance(block, Mapping))
    return "" if content is None else str(content)
