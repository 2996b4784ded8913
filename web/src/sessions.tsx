// The session list: newest first, children nested under their parent, search,
// create, rename and delete.
import { useState } from "preact/hooks";
import { api } from "./api";
import { ago, useProjectRoot, useStore, useTick } from "./hooks";
import { store } from "./store";
import type { Session } from "./types";

interface Props {
  current: string | null;
  onOpen: (id: string | null) => void;
  onError: (message: string) => void;
  /** A share link's guest or a read-only token: nothing to make, rename or delete. */
  readOnly?: boolean;
}

function tree(sessions: Session[], query: string): [Session, number][] {
  const byParent = new Map<string | undefined, Session[]>();
  const ids = new Set(sessions.map((s) => s.id));
  for (const session of sessions) {
    const parent = session.parentID && ids.has(session.parentID) ? session.parentID : undefined;
    const list = byParent.get(parent) ?? [];
    list.push(session);
    byParent.set(parent, list);
  }
  for (const list of byParent.values()) list.sort((a, b) => b.time.updated - a.time.updated || (a.id < b.id ? 1 : -1));
  const needle = query.trim().toLowerCase();
  const matches = (s: Session): boolean =>
    !needle || s.title.toLowerCase().includes(needle) || (byParent.get(s.id) ?? []).some(matches);
  const rows: [Session, number][] = [];
  const walk = (parent: string | undefined, depth: number) => {
    for (const session of byParent.get(parent) ?? []) {
      if (!matches(session)) continue;
      rows.push([session, depth]);
      walk(session.id, depth + 1);
    }
  };
  walk(undefined, 0);
  return rows;
}

function Row({ session, depth, current, onOpen, onError, readOnly }: Props & { session: Session; depth: number }) {
  const [editing, setEditing] = useState(false);
  const status = store.status.get(session.id);
  const rename = (title: string) => {
    setEditing(false);
    if (title.trim() && title !== session.title) api.renameSession(session.id, title.trim()).catch((e: Error) => onError(e.message));
  };
  const remove = () => {
    if (!confirm(`Delete "${session.title}" and its messages?`)) return;
    api.deleteSession(session.id).then(
      () => current === session.id && onOpen(null),
      (e: Error) => onError(e.message),
    );
  };
  return (
    <li class={`session-row ${current === session.id ? "active" : ""}`} style={{ paddingLeft: `${0.5 + depth}rem` }} data-session={session.id}>
      {editing ? (
        <input
          class="rename"
          aria-label="Session title"
          value={session.title}
          ref={(el) => el?.focus()}
          onKeyDown={(e) => {
            if (e.key === "Enter") rename((e.target as HTMLInputElement).value);
            if (e.key === "Escape") setEditing(false);
          }}
          onBlur={(e) => rename((e.target as HTMLInputElement).value)}
        />
      ) : (
        <a href={`#/session/${session.id}`} class="session-link" onDblClick={() => !readOnly && setEditing(true)}>
          {status && status.type !== "idle" && <span class={`dot dot-${status.type}`} title={status.type} />}
          {depth > 0 && <span class="child-mark">↳ </span>}
          <span class="session-title">{session.title || "Untitled"}</span>
          <span class="session-time" title={new Date(session.time.updated).toLocaleString()}>
            {ago(session.time.updated)}
          </span>
        </a>
      )}
      {!readOnly && <span class="row-actions">
        <button type="button" class="icon-btn" title="Rename" aria-label="Rename" onClick={() => setEditing(true)}>
          ✎
        </button>
        <button type="button" class="icon-btn" title="Delete" aria-label="Delete" onClick={remove}>
          ✕
        </button>
      </span>}
    </li>
  );
}

export function SessionList(props: Props) {
  useStore("sessions", "status");
  useTick(30_000);
  const root = useProjectRoot();
  const [query, setQuery] = useState("");
  // the store hears every project's events: list only this project's sessions
  const mine = [...store.sessions.values()].filter((s) => !root || s.directory === root);
  const rows = tree(mine, query);
  const create = () =>
    api.createSession().then(
      (session) => {
        store.sessionUpdated(session);
        props.onOpen(session.id);
      },
      (e: Error) => props.onError(e.message),
    );
  return (
    <nav class="sessions" aria-label="Sessions">
      <div class="sessions-head">
        <input type="search" placeholder="Search sessions" aria-label="Search sessions" value={query} onInput={(e) => setQuery((e.target as HTMLInputElement).value)} />
        {!props.readOnly && (
          <button type="button" class="btn btn-primary" onClick={create}>
            New
          </button>
        )}
      </div>
      <ul class="session-list">
        {rows.map(([session, depth]) => (
          <Row key={session.id} session={session} depth={depth} {...props} />
        ))}
        {rows.length === 0 && <li class="empty">{query ? "No session matches." : "No sessions yet."}</li>}
      </ul>
    </nav>
  );
}
