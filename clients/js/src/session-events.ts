/**
 * Seed 004's SessionEvents and ConversationBlocks, declared from the seed's own types
 * (`session-events.ts` and `conversation-blocks.ts` of its system) so a client written
 * against them compiles here unchanged, plus the seed's `createSessionEvent`,
 * `enrichEventContext` and the type guards. partwire adds `id` to each event it sends:
 * the cursor to resume after it (`subscribe {sessionId, since: id}`).
 */

// ---- blocks -------------------------------------------------------------------------------

export interface TextContent {
  type: "text";
  text: string;
}

export interface ImageContent {
  type: "image";
  source: { type: "base64" | "url"; data: string; mediaType?: string };
}

export type ContentPart = TextContent | ImageContent;
export type MessageContent = string | ContentPart[];
export type BlockLifecycleStatus = "pending" | "complete" | "error";

export interface BaseBlock {
  id: string;
  timestamp: string;
  status?: BlockLifecycleStatus;
  metadata?: Record<string, unknown>;
}

export interface UserMessageBlock extends BaseBlock {
  type: "user_message";
  content: MessageContent;
}

export interface AssistantTextBlock extends BaseBlock {
  type: "assistant_text";
  content: string;
  model?: string;
}

export interface ToolUseBlock extends BaseBlock {
  type: "tool_use";
  toolName: string;
  toolUseId: string;
  input: Record<string, unknown>;
  displayName?: string;
  description?: string;
}

export interface ToolResultBlock extends BaseBlock {
  type: "tool_result";
  toolUseId: string;
  output: unknown;
  isError: boolean;
  durationMs?: number;
  renderOutputAsMarkdown?: boolean;
}

export interface ThinkingBlock extends BaseBlock {
  type: "thinking";
  content: string;
  summary?: string;
}

export interface SystemBlock extends BaseBlock {
  type: "system";
  subtype: "session_start" | "session_end" | "error" | "status" | "hook_response" | "auth_status" | "log";
  message: string;
}

export type SubagentStatus = "pending" | "running" | "success" | "error";

export interface SubagentBlock extends BaseBlock {
  type: "subagent";
  subagentId?: string;
  toolUseId?: string;
  name?: string;
  input: string;
  description?: string;
  output?: string;
  durationMs?: number;
}

export interface ErrorBlock extends BaseBlock {
  type: "error";
  message: string;
  code?: string;
}

export interface SkillLoadBlock extends BaseBlock {
  type: "skill_load";
  skillName: string;
  content: string;
}

export type ConversationBlock =
  | UserMessageBlock
  | AssistantTextBlock
  | ToolUseBlock
  | ToolResultBlock
  | ThinkingBlock
  | SystemBlock
  | SubagentBlock
  | ErrorBlock
  | SkillLoadBlock;

export type PartialBlock<T extends ConversationBlock> = Pick<T, "id" | "type"> & Partial<Omit<T, "id" | "type">>;

export type PartialConversationBlock =
  | PartialBlock<UserMessageBlock>
  | PartialBlock<AssistantTextBlock>
  | PartialBlock<ToolUseBlock>
  | PartialBlock<ToolResultBlock>
  | PartialBlock<ThinkingBlock>
  | PartialBlock<SystemBlock>
  | PartialBlock<SubagentBlock>
  | PartialBlock<ErrorBlock>
  | PartialBlock<SkillLoadBlock>;

// ---- events -------------------------------------------------------------------------------

export interface SessionEventContext {
  sessionId: string;
  conversationId?: string;
  source?: "runner" | "server";
  timestamp?: string;
}

export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
  thinkingTokens?: number;
  totalTokens: number;
}

export interface SessionMetadata {
  usage?: TokenUsage;
  costUSD?: number;
  model?: string;
  [key: string]: unknown;
}

export type LogLevel = "debug" | "info" | "warn" | "error";
export type ExecutionEnvironmentStatus = "inactive" | "starting" | "ready" | "error" | "terminated";

export interface ExecutionEnvironmentState {
  id?: string;
  status: ExecutionEnvironmentStatus;
  statusMessage?: string;
  lastHealthCheck?: number;
  restartCount?: number;
  lastError?: { message: string; code?: string; timestamp: number };
}

export interface ActiveQueryState {
  startedAt: number;
}

export interface WorkspaceFile {
  path: string;
  content: string | undefined;
}

export interface SessionEventPayloads {
  "block:upsert": { block: PartialConversationBlock };
  "block:delta": { blockId: string; delta: string };
  "metadata:update": { metadata: SessionMetadata };
  status: {
    runtime: {
      isLoaded: boolean;
      executionEnvironment: Partial<ExecutionEnvironmentState> | null;
      activeQuery?: ActiveQueryState;
    };
  };
  "file:created": { file: WorkspaceFile };
  "file:modified": { file: WorkspaceFile };
  "file:deleted": { path: string };
  "transcript:changed": { content: string };
  "transcript:written": Record<string, never>;
  "subagent:spawned": {
    toolUseId: string;
    agentId?: string;
    prompt: string;
    subagentType?: string;
    description?: string;
  };
  "subagent:completed": {
    toolUseId: string;
    agentId?: string;
    status: "completed" | "failed";
    output?: string;
    durationMs?: number;
  };
  log: { level?: LogLevel; message: string; data?: Record<string, unknown> };
  error: { message: string; code?: string; data?: Record<string, unknown> };
  "options:update": { options: { model?: string } };
  "session:initialized": { isNew: boolean; hasTranscript: boolean; workspaceFileCount: number; blockCount: number };
  "session:idle": { sessionId: string };
  "ee:creating": { statusMessage?: string };
  "ee:ready": { eeId: string };
  "ee:terminated": { reason: "manual" | "unhealthy" | "idle" };
  "ee:error": { message: string; code?: string };
  "ee:health_check": { timestamp: number };
  "query:started": { message: string };
  "query:completed": { durationMs: number };
  "query:failed": { error: string };
}

export type SessionEventType = keyof SessionEventPayloads;

export type SessionEvent<K extends SessionEventType = SessionEventType> = {
  type: K;
  payload: SessionEventPayloads[K];
  context: SessionEventContext;
  /** partwire's: the cursor to resume after this event */
  id?: string;
};

export type AnySessionEvent = { [K in SessionEventType]: SessionEvent<K> }[SessionEventType];

export function createSessionEvent<K extends SessionEventType>(
  type: K,
  payload: SessionEventPayloads[K],
  context: Partial<SessionEventContext> = {},
): SessionEvent<K> {
  return {
    type,
    payload,
    context: {
      sessionId: context.sessionId ?? "",
      conversationId: context.conversationId,
      source: context.source,
      timestamp: context.timestamp ?? new Date().toISOString(),
    },
  };
}

export function enrichEventContext<K extends SessionEventType>(
  event: SessionEvent<K>,
  additions: Partial<SessionEventContext>,
): SessionEvent<K> {
  return { ...event, context: { ...event.context, ...additions } };
}

export const CONVERSATION_EVENT_TYPES = [
  "block:upsert",
  "block:delta",
  "subagent:spawned",
  "subagent:completed",
  "session:idle",
] as const satisfies readonly SessionEventType[];

/** Whether the shared reducer folds this event (blocks, sub-agents, idle). */
export function isConversationEvent(event: Pick<AnySessionEvent, "type">): boolean {
  return (CONVERSATION_EVENT_TYPES as readonly string[]).includes(event.type);
}

export function isBlockEvent(event: Pick<AnySessionEvent, "type">): boolean {
  return event.type.startsWith("block:");
}

export function isFileEvent(event: Pick<AnySessionEvent, "type">): boolean {
  return event.type.startsWith("file:");
}

export function isSubagentEvent(event: Pick<AnySessionEvent, "type">): boolean {
  return event.type.startsWith("subagent:");
}
