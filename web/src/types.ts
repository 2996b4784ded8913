// Wire shapes of the partwire / opencode HTTP API, as far as the UI reads them.

export interface Session {
  id: string;
  title: string;
  directory: string;
  parentID?: string;
  time: { created: number; updated: number; compacting?: number };
  revert?: { messageID: string; partID?: string };
  cost?: number;
  tokens?: Tokens;
  metadata?: {
    budget?: Budget;
    forkedFrom?: { sessionID: string; messageID?: string; partID?: string };
    replayOf?: { sessionID: string; model: string; tools: string; prompts: number };
  };
  share?: { url: string };
}

/** What a session may spend (partwire's): the limit is each amount times (1 + granted). */
export interface Budget {
  tokens?: number;
  cost?: number;
  granted?: number;
}

export type SessionStatus =
  | { type: "idle" }
  | { type: "busy" }
  | { type: "retry"; attempt: number; message: string; next: number };

export interface Tokens {
  input: number;
  output: number;
  reasoning: number;
  cache: { read: number; write: number };
}

export interface NamedError {
  name: string;
  data?: { message?: string; [key: string]: unknown };
}

export interface Message {
  id: string;
  sessionID: string;
  role: "user" | "assistant";
  time: { created: number; completed?: number };
  parentID?: string;
  agent?: string;
  modelID?: string;
  providerID?: string;
  model?: { providerID: string; modelID: string };
  path?: { cwd: string; root: string };
  cost?: number;
  tokens?: Tokens;
  error?: NamedError;
}

interface PartBase {
  id: string;
  sessionID: string;
  messageID: string;
}

export interface TextPart extends PartBase {
  type: "text";
  text: string;
  synthetic?: boolean;
  time?: { start: number; end?: number };
}
export interface ReasoningPart extends PartBase {
  type: "reasoning";
  text: string;
  time: { start: number; end?: number };
}
export interface FilePart extends PartBase {
  type: "file";
  mime: string;
  filename?: string;
  url: string;
  source?: { path?: string };
}
export interface ToolState {
  status: "pending" | "running" | "completed" | "error";
  input: Record<string, unknown>;
  raw?: string;
  title?: string;
  output?: string;
  error?: string;
  metadata?: Record<string, unknown>;
  time?: { start: number; end?: number };
  attachments?: FilePart[];
}
export interface ToolPart extends PartBase {
  type: "tool";
  callID: string;
  tool: string;
  state: ToolState;
}
export interface StepFinishPart extends PartBase {
  type: "step-finish";
  reason: string;
  cost: number;
  tokens: Tokens;
}
export interface PatchPart extends PartBase {
  type: "patch";
  hash: string;
  files: string[];
}
export interface RetryPart extends PartBase {
  type: "retry";
  attempt: number;
  error: NamedError;
  time: { created: number };
}
export interface CompactionPart extends PartBase {
  type: "compaction";
  auto: boolean;
}
export interface AgentPart extends PartBase {
  type: "agent";
  name: string;
}
export interface SubtaskPart extends PartBase {
  type: "subtask";
  prompt: string;
  description: string;
  agent: string;
}
export interface OtherPart extends PartBase {
  type: "step-start" | "snapshot";
}

export type Part =
  | TextPart
  | ReasoningPart
  | FilePart
  | ToolPart
  | StepFinishPart
  | PatchPart
  | RetryPart
  | CompactionPart
  | AgentPart
  | SubtaskPart
  | OtherPart;

export interface MessageWithParts {
  info: Message;
  parts: Part[];
}

export interface ToolRef {
  messageID: string;
  callID: string;
}

export interface PermissionRequest {
  id: string;
  sessionID: string;
  permission: string;
  patterns: string[];
  metadata: Record<string, unknown>;
  always: string[];
  tool?: ToolRef;
}

export interface QuestionInfo {
  question: string;
  header: string;
  options: { label: string; description: string }[];
  multiple?: boolean;
  custom?: boolean;
}

export interface QuestionRequest {
  id: string;
  sessionID: string;
  questions: QuestionInfo[];
  tool?: ToolRef;
}

export interface Todo {
  content: string;
  status: "pending" | "in_progress" | "completed" | "cancelled";
  priority: string;
}

export interface WireEvent {
  id?: string;
  type: string;
  properties: Record<string, any>;
}

export interface Agent {
  name: string;
  description?: string;
  mode: "subagent" | "primary" | "all";
  hidden?: boolean;
  /** the model it answers with when a prompt names none */
  model?: ModelRef;
}

export interface ModelRef {
  providerID: string;
  modelID: string;
}

/** One prompt and what answered it, in a comparison. */
export interface Turn {
  prompt: string;
  text: string;
  calls: string[];
  errors: number;
  tokens: number;
  cost: number;
  first_output_ms: number | null;
  total_ms: number | null;
}

export interface TurnDiff {
  index: number;
  prompt: string;
  similarity: number;
  diverging: string[];
  a: Turn | null;
  b: Turn | null;
}

export interface Comparison {
  a: string;
  b: string;
  turns: TurnDiff[];
  totals: { prompts: number; similarity: number; diverging: number } & Record<string, number>;
}

/** One client following a session (partwire's session.presence). */
export interface Watcher {
  user: string;
  client: string;
  transport: string;
  since: number;
}
