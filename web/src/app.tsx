// The layout: session list, the open conversation with its status, the prompt box.
import { useEffect, useState } from "preact/hooks";
import { ActivityBar } from "./activity";
import { api, type ApiError, type PromptPart } from "./api";
import { CompareView, compareFromHash, originOf } from "./compare";
import { Conversation } from "./conversation";
import { FirstRun } from "./firstrun";
import { loadSession } from "./loader";
import { useStore } from "./hooks";
import { PermissionPrompt, QuestionPrompt } from "./prompts";
import { ProjectSwitcher } from "./projects";
import { PromptBox } from "./promptbox";
import { SessionList } from "./sessions";
import { store } from "./store";
import { Checklist } from "./tools";
import type { ModelRef, Session, Tokens } from "./types";

function currentFromHash(): string | null {
  const match = /^#\/session\/(ses_\w+)/.exec(location.hash);
  return match ? match[1] : null;
}

function StatusPill({ sessionID }: { sessionID: string }) {
  useStore("status", "asks");
  const status = store.status.get(sessionID) ?? { type: "idle" as const };
  const asking =
    [...store.permissions.values()].some((p) => p.sessionID === sessionID) ||
    [...store.questions.values()].some((q) => q.sessionID === sessionID);
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    if (status.type !== "retry") return;
    const timer = setInterval(() => setNow(Date.now()), 250);
    return () => clearInterval(timer);
  }, [status.type]);
  let label: string = status.type;
  if (status.type === "retry") label = `retry #${status.attempt} in ${Math.max(0, Math.ceil((status.next - now) / 1000))} s`;
  if (asking && status.type === "busy") {
    return (
      <span class="status status-waiting" role="status" data-status="busy" data-waiting="true">
        waiting for you
      </span>
    );
  }
  return (
    <span class={`status status-${status.type}`} role="status" data-status={status.type} title={status.type === "retry" ? status.message : undefined}>
      {status.type === "busy" && <span class="spinner" aria-hidden="true" />}
      {label}
    </span>
  );
}

/** Asks of this session that no tool card on screen shows (no callID, or a call not loaded). */
function LooseAsks({ sessionID }: { sessionID: string }) {
  useStore("asks", `session:${sessionID}`);
  const shown = (tool?: { messageID: string; callID: string }) =>
    Boolean(
      tool &&
        document.querySelector(`[data-message="${CSS.escape(tool.messageID)}"][data-call="${CSS.escape(tool.callID)}"]`),
    );
  const permissions = [...store.permissions.values()].filter((p) => p.sessionID === sessionID && !shown(p.tool));
  const questions = [...store.questions.values()].filter((q) => q.sessionID === sessionID && !shown(q.tool));
  if (permissions.length + questions.length === 0) return null;
  return (
    <div class="loose-asks">
      {permissions.map((p) => <PermissionPrompt key={p.id} request={p} />)}
      {questions.map((q) => <QuestionPrompt key={q.id} request={q} />)}
    </div>
  );
}

/** The session's todo list while any item is open (todowrite keeps it current). */
function TodoPanel({ sessionID }: { sessionID: string }) {
  useStore(`todo:${sessionID}`);
  const [open, setOpen] = useState(false);
  const todos = store.todos.get(sessionID) ?? [];
  const done = todos.filter((t) => t.status === "completed" || t.status === "cancelled").length;
  if (todos.length === 0 || done === todos.length) return null;
  const current = todos.find((t) => t.status === "in_progress");
  return (
    <div class="todo-panel">
      <button type="button" class="todo-head" aria-expanded={open} onClick={() => setOpen(!open)}>
        ☑ Todos {done}/{todos.length}
        {current && <span class="todo-current"> — {current.content}</span>}
      </button>
      {open && <Checklist todos={todos} />}
    </div>
  );
}

function Banner() {
  useStore("connection");
  if (store.connected) return null;
  return (
    <div class="banner" role="alert" data-testid="disconnected">
      Disconnected from the server — reconnecting…
    </div>
  );
}

function open(id: string | null): void {
  location.hash = id ? `#/session/${id}` : "";
}

/** The session named in the URL: loaded when opened, left when it is deleted. */
function useCurrentSession(onNavigate: () => void): string | null {
  const [current, setCurrent] = useState<string | null>(currentFromHash());
  useEffect(() => {
    const onHash = () => {
      setCurrent(currentFromHash());
      onNavigate();
    };
    window.addEventListener("hashchange", onHash);
    setCurrent(currentFromHash()); // a change between the first render and this effect
    return () => window.removeEventListener("hashchange", onHash);
  }, []);
  useEffect(() => {
    if (!current) return;
    if (store.sessionsLoaded && !store.sessions.has(current)) lookUp(current);
    else if (!store.isLoaded(current)) loadSession(current).catch((e: Error) => store.reportError(e.message));
  });
  return current;
}

const lookingUp = new Set<string>();

/** A session the list does not hold: deleted (then leave it), or made a moment ago
 * elsewhere, before its event arrived (then it joins the list and opens). */
function lookUp(id: string): void {
  if (lookingUp.has(id)) return;
  lookingUp.add(id);
  api.session(id).then(
    (session) => {
      lookingUp.delete(id);
      store.sessionUpdated(session);
    },
    (e: ApiError) => {
      lookingUp.delete(id);
      if (e.status === 404) open(null);
      else store.reportError(e.message);
    },
  );
}

/** The two sessions ``#/compare/A/B`` names, following the hash. */
function useComparing(): [string, string] | null {
  const [pair, setPair] = useState(compareFromHash());
  useEffect(() => {
    const onHash = () => setPair(compareFromHash());
    window.addEventListener("hashchange", onHash);
    onHash(); // a change between the first render and this effect
    return () => window.removeEventListener("hashchange", onHash);
  }, []);
  return pair;
}

/** Send to the open session, or to a new one when none is open. */
async function sendPrompt(current: string | null, parts: PromptPart[], model: ModelRef | undefined, agent: string | undefined): Promise<void> {
  try {
    let id = current;
    if (!id) {
      const created = await api.createSession();
      store.sessionUpdated(created);
      id = created.id;
      open(id);
      await loadSession(id);
    }
    store.notify(`sent:${id}`);
    await api.prompt(id, parts, model, agent);
  } catch (e) {
    store.reportError((e as Error).message);
    throw e;
  }
}

function counted(tokens?: Tokens): number {
  return tokens ? tokens.input + tokens.output + tokens.reasoning + tokens.cache.read + tokens.cache.write : 0;
}

/** The session's spend against its own budget (its project's is not known here). */
function BudgetMeter({ session }: { session: Session }) {
  const budget = session.metadata?.budget;
  if (!budget || (budget.tokens === undefined && budget.cost === undefined)) return null;
  const times = 1 + (budget.granted ?? 0);
  const parts: string[] = [];
  if (budget.cost !== undefined) parts.push(`$${(session.cost ?? 0).toFixed(2)} of $${(budget.cost * times).toFixed(2)}`);
  if (budget.tokens !== undefined) parts.push(`${counted(session.tokens).toLocaleString()} of ${(budget.tokens * times).toLocaleString()} tokens`);
  return (
    <span class="budget-meter" data-testid="budget" title="Spent of this session's budget: past it, the run pauses and asks">
      {parts.join(" · ")}
    </span>
  );
}

/** Who else follows this session (session.presence), in every client and server. */
function Watchers({ sessionID }: { sessionID: string }) {
  useStore(`presence:${sessionID}`);
  const names = store.watchersOf(sessionID);
  if (names.length === 0) return null;
  return (
    <span class="watchers" data-testid="watchers" title="Following this session now">
      watching: {names.join(", ")}
    </span>
  );
}

/** A read-only link to the session, live without an account, until ended. */
function ShareButton({ sessionID }: { sessionID: string }) {
  const [link, setLink] = useState("");
  const share = () =>
    void api
      .share(sessionID)
      .then((s) => setLink(s.share?.url ?? ""))
      .catch((e: Error) => store.reportError(e.message));
  const end = () =>
    void api
      .unshare(sessionID)
      .then(() => setLink(""))
      .catch((e: Error) => store.reportError(e.message));
  if (!link) {
    return (
      <button type="button" class="share-btn" onClick={share}>
        Share
      </button>
    );
  }
  return (
    <span class="share-link">
      <input readOnly data-testid="share-link" value={link} onFocus={(e) => (e.target as HTMLInputElement).select()} />
      <button type="button" onClick={end}>
        End sharing
      </button>
    </span>
  );
}

function TopBar({ current, onMenu, readOnly }: { current: string | null; onMenu: () => void; readOnly: boolean }) {
  const session = current ? store.sessions.get(current) : undefined;
  const parent = session?.parentID ? store.sessions.get(session.parentID) : undefined;
  const origin = originOf(session);
  return (
    <header class="topbar">
      <button type="button" class="icon-btn menu-btn" aria-label="Sessions" onClick={onMenu}>
        ☰
      </button>
      <div class="title">
        {parent && (
          <a class="parent-link" href={`#/session/${parent.id}`}>
            {parent.title} ›{" "}
          </a>
        )}
        <span data-testid="session-title">{session?.title ?? (current ? "…" : "New session")}</span>
        {current && origin && (
          <a class="compare-link" href={`#/compare/${origin}/${current}`}>
            Compare with the original
          </a>
        )}
      </div>
      {session && <BudgetMeter session={session} />}
      {current && <Watchers sessionID={current} />}
      {current && !readOnly && <ShareButton key={current} sessionID={current} />}
      {readOnly && (
        <span class="read-only" data-testid="read-only">
          read-only
        </span>
      )}
      {current && <ActivityBar key={current} sessionID={current} />}
      {current && <StatusPill sessionID={current} />}
    </header>
  );
}

/** Whether this page may change nothing: a share link's guest, or a read-only token. */
function useReadOnly(): boolean {
  const [readOnly, setReadOnly] = useState(false);
  useEffect(() => {
    void api
      .whoami()
      .then((caller) => setReadOnly(Boolean(caller.shared) || caller.scope === "read"))
      .catch(() => undefined);
  }, []);
  return readOnly;
}

/** Esc stops the running session, unless something on screen used the key first
 * (a mention list, a rename, an image lightbox). */
function useStopOnEscape(busy: boolean, stop: () => void): void {
  useEffect(() => {
    if (!busy) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== "Escape" || e.defaultPrevented) return;
      const target = e.target as HTMLElement | null;
      if (target?.closest(".rename") || document.querySelector(".lightbox")) return;
      stop();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [busy, stop]);
}

export function App() {
  useStore("sessions", "status", "reload", "error");
  const [menu, setMenu] = useState(false);
  const current = useCurrentSession(() => setMenu(false));
  const comparing = useComparing();
  const setError = (message: string) => store.reportError(message);
  const status = current ? store.status.get(current) : undefined;
  const busy = status !== undefined && status.type !== "idle";
  const stop = () => current && void api.abort(current).catch((e: Error) => setError(e.message));
  const pick = (prompt: string) => void sendPrompt(current, [{ type: "text", text: prompt }], undefined, undefined).catch(() => undefined);
  useStopOnEscape(busy, stop);
  const readOnly = useReadOnly();
  const title = current ? store.sessions.get(current)?.title : undefined;
  useEffect(() => {
    document.title = title ? `${title} · partwire` : "partwire";
  }, [title]);

  return (
    <div class={`app ${menu ? "menu-open" : ""}`}>
      <Banner />
      <aside class="sidebar" onClick={(e) => (e.target as HTMLElement).closest(".session-link") && setMenu(false)}>
        <div class="brand">partwire</div>
        <ProjectSwitcher />
        <SessionList current={current} onOpen={open} onError={setError} readOnly={readOnly} />
      </aside>
      <main class="main">
        <TopBar current={current} onMenu={() => setMenu(!menu)} readOnly={readOnly} />
        {store.error && (
          <div class="toast" role="alert" onClick={() => setError("")}>
            {store.error} <span class="dismiss">×</span>
          </div>
        )}
        {comparing ? (
          <CompareView a={comparing[0]} b={comparing[1]} />
        ) : current ? (
          <Conversation key={current} sessionID={current} empty={<FirstRun onPick={pick} />} />
        ) : (
          <div class="conversation">
            <FirstRun onPick={pick} />
          </div>
        )}
        {current && <TodoPanel sessionID={current} />}
        {current && <LooseAsks sessionID={current} />}
        {!comparing && !readOnly && <PromptBox busy={busy} onSend={(parts, model, agent) => sendPrompt(current, parts, model, agent)} onStop={stop} />}
      </main>
      <div class="scrim" onClick={() => setMenu(false)} />
    </div>
  );
}
