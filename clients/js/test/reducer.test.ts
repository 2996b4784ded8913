import assert from "node:assert/strict";
import { test } from "node:test";
import {
  createInitialConversationState,
  createSessionEvent,
  emptyActivity,
  enrichEventContext,
  isConversationEvent,
  reduceActivity,
  reduceSessionEvent,
  renderConversation,
  type AnySessionEvent,
  type SessionConversationState,
} from "../src/index.js";

const at = "2026-01-01T00:00:00.000Z";
const main = { conversationId: "main", source: "runner" as const, timestamp: at };

function fold(events: AnySessionEvent[]): SessionConversationState {
  return events.reduce(reduceSessionEvent, createInitialConversationState());
}

test("createSessionEvent fills the context; enrichEventContext adds to it", () => {
  const event = createSessionEvent("block:delta", { blockId: "b", delta: "x" }, { conversationId: "main" });
  assert.equal(event.context.sessionId, "");
  assert.match(event.context.timestamp ?? "", /^\d{4}-\d\d-\d\dT/);
  const enriched = enrichEventContext(event, { sessionId: "ses_1" });
  assert.deepEqual(enriched.payload, event.payload);
  assert.equal(enriched.context.sessionId, "ses_1");
  assert.equal(enriched.context.conversationId, "main");
  assert.equal(event.context.sessionId, ""); // the original is untouched
});

test("upsert creates with defaults, delta appends to content, idle completes and drops empty text", () => {
  const start = createInitialConversationState();
  const state = fold([
    createSessionEvent("block:upsert", { block: { id: "t1", type: "assistant_text" } }, main),
    createSessionEvent("block:delta", { blockId: "t1", delta: "Hel" }, main),
    createSessionEvent("block:delta", { blockId: "t1", delta: "lo" }, main),
    createSessionEvent("block:upsert", { block: { id: "t2", type: "thinking", status: "pending" } }, main),
    createSessionEvent("session:idle", { sessionId: "ses_1" }, main),
  ]);
  assert.deepEqual(start, { blocks: [], subagents: [] }); // never changed
  assert.equal(state.blocks.length, 1);
  const [text] = state.blocks;
  assert.equal(text?.type, "assistant_text");
  assert.equal(text?.type === "assistant_text" && text.content, "Hello");
  assert.equal(text?.status, "complete");
});

test("an upsert merges into the block with its id", () => {
  const use = { id: "u1", type: "tool_use" as const, toolName: "read", toolUseId: "c1", input: {}, status: "pending" as const, timestamp: at };
  const state = fold([
    createSessionEvent("block:upsert", { block: use }, main),
    createSessionEvent("block:upsert", { block: { id: "u1", type: "tool_use", status: "complete" } }, main),
  ]);
  assert.deepEqual(state.blocks, [{ ...use, status: "complete" }]);
});

test("a sub-agent has its block where it was spawned and its own conversation", () => {
  const child = { conversationId: "ses_child", source: "runner" as const, timestamp: at };
  const state = fold([
    createSessionEvent("subagent:spawned", { toolUseId: "c1", prompt: "look", subagentType: "general" }, main),
    createSessionEvent("subagent:spawned", { toolUseId: "c1", agentId: "ses_child", prompt: "look" }, main),
    createSessionEvent("block:upsert", { block: { id: "s1", type: "assistant_text", content: "found it" } }, child),
    createSessionEvent("session:idle", { sessionId: "ses_child" }, child),
    createSessionEvent("subagent:completed", { toolUseId: "c1", agentId: "ses_child", status: "completed", output: "done", durationMs: 5 }, main),
  ]);
  assert.equal(state.subagents.length, 1);
  const [agent] = state.subagents;
  assert.equal(agent?.agentId, "ses_child");
  assert.equal(agent?.status, "success");
  assert.equal(agent?.blocks[0]?.status, "complete");
  const [block] = state.blocks;
  assert.ok(block?.type === "subagent");
  assert.equal(block.subagentId, "agent-ses_child");
  assert.equal(block.output, "done");
  assert.equal(block.name, "general");
  assert.equal(renderConversation(state), "subagent general: look [complete]\n  assistant: found it");
});

test("only conversation events are the reducer's; the activity fold takes the rest", () => {
  assert.equal(isConversationEvent({ type: "block:delta" }), true);
  assert.equal(isConversationEvent({ type: "status" }), false);
  const usage = { inputTokens: 3, outputTokens: 2, totalTokens: 5 };
  let activity = emptyActivity();
  activity = reduceActivity(activity, { ...createSessionEvent("metadata:update", { metadata: { usage, costUSD: 0.5 } }), id: "e1:0" });
  activity = reduceActivity(activity, createSessionEvent("file:created", { file: { path: "/p/a", content: undefined } }));
  activity = reduceActivity(activity, createSessionEvent("file:deleted", { path: "/p/b" }));
  activity = reduceActivity(activity, createSessionEvent("status", { runtime: { isLoaded: true, executionEnvironment: null, activeQuery: { startedAt: 1 } } }));
  assert.deepEqual(activity.metadata?.usage, usage);
  assert.deepEqual(activity.files, { "/p/a": "created", "/p/b": "deleted" });
  assert.equal(activity.busy, true);
  assert.equal(activity.lastEventId, "e1:0");
});
