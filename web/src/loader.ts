// Loading a session's messages into the store (snapshot + the events after it).
import { api } from "./api";
import { store } from "./store";

const loads = new Map<string, Promise<void>>();

/** Load a session's messages once: concurrent callers share the same request. */
export function loadSession(sessionID: string): Promise<void> {
  const running = loads.get(sessionID);
  if (running) return running;
  const load = (async () => {
    store.beginLoad(sessionID);
    const [{ messages, lastEventID }, todos] = await Promise.all([
      api.messages(sessionID),
      api.todos(sessionID).catch(() => []),
    ]);
    store.load(sessionID, messages, lastEventID);
    store.todosUpdated(sessionID, todos);
  })().finally(() => loads.delete(sessionID));
  loads.set(sessionID, load);
  return load;
}
