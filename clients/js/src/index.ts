/**
 * partwire's client for seed 004's SessionEvents: the seed's types, `createSessionEvent`,
 * `enrichEventContext`, `isConversationEvent` and the shared reducer `reduceSessionEvent`
 * (the same rules as `partwire.protocol.session_state` in Python), plus the activity fold
 * the web UI draws, a plain-text renderer, and signing in with a token (`requestJson`,
 * `hubOptions`). No runtime dependencies.
 */
export * from "./session-events.js";
export * from "./reducer.js";
export * from "./activity.js";
export * from "./render.js";
export * from "./connection.js";

import { createInitialConversationState, reduceSessionEvent, type SessionConversationState } from "./reducer.js";
import type { AnySessionEvent } from "./session-events.js";

/** Reduce a list of events (of any sessions) into one conversation per session. */
export function reduceAll(events: AnySessionEvent[]): Record<string, SessionConversationState> {
  const states: Record<string, SessionConversationState> = {};
  for (const event of events) {
    const id = event.context.sessionId;
    states[id] = reduceSessionEvent(states[id] ?? createInitialConversationState(), event);
  }
  return states;
}
