// Part renderers, looked up by part type: a new part type is one new entry here.
import { Component, type FunctionComponent } from "preact";
import { useEffect, useLayoutEffect, useState } from "preact/hooks";
import { api } from "./api";
import { formatDuration, useStore } from "./hooks";
import { HIGHLIGHT_KEY, renderBlock, splitBlocks } from "./markdown";
import { relativePath } from "./paths";
import { store } from "./store";
import { ToolCard } from "./tools";
import type {
  AgentPart,
  CompactionPart,
  FilePart,
  Message,
  Part,
  PatchPart,
  ReasoningPart,
  RetryPart,
  StepFinishPart,
  SubtaskPart,
  TextPart,
} from "./types";

export function Markdown({ text }: { text: string }) {
  useStore(HIGHLIGHT_KEY);
  return (
    <div class="markdown">
      {splitBlocks(text).map((block, i) => (
        <div key={i} class="md-block" dangerouslySetInnerHTML={{ __html: renderBlock(block) }} />
      ))}
    </div>
  );
}

function CopyText({ text }: { text: string }) {
  const [copied, setCopied] = useState(false);
  const copy = () =>
    void navigator.clipboard?.writeText(text).then(() => {
      setCopied(true);
      setTimeout(() => setCopied(false), 1200);
    });
  return (
    <button type="button" class="copy copy-text" onClick={copy} aria-label="Copy text">
      {copied ? "Copied" : "Copy"}
    </button>
  );
}

function TextView({ part }: { part: TextPart }) {
  if (part.synthetic) return null;
  const streaming = part.time !== undefined && part.time.end === undefined;
  return (
    <div class={`part part-text ${streaming ? "streaming" : ""}`} data-part={part.id}>
      <Markdown text={part.text} />
    </div>
  );
}

function ReasoningView({ part }: { part: ReasoningPart }) {
  const done = part.time?.end !== undefined;
  const [open, setOpen] = useState<boolean | null>(null);
  const expanded = open ?? !done;
  const took = done ? formatDuration((part.time.end ?? 0) - part.time.start) : "";
  if (!part.text.trim()) return null;
  return (
    <div class="part part-reasoning" data-part={part.id}>
      <button type="button" class="reasoning-head" aria-expanded={expanded} onClick={() => setOpen(!expanded)}>
        {done ? `Thought for ${took}` : "Thinking…"}
      </button>
      {expanded && <Markdown text={part.text} />}
    </div>
  );
}

function Lightbox({ src, onClose }: { src: string; onClose: () => void }) {
  // a layout effect: Esc works from the moment the dialog is on screen, not a frame later
  useLayoutEffect(() => {
    const close = (e: KeyboardEvent) => e.key === "Escape" && onClose();
    window.addEventListener("keydown", close);
    return () => window.removeEventListener("keydown", close);
  }, []);
  return (
    <div class="lightbox" role="dialog" aria-label="Image" onClick={onClose}>
      <img src={src} alt="" />
    </div>
  );
}

export function FileView({ part }: { part: FilePart }) {
  const [zoom, setZoom] = useState(false);
  const name = relativePath(part.source?.path ?? part.filename ?? part.url.replace(/^file:\/\//, ""));
  if (part.mime.startsWith("image/") && /^(data:|https?:|\/)/.test(part.url)) {
    return (
      <span class="part part-file">
        <button type="button" class="thumb" onClick={() => setZoom(true)} title={name}>
          <img src={part.url} alt={name} loading="lazy" />
        </button>
        {zoom && <Lightbox src={part.url} onClose={() => setZoom(false)} />}
      </span>
    );
  }
  return (
    <span class="part part-file chip" title={part.mime}>
      {name || part.mime}
    </span>
  );
}

function StepFinishView({ part }: { part: StepFinishPart }) {
  const t = part.tokens;
  const cache = t.cache.read + t.cache.write;
  return (
    <div class="part part-step-finish">
      {t.input.toLocaleString()} in · {t.output.toLocaleString()} out
      {t.reasoning > 0 && ` · ${t.reasoning.toLocaleString()} reasoning`}
      {cache > 0 && ` · ${cache.toLocaleString()} cache`}
      {part.cost > 0 && ` · $${part.cost.toFixed(4)}`}
    </div>
  );
}

/** The one notice of a message's retries: the latest attempt, updated in place. */
function RetryView({ part }: { part: RetryPart }) {
  useStore("status");
  const status = store.status.get(part.sessionID);
  const [now, setNow] = useState(Date.now());
  const next = status?.type === "retry" && status.attempt === part.attempt ? status.next : undefined;
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 250);
    return () => clearInterval(timer);
  }, []);
  const plan = (part.error.data?.metadata ?? {}) as Record<string, string>;
  const most = plan.maxAttempts ? ` of ${plan.maxAttempts}` : "";
  const until = plan.retryingForS ? part.time.created + Number(plan.retryingForS) * 1000 : undefined;
  const left = next !== undefined ? Math.max(0, Math.ceil((next - now) / 1000)) : undefined;
  const giveUp = until !== undefined ? Math.max(0, Math.ceil((until - now) / 1000)) : undefined;
  return (
    <div class="part part-retry notice" role="status" data-attempt={part.attempt}>
      ↻ {part.error.data?.message ?? part.error.name}
      <span class="retry-plan">
        {" "}
        — retry {part.attempt}
        {most}
        {left !== undefined ? ` in ${left} s` : ", under way"}
        {giveUp !== undefined && giveUp > 0 && ` · gives up within ${giveUp} s`}
      </span>
    </div>
  );
}

function CompactionView({ part }: { part: CompactionPart }) {
  return (
    <div class="part part-compaction divider" role="separator">
      <span>{part.auto ? "Context compacted automatically" : "Context compacted"}</span>
    </div>
  );
}

function PatchView({ part }: { part: PatchPart }) {
  return (
    <div class="part part-patch">
      <div class="patch-head">Changed {part.files.length === 1 ? "1 file" : `${part.files.length} files`}</div>
      <ul>
        {part.files.map((file) => (
          <li key={file}>
            <code>{relativePath(file)}</code>
          </li>
        ))}
      </ul>
    </div>
  );
}

function AgentView({ part }: { part: AgentPart }) {
  return <span class="part part-agent chip">@{part.name}</span>;
}

function SubtaskView({ part }: { part: SubtaskPart }) {
  return (
    <div class="part part-subtask notice">
      ⇲ Sub-task for <strong>@{part.agent}</strong>: {part.description}
    </div>
  );
}

const Nothing = () => null;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const PARTS: Record<string, FunctionComponent<{ part: any }>> = {
  text: TextView,
  reasoning: ReasoningView,
  file: FileView,
  tool: ToolCard,
  "step-start": Nothing,
  "step-finish": StepFinishView,
  snapshot: Nothing,
  patch: PatchView,
  retry: RetryView,
  compaction: CompactionView,
  agent: AgentView,
  subtask: SubtaskView,
};

function Unknown({ part }: { part: Part }) {
  return <div class="part part-unknown">[{part.type}]</div>;
}

const RESTART = "Interrupted by a server restart";

function errorText(message: Message, attempts: number): string | null {
  const error = message.error;
  if (!error) return null;
  if (error.name === "MessageAbortedError") {
    return String(error.data?.message ?? "").startsWith(RESTART) ? `${RESTART}.` : "Stopped.";
  }
  const tried = attempts > 0 ? ` (gave up after ${attempts + 1} attempts)` : "";
  return `${error.name}: ${error.data?.message ?? ""}${tried}`;
}

/** Send the prompt an answer failed on again, with its model and agent. */
function RetryButton({ message }: { message: Message }) {
  const retry = () => {
    const prompt = store.messages.get(message.sessionID)?.find((m) => m.id === message.parentID);
    if (!prompt) return;
    const parts = (store.parts.get(prompt.id) ?? [])
      .filter((p): p is TextPart => p.type === "text" && !p.synthetic)
      .map((p) => ({ type: "text" as const, text: p.text }));
    const model = message.providerID && message.modelID ? { providerID: message.providerID, modelID: message.modelID } : undefined;
    store.notify(`sent:${message.sessionID}`);
    api.prompt(message.sessionID, parts, model, message.agent).catch((e: Error) => store.reportError(e.message));
  };
  return (
    <button type="button" class="btn retry-btn" onClick={retry}>
      Retry
    </button>
  );
}

async function forkAndOpen(sessionID: string, at: Parameters<typeof api.fork>[1]): Promise<void> {
  const session = await api.fork(sessionID, at);
  store.sessionUpdated(session);
  location.hash = `#/session/${session.id}`;
}

// the parts a fork or a rewind can start from: what a reader sees as a step of the answer
const FORKABLE = new Set(["text", "reasoning", "tool", "file", "patch"]);

/** On hover over a part of an answer: fork from it (or, for a tool call, from just before
 * it, so the model calls again) and rewind to before it, with its file changes. */
function PartActions({ part }: { part: Part }) {
  const run = (action: () => Promise<unknown>) => () => void action().catch((e: Error) => store.reportError(e.message));
  const at = { messageID: part.messageID, partID: part.id };
  const fork = run(() => forkAndOpen(part.sessionID, at));
  const forkBefore = run(() => forkAndOpen(part.sessionID, { ...at, cut: "before" }));
  const rewind = run(() => api.revert(part.sessionID, part.messageID, part.id));
  return (
    <div class="part-actions">
      <button type="button" class="icon-btn" onClick={fork} aria-label="Fork from this part" title="A new session with everything up to and including this part">
        Fork
      </button>
      {part.type === "tool" && (
        <button type="button" class="icon-btn" onClick={forkBefore} aria-label="Fork before this call" title="A new session that stops just before this call: the model calls again">
          Fork before
        </button>
      )}
      <button type="button" class="icon-btn" onClick={rewind} aria-label="Rewind to before this part" title="Undo this part, what followed, and their file changes">
        Rewind
      </button>
    </div>
  );
}

function UserActions({ message }: { message: Message }) {
  const run = (action: () => Promise<unknown>) => () => void action().catch((e: Error) => store.reportError(e.message));
  const fork = run(() => forkAndOpen(message.sessionID, { messageID: message.id }));
  const revert = run(() => api.revert(message.sessionID, message.id));
  return (
    <div class="message-actions">
      <button type="button" class="icon-btn" onClick={fork} title="A new session with the conversation before this message">
        Fork
      </button>
      <button type="button" class="icon-btn" onClick={revert} title="Undo this message, what followed, and their file changes">
        Revert
      </button>
    </div>
  );
}

/** The parts a rewind to a part of this message left: those before it (by position). */
function keptParts(message: Message, parts: Part[]): Part[] {
  const revert = store.sessions.get(message.sessionID)?.revert;
  if (revert?.partID === undefined || revert.messageID !== message.id) return parts;
  const cut = parts.findIndex((p) => p.id === revert.partID);
  return cut >= 0 ? parts.slice(0, cut) : parts;
}

export function MessageView({ message }: { message: Message }) {
  useStore(`message:${message.id}`, "sessions");
  const current = store.messages.get(message.sessionID)?.find((m) => m.id === message.id) ?? message;
  const all = keptParts(current, store.parts.get(message.id) ?? []);
  // retries are one notice, the latest, while the answer is under way; after, its end says
  const retries = all.filter((p): p is RetryPart => p.type === "retry");
  const parts = all.filter((p) => p.type !== "retry");
  const retrying = current.time.completed === undefined ? retries.at(-1) : undefined;
  const error = errorText(current, retries.length);
  const failed = current.role === "assistant" && current.error && current.error.name !== "MessageAbortedError";
  // a compaction request is a user message holding only a divider: no bubble, no actions
  const divider = parts.length > 0 && parts.every((p) => p.type === "compaction");
  const bubble = current.role === "user" && !divider;
  const text = parts
    .filter((p): p is TextPart => p.type === "text" && !p.synthetic)
    .map((p) => p.text)
    .join("\n\n");
  return (
    <article class={`message message-${divider ? "divider" : current.role}`} data-message={current.id}>
      {current.role === "assistant" && (
        <header class="message-meta">
          {current.agent && <span>{current.agent}</span>}
          {current.modelID && <span>{current.providerID}/{current.modelID}</span>}
          {current.time.completed !== undefined && text && <CopyText text={text} />}
        </header>
      )}
      <div class={`message-parts ${bubble ? "bubble" : ""}`}>
        {parts.map((part) => {
          const View = PARTS[part.type] ?? Unknown;
          if (current.role !== "assistant" || !FORKABLE.has(part.type)) return <View key={part.id} part={part} />;
          return (
            <div key={part.id} class="part-slot">
              <View part={part} />
              <PartActions part={part} />
            </div>
          );
        })}
        {retrying && <RetryView part={retrying} />}
      </div>
      {bubble && <UserActions message={current} />}
      {error && (
        <div class={`message-error ${current.error?.name === "MessageAbortedError" ? "aborted" : ""}`}>
          {error}
          {failed && <RetryButton message={current} />}
        </div>
      )}
    </article>
  );
}

/**
 * A message re-renders only when it is notified (or replaced), never because the list
 * around it did: that keeps a streaming part to its 100 ms repaint budget.
 */
export class MessageRow extends Component<{ message: Message }> {
  shouldComponentUpdate(next: { message: Message }): boolean {
    return next.message !== this.props.message;
  }

  render() {
    return <MessageView message={this.props.message} />;
  }
}
