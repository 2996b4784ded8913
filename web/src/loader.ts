// Loading a session's messages into the store (snapshot + the events after it).
import { api } from "./api";
import { store } from "./store";

const FIRST_PAGE = 40;

const loads = new Map<string, Promise<void>>();

/** Load a session's messages once: concurrent callers share the same request. */
export function loadSession(sessionID: string): Promise<void> {
  const running = loads.get(sessionID);
  if (running) return running;
  const load = (async () => {
    // the newest page first, so a long session shows at once; then all of it
    store.beginLoad(sessionID);
    const [first, todos] = await Promise.all([
      api.messages(sessionID, FIRST_PAGE),
      api.todos(sessionID).catch(() => []),
    ]);
    store.load(sessionID, first.messages, first.lastEventID);
    store.todosUpdated(sessionID, todos);
    if (first.messages.length < FIRST_PAGE) return;
    store.beginLoad(sessionID); // events wait in a buffer; the first page stays on screen
    const all = await api.messages(sessionID);
    store.load(sessionID, all.messages, all.lastEventID);
  })().finally(() => loads.delete(sessionID));
  loads.set(sessionID, load);
  return load;
}
