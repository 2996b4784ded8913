// Tool cards: one renderer per tool id, a generic fallback, and the shared card frame
// (icon, title, subtitle, state, elapsed time, inline permission/question prompt).
import type { ComponentChildren, VNode } from "preact";
import { useEffect, useState } from "preact/hooks";
import { formatDuration, useElapsed, useStore } from "./hooks";
import { loadSession } from "./loader";
import { relativePath, stripAnsi } from "./paths";
import { PermissionPrompt, QuestionPrompt } from "./prompts";
import { store } from "./store";
import type { ToolPart, Todo } from "./types";

export interface ToolRenderer {
  icon: string;
  title: string;
  subtitle?: (part: ToolPart) => string;
  body?: (part: ToolPart) => VNode | null;
  /** Open by default once completed (the diff of an edit is worth seeing). */
  open?: boolean;
}

const str = (value: unknown): string => (typeof value === "string" ? value : value == null ? "" : JSON.stringify(value));
const input = (part: ToolPart, key: string): string => str(part.state.input?.[key]);
const meta = (part: ToolPart, key: string): unknown => part.state.metadata?.[key];

function Output({ text, className }: { text: string; className?: string }) {
  if (!text) return null;
  return <pre class={`tool-output ${className ?? ""}`}>{text}</pre>;
}

function output(part: ToolPart): VNode | null {
  return <Output text={part.state.output ?? ""} />;
}

export function Diff({ patch }: { patch: string }) {
  const lines = patch.split("\n").filter((l) => !l.startsWith("Index:") && !/^={5,}/.test(l));
  return (
    <pre class="diff">
      {lines.map((line, i) => {
        const kind =
          line.startsWith("+++") || line.startsWith("---")
            ? "file"
            : line.startsWith("@@")
              ? "hunk"
              : line.startsWith("+")
                ? "add"
                : line.startsWith("-")
                  ? "del"
                  : "ctx";
        return (
          <div key={i} class={`diff-${kind}`}>
            {line || " "}
          </div>
        );
      })}
    </pre>
  );
}

export function Checklist({ todos }: { todos: Todo[] }) {
  const mark = { completed: "☑", in_progress: "◐", pending: "☐", cancelled: "☒" } as const;
  return (
    <ul class="checklist">
      {todos.map((todo, i) => (
        <li key={i} class={`todo-${todo.status}`}>
          <span class="todo-mark">{mark[todo.status] ?? "☐"}</span> {todo.content}
        </li>
      ))}
    </ul>
  );
}

function bashBody(part: ToolPart) {
  const live = str(meta(part, "output"));
  const text = part.state.status === "completed" ? (part.state.output ?? live) : live || (part.state.output ?? "");
  return (
    <div>
      <pre class="tool-output command">$ {input(part, "command")}</pre>
      <Output text={stripAnsi(text)} className="terminal" />
    </div>
  );
}

interface Step {
  id: string;
  tool: string;
  state: { status: string; title?: string };
}

/** The child session's tool calls, live from the store (or the summary in the metadata). */
function TaskSteps({ child, summary }: { child: string; summary: Step[] }) {
  const messages = store.messages.get(child) ?? [];
  useStore(`session:${child}`, ...messages.map((m) => `message:${m.id}`));
  useEffect(() => {
    if (child && !store.isLoaded(child)) void loadSession(child).catch(() => undefined);
  }, [child]);
  const steps: Step[] = store.isLoaded(child)
    ? messages.flatMap((m) => (store.parts.get(m.id) ?? []).filter((p): p is ToolPart => p.type === "tool"))
    : summary;
  if (steps.length === 0) return null;
  return (
    <ul class="task-steps">
      {steps.map((step) => (
        <li key={step.id} class={`state-${step.state.status}`}>
          <span class="step-state">{STATE_MARK[step.state.status] ?? "•"}</span> {step.tool}
          {step.state.title ? ` — ${relativePath(step.state.title)}` : ""}
        </li>
      ))}
    </ul>
  );
}

function taskBody(part: ToolPart) {
  const child = str(meta(part, "sessionId"));
  const summary = (meta(part, "summary") as Step[] | undefined) ?? [];
  const answer = (part.state.output ?? "").replace(/<task_metadata>[\s\S]*<\/task_metadata>/, "").trim();
  return (
    <div class="task">
      {child && <TaskSteps child={child} summary={summary} />}
      {child && (
        <a class="task-link" href={`#/session/${child}`}>
          Open the sub-agent's session →
        </a>
      )}
      {part.state.status === "completed" && <Output text={answer} />}
    </div>
  );
}

function questionBody(part: ToolPart) {
  const questions = (part.state.input?.questions as { question: string; options: { label: string }[] }[]) ?? [];
  const answers = (meta(part, "answers") as string[][] | undefined) ?? [];
  return (
    <div>
      {questions.map((q, i) => (
        <div key={i} class="question-summary">
          <div class="question-text">{q.question}</div>
          <div class="question-options">
            {q.options.map((o) => (
              <span key={o.label} class={`chip ${answers[i]?.includes(o.label) ? "chip-chosen" : ""}`}>
                {o.label}
              </span>
            ))}
          </div>
          {answers[i] && answers[i].length > 0 && <div class="question-answer">Answer: {answers[i].join(", ")}</div>}
        </div>
      ))}
    </div>
  );
}

function webfetchBody(part: ToolPart) {
  const bytes = meta(part, "bytes");
  return (
    <div>
      <div class="tool-facts">
        {typeof bytes === "number" && <span>{(bytes / 1024).toFixed(1)} KB</span>}
        {meta(part, "contentType") != null && <span>{str(meta(part, "contentType"))}</span>}
        <span>as {input(part, "format") || "markdown"}</span>
      </div>
      {output(part)}
    </div>
  );
}

export const TOOLS: Record<string, ToolRenderer> = {
  read: {
    icon: "▤",
    title: "Read",
    subtitle: (p) => {
      const range = [p.state.input?.offset != null ? `from ${str(p.state.input.offset)}` : "", p.state.input?.limit != null ? `${str(p.state.input.limit)} lines` : ""].filter(Boolean).join(", ");
      return relativePath(input(p, "filePath")) + (range ? ` (${range})` : "");
    },
    body: output,
  },
  list: { icon: "▦", title: "List", subtitle: (p) => relativePath(input(p, "path")) || ".", body: output },
  glob: { icon: "✳", title: "Glob", subtitle: (p) => input(p, "pattern") + (p.state.input?.path ? ` in ${relativePath(input(p, "path"))}` : ""), body: output },
  grep: { icon: "⌕", title: "Grep", subtitle: (p) => input(p, "pattern") + (p.state.input?.include ? ` (${input(p, "include")})` : ""), body: output },
  bash: { icon: "❯", title: "Shell", subtitle: (p) => input(p, "description") || input(p, "command"), body: bashBody },
  edit: {
    icon: "✎",
    title: "Edit",
    open: true,
    subtitle: (p) => relativePath(input(p, "filePath")),
    body: (p) => (meta(p, "diff") ? <Diff patch={str(meta(p, "diff"))} /> : output(p)),
  },
  apply_patch: {
    icon: "✎",
    title: "Patch",
    open: true,
    subtitle: (p) => {
      const files = meta(p, "files");
      return Array.isArray(files) ? `${files.length} file${files.length === 1 ? "" : "s"}` : "";
    },
    body: (p) => (meta(p, "diff") ? <Diff patch={str(meta(p, "diff"))} /> : <Output text={input(p, "patchText")} />),
  },
  write: {
    icon: "✚",
    title: "Write",
    subtitle: (p) => relativePath(input(p, "filePath")),
    body: (p) => <Output text={input(p, "content")} />,
  },
  webfetch: { icon: "⊕", title: "Fetch", subtitle: (p) => input(p, "url"), body: webfetchBody },
  todowrite: {
    icon: "☑",
    title: "Todos",
    open: true,
    subtitle: (p) => p.state.title ?? "",
    body: (p) => <Checklist todos={((meta(p, "todos") ?? p.state.input?.todos) as Todo[]) ?? []} />,
  },
  todoread: {
    icon: "☑",
    title: "Todos",
    subtitle: (p) => p.state.title ?? "",
    body: (p) => <Checklist todos={(meta(p, "todos") as Todo[]) ?? []} />,
  },
  task: { icon: "⇲", title: "Task", open: true, subtitle: (p) => input(p, "description"), body: taskBody },
  question: { icon: "?", title: "Question", open: true, subtitle: (p) => p.state.title ?? "", body: questionBody },
};

const GENERIC: ToolRenderer = {
  icon: "⚙",
  title: "",
  subtitle: (p) => p.state.title ?? "",
  body: (p) => (
    <div>
      <Output text={JSON.stringify(p.state.input ?? {}, null, 2)} />
      {output(p)}
    </div>
  ),
};

const STATE_MARK: Record<string, string> = { pending: "○", running: "◌", completed: "✓", error: "✕" };

/** The call's state; one that waits on a permission or a question says it waits for you. */
function StateBadge({ part, waiting }: { part: ToolPart; waiting: boolean }) {
  const { status, time } = part.state;
  const elapsed = useElapsed(time?.start, time?.end, status === "running" && !waiting);
  if (waiting) {
    return (
      <span class="state state-waiting" data-state="waiting">
        <span aria-hidden="true">●</span>
        <span class="state-label">waiting for you</span>
      </span>
    );
  }
  return (
    <span class={`state state-${status}`} data-state={status}>
      {status === "running" ? <span class="spinner" aria-hidden="true" /> : <span aria-hidden="true">{STATE_MARK[status]}</span>}
      <span class="state-label">{status}</span>
      {time?.start !== undefined && <span class="elapsed">{formatDuration(elapsed)}</span>}
    </span>
  );
}

export function ToolCard({ part }: { part: ToolPart }) {
  useStore("asks");
  const renderer = TOOLS[part.tool] ?? GENERIC;
  const permission = store.permissionFor(part.messageID, part.callID);
  const question = store.questionFor(part.messageID, part.callID);
  const [open, setOpen] = useState<boolean | null>(null);
  const { status } = part.state;
  const expanded = open ?? (Boolean(permission || question) || status === "error" || (status === "running" && part.tool === "bash") || (renderer.open === true && status !== "pending"));
  const subtitle = renderer.subtitle?.(part) ?? "";
  let body: ComponentChildren = null;
  // a question being asked is shown once, by its prompt, not also by the card's summary
  if (expanded && !question) {
    body = status === "error" ? (
      <div>
        <pre class="tool-output tool-error">{part.state.error}</pre>
      </div>
    ) : (
      renderer.body?.(part)
    );
  }
  return (
    <div class={`tool-card tool-${status}`} data-tool={part.tool} data-call={part.callID} data-message={part.messageID} data-state={status}>
      <button type="button" class="tool-head" aria-expanded={expanded} onClick={() => setOpen(!expanded)}>
        <span class="tool-icon" aria-hidden="true">{renderer.icon}</span>
        <span class="tool-title">{renderer.title || part.tool}</span>
        <span class="tool-subtitle" title={subtitle}>{subtitle}</span>
        <StateBadge part={part} waiting={Boolean(permission || question)} />
      </button>
      {permission && <PermissionPrompt request={permission} />}
      {!permission && !question && store.answeredBy.has(`${part.messageID} ${part.callID}`) && (
        <div class="answered-by" data-testid="answered-by">
          answered by {store.answeredBy.get(`${part.messageID} ${part.callID}`)}
        </div>
      )}
      {question && <QuestionPrompt request={question} />}
      {body && <div class="tool-body">{body}</div>}
    </div>
  );
}
