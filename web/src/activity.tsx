// The open session's activity (tokens and cost so far, the files its tools changed, its
// sub-agents): seed 004's SessionEvents from the ClientHub's WebSocket, folded by
// clients/js (the shared reducer for the sub-agents, its activity fold for the rest), the
// same code every other client and the server's tests use. It resumes after a drop from
// the last event it reduced.
import { useEffect, useState } from "preact/hooks";
import {
  emptyActivity,
  isConversationEvent,
  reduceActivity,
  type Activity,
  type AnySessionEvent,
  type SessionConversationState,
  type SessionMetadata,
} from "../../clients/js/src/index";
import { useStore } from "./hooks";
import { relativePath } from "./paths";
import { store } from "./store";

const RETRY_MS = [250, 500, 1000, 2000, 4000];

/** The session's activity, kept current over /ws; re-renders skip block events. */
export function useSessionActivity(sessionID: string): Activity {
  const [state, setState] = useState<Activity>(emptyActivity);
  useEffect(() => {
    let current = emptyActivity();
    let socket: WebSocket | null = null;
    let stopped = false;
    let attempt = 0;
    const connect = () => {
      const url = new URL("/ws?client=web", location.href); // the server counts who watches
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
          current = reduceActivity(current, data as AnySessionEvent);
          if (!isConversationEvent(data as AnySessionEvent)) setState(current);
        } else if (event === "session:resync" && data.state) {
          const conversation = data.state as SessionConversationState;
          current = { ...current, conversation, lastEventId: data.lastEventId ?? current.lastEventId };
          setState(current);
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

interface Totals {
  usage?: { inputTokens?: number; outputTokens?: number };
  costUSD?: number;
}

/** The session's totals so far: partwire's metadata:update carries them in `session`. */
function totals(metadata: SessionMetadata | null, estimated: boolean): string | null {
  if (!metadata) return null;
  const session = (metadata.session ?? metadata) as Totals;
  const usage = session.usage ?? {};
  const spent = session.costUSD;
  const cost = typeof spent === "number" && spent > 0 ? ` · $${spent.toFixed(4)}` : "";
  const about = estimated ? "~" : "";
  return `${about}${usage.inputTokens ?? 0} in · ${about}${usage.outputTokens ?? 0} out${cost}`;
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
  const agents = state.conversation.subagents;
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
