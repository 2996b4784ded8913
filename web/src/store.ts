// The client state and its reducer: the same rules as partwire.client.reducer, plus
// keyed subscriptions so a delta repaints only the message it belongs to.
import type {
  Message,
  MessageWithParts,
  Part,
  PermissionRequest,
  QuestionRequest,
  Session,
  SessionStatus,
  Todo,
  Watcher,
  WireEvent,
} from "./types";

/** While a part streams, its message repaints at most this often. */
export const STREAM_REPAINT_MS = 100;

type Listener = () => void;


/** Replace by id in place, or append: a new item is the newest in history order (the
 * server's insertion order, which is the order first events arrive in). Ids are never
 * compared: a client may mint them with another scheme. */
function upsert<T extends { id: string }>(items: T[], item: T): T[] {
  const next = items.slice();
  for (let index = next.length - 1; index >= 0; index--) {
    if (next[index].id === item.id) {
      next[index] = item;
      return next;
    }
  }
  next.push(item);
  return next;
}

export class Store {
  sessions = new Map<string, Session>();
  status = new Map<string, SessionStatus>();
  messages = new Map<string, Message[]>();
  parts = new Map<string, Part[]>();
  permissions = new Map<string, PermissionRequest>();
  questions = new Map<string, QuestionRequest>();
  todos = new Map<string, Todo[]>();
  /** Who follows each session, per server that told (session.presence). */
  presence = new Map<string, Map<string, Watcher[]>>();
  /** Who answered the ask raised by a tool call, by "messageID callID" (ask.answered). */
  answeredBy = new Map<string, string>();
  private askCalls = new Map<string, string>();
  connected = false;
  lastEventID: string | null = null;
  /** The last failed action, shown as a dismissible notice. */
  error = "";

  private loaded = new Set<string>();
  /** Sessions whose snapshot is on its way: their events wait here. */
  private loading = new Map<string, WireEvent[]>();
  private answered = new Set<string>();
  private listeners = new Map<string, Set<Listener>>();
  private versions = new Map<string, number>();
  private throttled = new Map<string, number>();
  private lastPaint = new Map<string, number>();

  // --- subscriptions -------------------------------------------------------

  subscribe(key: string, listener: Listener): () => void {
    let set = this.listeners.get(key);
    if (!set) this.listeners.set(key, (set = new Set()));
    set.add(listener);
    return () => set.delete(listener);
  }

  version(key: string): number {
    return this.versions.get(key) ?? 0;
  }

  notify(key: string): void {
    const pending = this.throttled.get(key);
    if (pending !== undefined) {
      clearTimeout(pending);
      this.throttled.delete(key);
    }
    this.lastPaint.set(key, performance.now());
    this.versions.set(key, this.version(key) + 1);
    for (const listener of this.listeners.get(key) ?? []) listener();
  }

  /** Notify at most once per STREAM_REPAINT_MS; a later notify() flushes at once. */
  notifySoon(key: string): void {
    if (this.throttled.has(key)) return;
    const since = performance.now() - (this.lastPaint.get(key) ?? -Infinity);
    const wait = Math.max(0, STREAM_REPAINT_MS - since);
    const timer = window.setTimeout(() => {
      this.throttled.delete(key);
      this.notify(key);
    }, wait);
    this.throttled.set(key, timer);
  }

  // --- snapshots -----------------------------------------------------------

  /** True once GET /session has answered: from then on an unknown id is a deleted one. */
  sessionsLoaded = false;

  setSessions(list: Session[]): void {
    this.sessions = new Map(list.map((s) => [s.id, s]));
    this.sessionsLoaded = true;
    this.notify("sessions");
  }

  setStatuses(statuses: Record<string, SessionStatus>): void {
    this.status = new Map(Object.entries(statuses));
    this.notify("status");
  }

  setPending(permissions: PermissionRequest[], questions: QuestionRequest[]): void {
    this.permissions = new Map(permissions.filter((p) => !this.answered.has(p.id)).map((p) => [p.id, p]));
    this.questions = new Map(questions.filter((q) => !this.answered.has(q.id)).map((q) => [q.id, q]));
    this.notify("asks");
  }

  isLoaded(sessionID: string): boolean {
    return this.loaded.has(sessionID);
  }

  /** Events for this session are held back until load() applies the snapshot. */
  beginLoad(sessionID: string): void {
    this.loaded.delete(sessionID);
    this.loading.set(sessionID, []);
  }

  load(sessionID: string, snapshot: MessageWithParts[], lastEventID: string | null): void {
    const pending = this.loading.get(sessionID);
    this.loading.delete(sessionID);
    for (const message of this.messages.get(sessionID) ?? []) this.parts.delete(message.id);
    this.messages.set(sessionID, snapshot.map((m) => m.info));
    for (const entry of snapshot) this.parts.set(entry.info.id, entry.parts);
    this.loaded.add(sessionID);
    for (const event of pending ?? []) {
      if (lastEventID === null || (event.id !== undefined && event.id > lastEventID)) this.apply(event);
    }
    this.notify(`session:${sessionID}`);
    for (const entry of snapshot) this.notify(`message:${entry.info.id}`);
  }

  /** Forget every loaded conversation (after a resync); the view loads its own again. */
  unloadAll(): void {
    this.loaded.clear();
    this.notify("reload");
  }

  reportError(message: string): void {
    this.error = message;
    this.notify("error");
  }

  setConnected(connected: boolean): void {
    if (this.connected === connected) return;
    this.connected = connected;
    this.notify("connection");
  }

  // --- the reducer -----------------------------------------------------------

  apply(event: WireEvent): void {
    const props = event.properties;
    const sessionID: string | undefined =
      props.sessionID ?? props.info?.sessionID ?? props.part?.sessionID;
    const scoped = event.type.startsWith("message.");
    if (scoped && sessionID !== undefined && !this.loaded.has(sessionID)) {
      this.loading.get(sessionID)?.push(event);
      return;
    }
    const handler = HANDLERS[event.type];
    if (handler) handler(this, props);
  }

  // used by HANDLERS
  messageUpdated(message: Message): void {
    const list = this.messages.get(message.sessionID) ?? [];
    const known = list.some((m) => m.id === message.id);
    this.messages.set(message.sessionID, upsert(list, message));
    if (!this.parts.has(message.id)) this.parts.set(message.id, []);
    this.notify(`message:${message.id}`);
    if (!known) this.notify(`session:${message.sessionID}`);
  }

  messageRemoved(sessionID: string, messageID: string): void {
    this.messages.set(
      sessionID,
      (this.messages.get(sessionID) ?? []).filter((m) => m.id !== messageID),
    );
    this.parts.delete(messageID);
    this.notify(`session:${sessionID}`);
  }

  partUpdated(part: Part): void {
    this.parts.set(part.messageID, upsert(this.parts.get(part.messageID) ?? [], part));
    this.notify(`message:${part.messageID}`);
  }

  partDelta(messageID: string, partID: string, field: string, delta: string): void {
    const parts = this.parts.get(messageID);
    if (!parts) return;
    const index = parts.findIndex((p) => p.id === partID);
    if (index < 0) return;
    const part = parts[index] as unknown as Record<string, unknown>;
    const next = parts.slice();
    next[index] = { ...part, [field]: String(part[field] ?? "") + delta } as unknown as Part;
    this.parts.set(messageID, next);
    this.notifySoon(`message:${messageID}`);
  }

  partRemoved(messageID: string, partID: string): void {
    this.parts.set(messageID, (this.parts.get(messageID) ?? []).filter((p) => p.id !== partID));
    this.notify(`message:${messageID}`);
  }

  sessionUpdated(session: Session): void {
    this.sessions.set(session.id, session);
    this.notify("sessions");
  }

  sessionDeleted(session: Session): void {
    this.sessions.delete(session.id);
    this.status.delete(session.id);
    for (const message of this.messages.get(session.id) ?? []) this.parts.delete(message.id);
    this.messages.delete(session.id);
    this.loaded.delete(session.id);
    this.notify("sessions");
  }

  statusChanged(sessionID: string, status: SessionStatus): void {
    this.status.set(sessionID, status);
    this.notify("status");
  }

  asked(kind: "permissions" | "questions", request: PermissionRequest | QuestionRequest): void {
    if (this.answered.has(request.id)) return;
    (this[kind] as Map<string, typeof request>).set(request.id, request);
    this.notify("asks");
  }

  replied(requestID: string): void {
    const ask = this.permissions.get(requestID) ?? this.questions.get(requestID);
    if (ask?.tool) this.askCalls.set(requestID, `${ask.tool.messageID} ${ask.tool.callID}`);
    this.answered.add(requestID);
    this.permissions.delete(requestID);
    this.questions.delete(requestID);
    this.notify("asks");
  }

  presenceChanged(sessionID: string, instanceID: string, watchers: Watcher[]): void {
    let servers = this.presence.get(sessionID);
    if (!servers) this.presence.set(sessionID, (servers = new Map()));
    servers.set(instanceID, watchers);
    this.notify(`presence:${sessionID}`);
  }

  /** Everyone following the session, on every server, once each. */
  watchersOf(sessionID: string): string[] {
    const names = new Set<string>();
    for (const watchers of this.presence.get(sessionID)?.values() ?? []) {
      for (const watcher of watchers) names.add(`${watcher.user} (${watcher.client})`);
    }
    return [...names].sort();
  }

  askAnswered(requestID: string, by: string, client?: string): void {
    const call = this.askCalls.get(requestID);
    if (!call) return;
    this.answeredBy.set(call, client ? `${by} (${client})` : by);
    this.notify("asks");
  }

  todosUpdated(sessionID: string, todos: Todo[]): void {
    this.todos.set(sessionID, todos);
    this.notify(`todo:${sessionID}`);
  }

  // --- lookups -------------------------------------------------------------

  /** The ask raised by this tool call: matched on message id and call id together, since
   * call ids repeat across messages (a provider may number them per response). */
  permissionFor(messageID: string, callID: string): PermissionRequest | undefined {
    for (const request of this.permissions.values()) {
      if (request.tool?.callID === callID && request.tool.messageID === messageID) return request;
    }
    return undefined;
  }

  questionFor(messageID: string, callID: string): QuestionRequest | undefined {
    for (const request of this.questions.values()) {
      if (request.tool?.callID === callID && request.tool.messageID === messageID) return request;
    }
    return undefined;
  }
}

type Handler = (store: Store, props: Record<string, any>) => void;

const HANDLERS: Record<string, Handler> = {
  "session.created": (s, p) => s.sessionUpdated(p.info),
  "session.updated": (s, p) => s.sessionUpdated(p.info),
  "session.deleted": (s, p) => s.sessionDeleted(p.info),
  "session.status": (s, p) => s.statusChanged(p.sessionID, p.status),
  "message.updated": (s, p) => s.messageUpdated(p.info),
  "message.removed": (s, p) => s.messageRemoved(p.sessionID, p.messageID),
  "message.part.updated": (s, p) => s.partUpdated(p.part),
  "message.part.delta": (s, p) => s.partDelta(p.messageID, p.partID, p.field, p.delta),
  "message.part.removed": (s, p) => s.partRemoved(p.messageID, p.partID),
  "permission.asked": (s, p) => s.asked("permissions", p as PermissionRequest),
  "permission.replied": (s, p) => s.replied(p.requestID),
  "question.asked": (s, p) => s.asked("questions", p as QuestionRequest),
  "question.replied": (s, p) => s.replied(p.requestID),
  "question.rejected": (s, p) => s.replied(p.requestID),
  "todo.updated": (s, p) => s.todosUpdated(p.sessionID, p.todos),
  "session.presence": (s, p) => s.presenceChanged(p.sessionID, p.instanceID, p.watchers),
  "ask.answered": (s, p) => s.askAnswered(p.requestID, p.by, p.client),
};

export const store = new Store();
