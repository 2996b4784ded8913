import { render } from "preact";
import { api } from "./api";
import { App } from "./app";
import { loadSession } from "./loader";
import { EventStream } from "./events";
import { installCopyButtons, loadHighlighter } from "./markdown";
import { loadProjectRoot } from "./paths";
import { store } from "./store";
import "./styles.css";

async function loadSnapshot(): Promise<void> {
  const [sessions, statuses, permissions, questions] = await Promise.all([
    api.sessions(),
    api.statuses(),
    api.permissions(),
    api.questions(),
  ]);
  store.setSessions(sessions);
  store.setStatuses(statuses);
  store.setPending(permissions, questions);
}

async function resync(): Promise<void> {
  store.unloadAll();
  await loadSnapshot();
}

const events = new EventStream(
  store,
  async (first) => {
    if (first) await loadSnapshot();
  },
  resync,
);

loadProjectRoot().catch(() => undefined);
const root = document.getElementById("app")!;
installCopyButtons(root);
render(<App />, root);
events.start();
setTimeout(() => void loadHighlighter(), 0);

// hooks for the end-to-end tests and the benchmark
Object.assign(window, { partwire: { store, events, loadSession } });
