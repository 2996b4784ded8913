import assert from "node:assert/strict";
import { test } from "node:test";
import { emptyState, isConversationEvent, reduceSessionEvent, type SessionEvent } from "../src/index.js";

const context = { sessionId: "ses_1", conversationId: "ses_1", source: "assistant" as const, timestamp: 1 };
const event = (id: string, type: string, payload: Record<string, unknown>): SessionEvent => ({ id, type, payload, context });

test("blocks stream, complete and finalize on idle", () => {
  const state = emptyState();
  const text = { id: "prt_1", messageId: "msg_1", role: "assistant", type: "text", status: "pending", text: "" };
  reduceSessionEvent(state, event("e:0", "block:upsert", { block: text }));
  reduceSessionEvent(state, event("e:1", "block:delta", { blockId: "prt_1", delta: "Hel" }));
  reduceSessionEvent(state, event("e:2", "block:delta", { blockId: "prt_1", delta: "lo" }));
  assert.equal(state.blocks[0].text, "Hello");
  assert.equal(state.blocks[0].status, "pending");
  reduceSessionEvent(state, event("e:3", "session:idle", {}));
  assert.equal(state.blocks[0].status, "complete");
  assert.equal(state.lastEventId, "e:3");
});

test("keyed families, status and options", () => {
  const state = emptyState();
  reduceSessionEvent(state, event("a", "query:started", { queryId: "msg_u" }));
  reduceSessionEvent(state, event("b", "query:completed", { queryId: "msg_u" }));
  reduceSessionEvent(state, event("c", "file:created", { path: "/p/a.txt" }));
  reduceSessionEvent(state, event("d", "status", { status: { type: "busy" } }));
  reduceSessionEvent(state, event("e", "options:update", { title: "T" }));
  reduceSessionEvent(state, event("f", "ee:ready", { directory: "/p" }));
  assert.deepEqual(state.queries, { msg_u: "completed" });
  assert.deepEqual(state.files, { "/p/a.txt": "created" });
  assert.deepEqual(state.status, { type: "busy" });
  assert.equal(state.options.title, "T");
  assert.equal(state.environment, "ready");
  assert.equal(isConversationEvent({ type: "block:delta" }), true);
  assert.equal(isConversationEvent({ type: "status" }), false);
});

test("a tool result goes right after its call", () => {
  const state = emptyState();
  const use = (id: string) => ({ id, messageId: "m", role: "assistant", type: "tool_use", status: "pending" });
  reduceSessionEvent(state, event("a", "block:upsert", { block: use("p1") }));
  reduceSessionEvent(state, event("b", "block:upsert", { block: use("p2") }));
  const result = { id: "p1:result", messageId: "m", role: "tool", type: "tool_result", status: "complete" };
  reduceSessionEvent(state, event("c", "block:upsert", { block: result, after: "p1" }));
  assert.deepEqual(state.blocks.map((b) => b.id), ["p1", "p1:result", "p2"]);
});
