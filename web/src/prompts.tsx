// Inline answers to the agent loop's asks: permissions and questions.
import { useState } from "preact/hooks";
import { api } from "./api";
import { relativePath } from "./paths";
import type { PermissionRequest, QuestionRequest } from "./types";

function useSubmit(): [boolean, string, (action: () => Promise<unknown>) => void] {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState("");
  const run = (action: () => Promise<unknown>) => {
    setBusy(true);
    setError("");
    action().then(
      () => setBusy(false),
      (e: Error) => {
        setBusy(false);
        setError(e.message);
      },
    );
  };
  return [busy, error, run];
}

/** The budget ask: the run is paused before a step that would pass the session's budget. */
function BudgetPrompt({ request }: { request: PermissionRequest }) {
  const [busy, error, run] = useSubmit();
  const reply = (answer: "once" | "always" | "reject") => () => run(() => api.replyPermission(request.id, answer));
  return (
    <div class="ask ask-permission ask-budget" role="group" aria-label="Budget reached" data-request={request.id}>
      <div class="ask-text">
        Budget: <strong>{request.patterns.join(", ")}</strong>. The next step would pass it; the run is paused.
      </div>
      <div class="ask-actions">
        <button type="button" class="btn btn-danger" disabled={busy} onClick={reply("reject")}>
          Stop
        </button>
        <button type="button" class="btn" disabled={busy} onClick={reply("always")}>
          No limit
        </button>
        <button type="button" class="btn btn-primary" disabled={busy} onClick={reply("once")}>
          Continue (another budget)
        </button>
      </div>
      {error && <div class="ask-error">{error}</div>}
    </div>
  );
}

export function PermissionPrompt({ request }: { request: PermissionRequest }) {
  const [busy, error, run] = useSubmit();
  const reply = (answer: "once" | "always" | "reject") => () => run(() => api.replyPermission(request.id, answer));
  if (request.permission === "budget") return <BudgetPrompt request={request} />;
  return (
    <div class="ask ask-permission" role="group" aria-label="Permission request" data-request={request.id}>
      <div class="ask-text">
        Allow <strong>{request.permission}</strong>
        {request.patterns.length > 0 && (
          <>
            {" "}on <code>{request.patterns.map(relativePath).join(", ")}</code>
          </>
        )}
        ?
      </div>
      <div class="ask-actions">
        <button type="button" class="btn btn-danger" disabled={busy} onClick={reply("reject")}>
          Deny
        </button>
        <button type="button" class="btn" disabled={busy} onClick={reply("always")} title={request.always.join(", ")}>
          Allow always
        </button>
        <button type="button" class="btn btn-primary" disabled={busy} onClick={reply("once")}>
          Allow once
        </button>
      </div>
      {error && <div class="ask-error">{error}</div>}
    </div>
  );
}

export function QuestionPrompt({ request }: { request: QuestionRequest }) {
  const [busy, error, run] = useSubmit();
  const [chosen, setChosen] = useState<string[][]>(request.questions.map(() => []));
  const [custom, setCustom] = useState<string[]>(request.questions.map(() => ""));
  const toggle = (index: number, label: string, multiple: boolean) => {
    const next = chosen.map((c) => c.slice());
    next[index] = multiple
      ? next[index].includes(label)
        ? next[index].filter((l) => l !== label)
        : [...next[index], label]
      : [label];
    setChosen(next);
    if (!multiple && request.questions.length === 1) run(() => api.replyQuestion(request.id, next));
  };
  const answers = () => chosen.map((c, i) => (custom[i].trim() ? [...c, custom[i].trim()] : c));
  return (
    <div class="ask ask-question" role="group" aria-label="Question" data-request={request.id}>
      {request.questions.map((q, i) => (
        <div key={i} class="ask-one">
          <div class="ask-text">
            <span class="chip">{q.header}</span> {q.question}
          </div>
          <div class="ask-options">
            {q.options.map((option) => (
              <button
                type="button"
                key={option.label}
                class={`btn option ${chosen[i].includes(option.label) ? "btn-primary" : ""}`}
                disabled={busy}
                title={option.description}
                onClick={() => toggle(i, option.label, Boolean(q.multiple))}
              >
                {option.label}
                {option.description && <span class="option-desc"> — {option.description}</span>}
              </button>
            ))}
          </div>
          <input
            class="ask-custom"
            type="text"
            placeholder="Or type your own answer"
            value={custom[i]}
            disabled={busy}
            onInput={(e) => setCustom(custom.map((c, j) => (j === i ? (e.target as HTMLInputElement).value : c)))}
            onKeyDown={(e) => {
              if (e.key === "Enter") run(() => api.replyQuestion(request.id, answers()));
            }}
          />
        </div>
      ))}
      <div class="ask-actions">
        <button type="button" class="btn btn-danger" disabled={busy} onClick={() => run(() => api.rejectQuestion(request.id))}>
          Dismiss
        </button>
        <button type="button" class="btn btn-primary" disabled={busy || answers().every((a) => a.length === 0)} onClick={() => run(() => api.replyQuestion(request.id, answers()))}>
          Answer
        </button>
      </div>
      {error && <div class="ask-error">{error}</div>}
    </div>
  );
}
