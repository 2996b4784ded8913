// Typed calls to the partwire HTTP API (same origin; Basic auth, if any, is the browser's).
import type {
  Agent,
  Comparison,
  MessageWithParts,
  ModelRef,
  PermissionRequest,
  QuestionRequest,
  Session,
  SessionStatus,
  Todo,
} from "./types";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** The project directory this page serves (`?directory=` in its address), else the
 * server's own; every request names it, as opencode's clients do. */
export const directory = new URLSearchParams(location.search).get("directory") ?? "";

async function call(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<Response> {
  const headers: Record<string, string> = {};
  if (directory) headers["x-opencode-directory"] = encodeURIComponent(directory);
  const init: RequestInit = { method, headers, signal };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    headers["content-type"] = "application/json";
  }
  const response = await fetch(path, init);
  if (!response.ok) {
    let message = `${method} ${path}: HTTP ${response.status}`;
    try {
      const error = (await response.json()) as { name?: string; data?: { message?: string } };
      message = error.data?.message ?? error.name ?? message;
    } catch {
      // not JSON: keep the status line
    }
    throw new ApiError(response.status, message);
  }
  return response;
}

async function json<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
  const response = await call(method, path, body, signal);
  return (await response.json()) as T;
}

export interface ProviderList {
  all: { id: string; name: string; models: Record<string, { id: string; name: string }> }[];
  default: Record<string, string>;
  connected: string[];
}

export interface Project {
  id: string;
  worktree: string;
  name?: string;
  sandboxes: string[];
  time: { created: number; updated: number };
}

/** The directory a project entry stands for: a folder inside a work tree, or the tree. */
export function projectDirectory(project: Project): string {
  return project.sandboxes[0] ?? project.worktree;
}

export interface PromptPart {
  type: "text" | "file";
  text?: string;
  mime?: string;
  url?: string;
  filename?: string;
  source?: unknown;
}

export const api = {
  sessions: () => json<Session[]>("GET", "/session"),
  session: (id: string) => json<Session>("GET", `/session/${id}`),
  statuses: () => json<Record<string, SessionStatus>>("GET", "/session/status"),
  share: (id: string) => json<Session>("POST", `/session/${id}/share`),
  unshare: (id: string) => json<Session>("DELETE", `/session/${id}/share`),
  whoami: () => json<{ name: string; scope: string; user?: string; shared?: string }>("GET", "/user"),
  createSession: (title?: string) => json<Session>("POST", "/session", title ? { title } : {}),
  renameSession: (id: string, title: string) => json<Session>("PATCH", `/session/${id}`, { title }),
  deleteSession: (id: string) => json<boolean>("DELETE", `/session/${id}`),
  abort: (id: string) => json<boolean>("POST", `/session/${id}/abort`),
  /** A new session: the messages before ``messageID``, or everything up to a part (with it, or "before"). */
  fork: (id: string, at: { messageID?: string; partID?: string; cut?: "after" | "before" }) =>
    json<Session>("POST", `/session/${id}/fork`, at),
  revert: (id: string, messageID: string, partID?: string) =>
    json<Session>("POST", `/session/${id}/revert`, partID ? { messageID, partID } : { messageID }),
  unrevert: (id: string) => json<Session>("POST", `/session/${id}/unrevert`),
  /** Session ``a`` against ``b``, prompt by prompt (as `partwire eval a b --format json`). */
  compare: (a: string, b: string) => json<Comparison>("GET", `/session/${a}/compare?other=${encodeURIComponent(b)}`),
  todos: (id: string) => json<Todo[]>("GET", `/session/${id}/todo`),
  async messages(id: string, limit?: number): Promise<{ messages: MessageWithParts[]; lastEventID: string | null }> {
    const query = limit ? `?limit=${limit}` : "";
    const response = await call("GET", `/session/${id}/message${query}`);
    return {
      messages: (await response.json()) as MessageWithParts[],
      lastEventID: response.headers.get("x-last-event-id"),
    };
  },
  prompt: (id: string, parts: PromptPart[], model?: ModelRef, agent?: string) =>
    call("POST", `/session/${id}/prompt_async`, { parts, model, agent }),
  permissions: () => json<PermissionRequest[]>("GET", "/permission"),
  replyPermission: (id: string, reply: "once" | "always" | "reject") =>
    json<boolean>("POST", `/permission/${id}/reply`, { reply }),
  questions: () => json<QuestionRequest[]>("GET", "/question"),
  replyQuestion: (id: string, answers: string[][]) =>
    json<boolean>("POST", `/question/${id}/reply`, { answers }),
  rejectQuestion: (id: string) => json<boolean>("POST", `/question/${id}/reject`),
  providers: () => json<ProviderList>("GET", "/provider"),
  agents: () => json<Agent[]>("GET", "/agent"),
  findFiles: (query: string, signal?: AbortSignal) =>
    json<string[]>("GET", `/find/file?query=${encodeURIComponent(query)}&limit=20`, undefined, signal),
  path: () => json<{ directory: string; worktree: string }>("GET", "/path"),
  projects: () => json<Project[]>("GET", "/project"),
};
