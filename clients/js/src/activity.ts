/**
 * What a session has been doing beside its conversation, folded from the same
 * SessionEvents: its conversation (the shared reducer), the latest usage and the session's
 * totals (`metadata:update`), the files its tools changed (`file:*`), whether a query is
 * running (`status`) and the last event id (to resume after a drop). The web UI's activity
 * bar draws this.
 */
import { createInitialConversationState, reduceSessionEvent, type SessionConversationState } from "./reducer.js";
import type { AnySessionEvent, SessionMetadata } from "./session-events.js";

export type FileChange = "created" | "modified" | "deleted";

export interface Activity {
  conversation: SessionConversationState;
  metadata: SessionMetadata | null;
  files: Record<string, FileChange>;
  busy: boolean;
  lastEventId: string | null;
}

export function emptyActivity(): Activity {
  return { conversation: createInitialConversationState(), metadata: null, files: {}, busy: false, lastEventId: null };
}

export function reduceActivity(activity: Activity, event: AnySessionEvent): Activity {
  const next: Activity = { ...activity, lastEventId: event.id ?? activity.lastEventId };
  next.conversation = reduceSessionEvent(activity.conversation, event);
  switch (event.type) {
    case "metadata:update":
      next.metadata = event.payload.metadata;
      break;
    case "file:created":
    case "file:modified":
      next.files = { ...activity.files, [event.payload.file.path]: event.type === "file:created" ? "created" : "modified" };
      break;
    case "file:deleted":
      next.files = { ...activity.files, [event.payload.path]: "deleted" };
      break;
    case "status":
      next.busy = event.payload.runtime.activeQuery !== undefined;
      break;
  }
  return next;
}
