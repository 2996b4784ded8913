/**
 * The seed's shared conversation reducer over `{blocks, subagents}`, with its semantics
 * (the same rules as `partwire.protocol.session_state.reduce_session_event` in Python):
 * upsert merges into the block with its id or appends it with the type's defaults, a
 * delta appends to `content`, `context.conversationId` routes to `main` or a sub-agent
 * (by toolUseId, then agentId), `subagent:spawned/completed` keep the sub-agent's block and
 * conversation, and `session:idle` completes pending blocks and drops empty text ones.
 * A new state is returned; the one given is never changed.
 */
import {
  isConversationEvent,
  type AnySessionEvent,
  type BlockLifecycleStatus,
  type ConversationBlock,
  type PartialConversationBlock,
  type SessionEvent,
  type SubagentBlock,
  type SubagentStatus,
} from "./session-events.js";

export interface SubagentState {
  toolUseId: string;
  agentId?: string;
  blocks: ConversationBlock[];
  status: SubagentStatus;
  prompt?: string;
  output?: string;
  durationMs?: number;
}

export interface SessionConversationState {
  blocks: ConversationBlock[];
  subagents: SubagentState[];
}

export function createInitialConversationState(): SessionConversationState {
  return { blocks: [], subagents: [] };
}

type Change = (blocks: ConversationBlock[]) => ConversationBlock[] | null;

const DEFAULTS: Record<ConversationBlock["type"], Record<string, unknown>> = {
  assistant_text: { content: "" },
  thinking: { content: "" },
  user_message: { content: "" },
  tool_use: { toolName: "", toolUseId: "", input: {} },
  tool_result: { toolUseId: "", output: null, isError: false },
  system: { subtype: "status", message: "" },
  subagent: { input: "" },
  error: { message: "" },
  skill_load: { skillName: "", content: "" },
};

export function findSubagentIndex(state: SessionConversationState, ref: string): number {
  const byTool = state.subagents.findIndex((s) => s.toolUseId === ref);
  return byTool >= 0 ? byTool : state.subagents.findIndex((s) => s.agentId === ref);
}

export function findSubagent(state: SessionConversationState, ref: string): SubagentState | undefined {
  return state.subagents[findSubagentIndex(state, ref)];
}

export function reduceSessionEvent(state: SessionConversationState, event: AnySessionEvent): SessionConversationState {
  if (!isConversationEvent(event)) return state;
  const conversation = event.context.conversationId ?? "main";
  switch (event.type) {
    case "block:upsert": {
      const partial = event.payload.block;
      return inConversation(state, conversation, (blocks) => upsert(blocks, partial), true);
    }
    case "block:delta": {
      const { blockId, delta } = event.payload;
      if (!delta) return state;
      return inConversation(state, conversation, (blocks) => append(blocks, blockId, delta), true);
    }
    case "subagent:spawned":
      return spawned(state, event, conversation);
    case "subagent:completed":
      return completed(state, event);
    default:
      return inConversation(state, conversation, finishIdle, false);
  }
}

function inConversation(
  state: SessionConversationState,
  conversation: string,
  change: Change,
  create: boolean,
): SessionConversationState {
  if (conversation === "main") {
    const blocks = change(state.blocks);
    return blocks === null ? state : { ...state, blocks };
  }
  const index = findSubagentIndex(state, conversation);
  if (index < 0) {
    const blocks = create ? change([]) : null;
    if (!blocks || blocks.length === 0) return state;
    return { ...state, subagents: [...state.subagents, { toolUseId: conversation, blocks, status: "running" }] };
  }
  const subagent = state.subagents[index]!;
  const blocks = change(subagent.blocks);
  if (blocks === null) return state;
  const subagents = [...state.subagents];
  subagents[index] = { ...subagent, blocks };
  return { ...state, subagents };
}

function upsert(blocks: ConversationBlock[], partial: PartialConversationBlock): ConversationBlock[] {
  const index = blocks.findIndex((b) => b.id === partial.id);
  const out = [...blocks];
  if (index >= 0) {
    out[index] = { ...blocks[index], ...partial } as ConversationBlock;
  } else {
    const base = { timestamp: new Date().toISOString(), status: "pending", ...DEFAULTS[partial.type] };
    out.push({ ...base, ...partial } as ConversationBlock);
  }
  return out;
}

function append(blocks: ConversationBlock[], blockId: string, delta: string): ConversationBlock[] | null {
  const index = blocks.findIndex((b) => b.id === blockId);
  const block = blocks[index];
  if (!block || !("content" in block)) return null;
  const out = [...blocks];
  out[index] = { ...block, content: String(block.content ?? "") + delta } as ConversationBlock;
  return out;
}

function emptyText(block: ConversationBlock): boolean {
  if (block.type !== "assistant_text" && block.type !== "thinking") return false;
  return !block.content || block.content.trim() === "";
}

function finishIdle(blocks: ConversationBlock[]): ConversationBlock[] | null {
  if (!blocks.some((b) => b.status === "pending" || emptyText(b))) return null;
  return blocks
    .filter((b) => !emptyText(b))
    .map((b) => (b.status === "pending" ? { ...b, status: "complete" as BlockLifecycleStatus } : b));
}

function spawned(
  state: SessionConversationState,
  event: SessionEvent<"subagent:spawned">,
  conversation: string,
): SessionConversationState {
  const { toolUseId, agentId, prompt, subagentType } = event.payload;
  const index = findSubagentIndex(state, toolUseId);
  if (index >= 0) {
    const existing = state.subagents[index]!;
    if (!agentId || existing.agentId) return state;
    const subagents = [...state.subagents];
    subagents[index] = { ...existing, agentId };
    return { ...state, subagents };
  }
  const block: SubagentBlock = {
    id: `subagent-block-${toolUseId}`,
    type: "subagent",
    timestamp: event.context.timestamp ?? new Date().toISOString(),
    status: "pending",
    toolUseId,
    input: prompt,
  };
  if (subagentType !== undefined) block.name = subagentType;
  const entry: SubagentState = { toolUseId, blocks: [], status: "running", prompt };
  if (agentId) entry.agentId = agentId;
  const parent = conversation === "main" ? -1 : findSubagentIndex(state, conversation);
  if (parent >= 0) {
    const subagents = [...state.subagents];
    subagents[parent] = { ...subagents[parent]!, blocks: [...subagents[parent]!.blocks, block] };
    return { ...state, subagents: [...subagents, entry] };
  }
  return { blocks: [...state.blocks, block], subagents: [...state.subagents, entry] };
}

function completed(state: SessionConversationState, event: SessionEvent<"subagent:completed">): SessionConversationState {
  const { toolUseId, agentId, status, output, durationMs } = event.payload;
  const done = status === "completed";
  const final: Partial<SubagentBlock> = { status: done ? "complete" : "error" };
  if (output !== undefined) final.output = output;
  if (durationMs !== undefined) final.durationMs = durationMs;
  if (agentId) final.subagentId = `agent-${agentId}`;
  const finish: Change = (blocks) => {
    const index = blocks.findIndex((b) => b.type === "subagent" && b.toolUseId === toolUseId);
    if (index < 0) return null;
    const out = [...blocks];
    out[index] = { ...blocks[index], ...final } as ConversationBlock;
    return out;
  };
  const changed = finish(state.blocks);
  let next: SessionConversationState = changed === null ? state : { ...state, blocks: changed };
  if (changed === null) {
    for (const subagent of state.subagents) next = inConversation(next, subagent.toolUseId, finish, false);
  }
  const index = findSubagentIndex(next, toolUseId);
  if (index < 0) return next;
  const entry: SubagentState = { ...next.subagents[index]!, status: done ? "success" : "error" };
  if (agentId) entry.agentId = agentId;
  if (output !== undefined) entry.output = output;
  if (durationMs !== undefined) entry.durationMs = durationMs;
  const subagents = [...next.subagents];
  subagents[index] = entry;
  return { ...next, subagents };
}
