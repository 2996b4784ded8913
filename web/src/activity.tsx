// The open session's activity (tokens and cost so far, the files its tools changed, its
// sub-agents): SessionEvents from the ClientHub's WebSocket, folded by the shared
// TypeScript reducer in clients/js, the same one every other client and the server's
// tests use. It resumes after a drop from the last event it reduced.
import { useEffect, useState } from "preact/hooks";
import {
  emptyState,
  isConversationEvent,
  reduceSessionEvent,
  type SessionEvent,
  type SessionState,
} from "../../clients/js/src/index";
import { useStore } from "./hooks";
import { relativePath } from "./paths";
import { store } from "./store";

const RETRY_MS = [250, 500, 1000, 2000, 4000];

/** The session's reduced state, kept current over /ws; re-renders skip block events. */
export function useSessionActivity(sessionID: string): SessionState {
  const [state, setState] = useState<SessionState>(emptyState);
  useEffect(() => {
    const current = emptyState();
    let socket: WebSocket | null = null;
    let stopped = false;
    let attempt = 0;
    const connect = () => {
      const url = new URL("/ws", location.href);
      url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
      socket = new WebSocket(url);
      socket.onopen = () => {
        attempt = 0;
        const since = current.lastEventId ?? undefined;
        socket?.send(JSON.stringify({ event: "subscribe", data: { sessionId: sessionID, since } }));
      };
      socket.onmessage = (message) => {
        const { event, data } = JSON.parse(message.data as string) as { event: string; data: any };
        if (event === "session:event") {
          reduceSessionEvent(current, data as SessionEvent);
          if (!isConversationEvent(data as SessionEvent)) setState({ ...current });
        } else if (event === "session:resync" && data.state) {
          Object.assign(current, data.state);
          setState({ ...current });
        } else if (event === "session:resync") {
          socket?.send(JSON.stringify({ event: "subscribe", data: { sessionId: sessionID, since: data.since } }));
        }
      };
      socket.onclose = () => {
        if (stopped) return;
        setTimeout(connect, RETRY_MS[Math.min(attempt++, RETRY_MS.length - 1)]);
      };
    };
    connect();
    return () => {
      stopped = true;
      socket?.close();
    };
  }, [sessionID]);
  return state;
}

function totals(metadata: Record<string, any> | null, estimated: boolean): string | null {
  if (!metadata) return null;
  const tokens = metadata.tokens ?? {};
  const cost = typeof metadata.cost === "number" && metadata.cost > 0 ? ` · $${metadata.cost.toFixed(4)}` : "";
  const about = estimated ? "~" : "";
  return `${about}${tokens.input ?? 0} in · ${about}${tokens.output ?? 0} out${cost}`;
}

/** A stopped step's usage is never reported by the model: the server estimates it. */
function hasStoppedStep(sessionID: string): boolean {
  const messages = store.messages.get(sessionID) ?? [];
  return messages.some((m: any) => m.role === "assistant" && m.error?.name === "MessageAbortedError");
}

export function ActivityBar({ sessionID }: { sessionID: string }) {
  const state = useSessionActivity(sessionID);
  useStore(`session:${sessionID}`);
  const files = Object.entries(state.files);
  const agents = Object.values(state.subagents);
  const estimated = hasStoppedStep(sessionID);
  const used = totals(state.metadata, estimated);
  if (!used && files.length === 0 && agents.length === 0) return null;
  return (
    <div class="activity" data-testid="activity">
      {used && (
        <span
          class="activity-tokens"
          data-estimated={estimated ? "true" : undefined}
          title={
            estimated
              ? "tokens and cost of this session so far; ~ marks an estimate: a stopped step's usage is counted at about 4 characters a token"
              : "tokens and cost of this session so far"
          }
        >
          {used}
        </span>
      )}
      {agents.length > 0 && (
        <span class="activity-agents">
          {agents.length} sub-agent{agents.length === 1 ? "" : "s"}
        </span>
      )}
      {files.length > 0 && (
        <details class="activity-files">
          <summary>
            {files.length} file{files.length === 1 ? "" : "s"} changed
          </summary>
          <ul>
            {files.map(([path, change]) => (
              <li key={path} data-change={change}>
                {relativePath(path)} <span class="change">{change}</span>
              </li>
            ))}
          </ul>
        </details>
      )}
    </div>
  );
}
