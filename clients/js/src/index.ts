/**
 * partwire's SessionEvent reducer: the same rules as `partwire.protocol.blocks.reduce_session_event`
 * in Python, so every client (and the server's tests) rebuild one session's state identically.
 *
 * An event is `{id, type, payload, context: {sessionId, conversationId, source, timestamp}}`.
 * `reduceSessionEvent(state, event)` changes `state` in place and returns it.
 */

export type BlockType = "text" | "thinking" | "tool_use" | "tool_result" | "image";

export interface Block {
  id: string;
  messageId: string;
  role: string;
  type: BlockType;
  status: "pending" | "complete";
  text?: string;
  toolUseId?: string;
  name?: string;
  input?: Record<string, unknown>;
  content?: string;
  isError?: boolean;
  mime?: string;
  url?: string;
}

export interface SessionEventContext {
  sessionId: string;
  conversationId: string;
  source: "user" | "assistant" | "tool" | "system";
  timestamp: number;
}

export interface SessionEvent {
  id: string;
  type: string;
  payload: Record<string, any>;
  context: SessionEventContext;
}

export interface SessionState {
  blocks: Block[];
  status: Record<string, unknown>;
  metadata: Record<string, unknown> | null;
  queries: Record<string, string>;
  subagents: Record<string, string>;
  files: Record<string, string>;
  transcript: Record<string, string>;
  environment: string | null;
  initialized: Record<string, unknown> | null;
  options: Record<string, unknown>;
  errors: string[];
  logs: string[];
  lastEventId: string | null;
}

export function emptyState(): SessionState {
  return {
    blocks: [],
    status: { type: "idle" },
    metadata: null,
    queries: {},
    subagents: {},
    files: {},
    transcript: {},
    environment: null,
    initialized: null,
    options: {},
    errors: [],
    logs: [],
    lastEventId: null,
  };
}

const BLOCK_EVENTS = new Set(["block:upsert", "block:delta"]);

/** Whether the event changes the conversation's blocks (the transcript a UI draws). */
export function isConversationEvent(event: Pick<SessionEvent, "type">): boolean {
  return BLOCK_EVENTS.has(event.type) || event.type === "session:idle";
}

// families whose events record a verb under a key: query:started → queries[queryId] = "started"
const KEYED: Record<string, [keyof SessionState, string]> = {
  query: ["queries", "queryId"],
  subagent: ["subagents", "sessionId"],
  file: ["files", "path"],
  transcript: ["transcript", "messageId"],
};

export function reduceSessionEvent(state: SessionState, event: SessionEvent): SessionState {
  const { type, payload } = event;
  state.lastEventId = event.id;
  const colon = type.indexOf(":");
  const family = colon < 0 ? type : type.slice(0, colon);
  const verb = colon < 0 ? "" : type.slice(colon + 1);
  const keyed = KEYED[family];
  if (keyed) {
    const [name, key] = keyed;
    (state[name] as Record<string, string>)[String(payload[key])] = verb;
  } else if (family === "ee") {
    state.environment = verb;
  } else if (family === "block" || type === "session:idle") {
    reduceBlocks(state.blocks, type, payload);
  } else if (type === "status") {
    state.status = payload.status;
  } else if (type === "metadata:update") {
    state.metadata = payload;
  } else if (type === "session:initialized") {
    state.initialized = payload;
  } else if (type === "options:update") {
    state.options = { ...state.options, ...payload };
  } else if (type === "error" || type === "log") {
    (type === "error" ? state.errors : state.logs).push(payload.message);
  }
  return state;
}

function reduceBlocks(blocks: Block[], type: string, payload: Record<string, any>): void {
  if (type === "block:upsert") {
    const block = { ...(payload.block as Block) }; // a copy: deltas change the state, never the event
    const index = blocks.findIndex((b) => b.id === block.id);
    if (index >= 0) {
      blocks[index] = block;
      return;
    }
    const after = payload.after === undefined ? -1 : blocks.findIndex((b) => b.id === payload.after);
    blocks.splice(after < 0 ? blocks.length : after + 1, 0, block);
  } else if (type === "block:delta") {
    for (const block of blocks) {
      if (block.id === payload.blockId && block.text !== undefined) block.text += payload.delta;
    }
  } else {
    // session:idle: whatever is still pending is as final as it will get
    for (const block of blocks) block.status = "complete";
  }
}

/** Reduce a list of events (of any sessions) into one state per session. */
export function reduceAll(events: SessionEvent[]): Record<string, SessionState> {
  const states: Record<string, SessionState> = {};
  for (const event of events) {
    const id = event.context.sessionId;
    states[id] = reduceSessionEvent(states[id] ?? emptyState(), event);
  }
  return states;
}
