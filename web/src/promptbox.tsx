// The prompt box: Enter sends, Shift+Enter is a newline, `@` mentions a project file
// (GET /find/file) or an agent, and the model and agent pickers feed the request.
import { useEffect, useRef, useState } from "preact/hooks";
import { api, type PromptPart, type ProviderList } from "./api";
import { loadProjectRoot } from "./paths";
import { store } from "./store";
import type { Agent, ModelRef } from "./types";

interface Suggestion {
  kind: "file" | "agent";
  value: string;
  detail?: string;
}

interface Props {
  busy: boolean;
  onSend: (parts: PromptPart[], model: ModelRef | undefined, agent: string | undefined) => Promise<void>;
  onStop: () => void;
}

const MENTION = /(^|\s)@([\w./-]*)$/;

async function fileParts(text: string, files: Set<string>): Promise<PromptPart[]> {
  const parts: PromptPart[] = [];
  for (const path of files) {
    const value = `@${path}`;
    const start = text.indexOf(value);
    if (start < 0) continue;
    const absolute = `${await loadProjectRoot()}/${path}`;
    parts.push({
      type: "file",
      mime: "text/plain",
      url: `file://${absolute}`,
      filename: path,
      source: { type: "file", path: absolute, text: { value, start, end: start + value.length } },
    });
  }
  return parts;
}

function useChoices() {
  const [providers, setProviders] = useState<ProviderList | null>(null);
  const [agents, setAgents] = useState<Agent[]>([]);
  useEffect(() => {
    api.providers().then(setProviders, () => undefined);
    api.agents().then(setAgents, () => undefined);
  }, []);
  return { providers, agents };
}

/** A choice kept across reloads in localStorage. */
function useRemembered(key: string): [string, (value: string) => void] {
  const [value, setValue] = useState<string>(() => localStorage.getItem(key) ?? "");
  const remember = (next: string) => {
    setValue(next);
    localStorage.setItem(key, next);
  };
  return [value, remember];
}

interface PickerProps {
  label: string;
  value: string;
  onChange: (value: string) => void;
  options: { key: string; label: string }[];
  /** what the default is, shown with it ("default model (demo/demo)") */
  fallback?: string;
}

function Picker({ label, value, onChange, options, fallback }: PickerProps) {
  return (
    <select aria-label={label} value={value} onChange={(e) => onChange((e.target as HTMLSelectElement).value)}>
      <option value="">
        default {label.toLowerCase()}
        {fallback ? ` (${fallback})` : ""}
      </option>
      {options.map((o) => (
        <option key={o.key} value={o.key}>
          {o.label}
        </option>
      ))}
    </select>
  );
}

function modelOptions(providers: ProviderList | null): { key: string; label: string }[] {
  return (providers?.all ?? []).flatMap((provider) =>
    Object.values(provider.models).map((m) => ({ key: `${provider.id}/${m.id}`, label: `${provider.name} · ${m.name}` })),
  );
}

/** `@` completion over project files and agents; picked files become file parts on send. */
// file searches wait for a pause in typing (one per keystroke would queue up behind
// each other and the prompt's own requests)
const SEARCH_DEBOUNCE_MS = 120;

function useMentions(agents: Agent[], text: string, setText: (text: string) => void, box: { current: HTMLTextAreaElement | null }) {
  const [suggestions, setSuggestions] = useState<Suggestion[]>([]);
  const [selected, setSelected] = useState(0);
  const mentioned = useRef(new Set<string>());
  const lookup = useRef(0);
  const timer = useRef<number | undefined>(undefined);
  const inFlight = useRef<AbortController | null>(null);

  const suggest = (value: string, caret: number) => {
    const ticket = ++lookup.current; // a lookup still in flight must not reopen the list
    if (timer.current !== undefined) clearTimeout(timer.current);
    inFlight.current?.abort(); // one search at a time: typing on cancels the last one
    const match = MENTION.exec(value.slice(0, caret));
    if (!match) return setSuggestions([]);
    const query = match[2];
    const fromAgents: Suggestion[] = agents
      .filter((a) => !a.hidden && a.name.startsWith(query.toLowerCase()))
      .map((a) => ({ kind: "agent", value: a.name, detail: a.description }));
    timer.current = window.setTimeout(() => {
      const controller = new AbortController();
      inFlight.current = controller;
      api.findFiles(query, controller.signal).then(
        (files) => {
          if (ticket !== lookup.current) return;
          setSuggestions([...fromAgents, ...files.slice(0, 12).map((f): Suggestion => ({ kind: "file", value: f }))]);
          setSelected(0);
        },
        () => {
          if (ticket === lookup.current) setSuggestions(fromAgents);
        },
      );
    }, SEARCH_DEBOUNCE_MS);
  };

  const pick = (choice: Suggestion) => {
    const el = box.current;
    if (!el) return;
    const caret = el.selectionStart;
    const before = text.slice(0, caret).replace(MENTION, (_all, space: string) => `${space}@${choice.value} `);
    if (choice.kind === "file") mentioned.current.add(choice.value);
    lookup.current += 1;
    setText(before + text.slice(caret));
    setSuggestions([]);
    requestAnimationFrame(() => {
      el.focus();
      el.selectionStart = el.selectionEnd = before.length;
    });
  };

  /** Arrow keys, Enter/Tab and Escape while the list is open; true when the key was used. */
  const keyDown = (e: KeyboardEvent): boolean => {
    if (suggestions.length === 0) return false;
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      const step = e.key === "ArrowDown" ? 1 : -1;
      setSelected((selected + step + suggestions.length) % suggestions.length);
    } else if (e.key === "Enter" || e.key === "Tab") {
      pick(suggestions[selected]);
    } else if (e.key === "Escape") {
      setSuggestions([]); // and not a Stop: preventDefault below tells the page
    } else {
      return false;
    }
    e.preventDefault();
    return true;
  };

  /** Close the list, and let no search still under way open it again. */
  const close = () => {
    lookup.current += 1;
    if (timer.current !== undefined) clearTimeout(timer.current);
    inFlight.current?.abort();
    setSuggestions([]);
  };
  return { suggestions, selected, suggest, pick, keyDown, close, mentioned: mentioned.current };
}

function MentionList({ suggestions, selected, onPick }: { suggestions: Suggestion[]; selected: number; onPick: (s: Suggestion) => void }) {
  if (suggestions.length === 0) return null;
  return (
    <ul class="mentions" role="listbox" aria-label="Mentions">
      {suggestions.map((s, i) => (
        <li
          key={`${s.kind}:${s.value}`}
          role="option"
          aria-selected={i === selected}
          class={i === selected ? "selected" : ""}
          onMouseDown={(e) => (e.preventDefault(), onPick(s))}
        >
          <span class="mention-kind">{s.kind}</span> {s.value}
          {s.detail && <span class="mention-detail"> — {s.detail}</span>}
        </li>
      ))}
    </ul>
  );
}

const HISTORY_KEY = "partwire.history";
const HISTORY_MAX = 100;

function savedPrompts(): string[] {
  try {
    const saved: unknown = JSON.parse(localStorage.getItem(HISTORY_KEY) ?? "[]");
    return Array.isArray(saved) ? saved.filter((p): p is string => typeof p === "string") : [];
  } catch {
    return [];
  }
}

/** ↑ on the first line recalls earlier prompts (newest first), ↓ goes back towards the
 * draft being typed; prompts are kept in this browser, like a shell's history. */
function usePromptHistory(setText: (text: string) => void, box: { current: HTMLTextAreaElement | null }) {
  const index = useRef(-1); // -1: not browsing; else steps back from the newest
  const draft = useRef("");
  const show = (text: string) => {
    setText(text);
    requestAnimationFrame(() => box.current?.setSelectionRange(text.length, text.length));
  };
  const keyDown = (e: KeyboardEvent): boolean => {
    const el = box.current;
    if (!el || e.shiftKey || e.altKey || e.ctrlKey || e.metaKey) return false;
    const prompts = savedPrompts();
    const onFirstLine = !el.value.slice(0, el.selectionStart).includes("\n");
    const onLastLine = !el.value.slice(el.selectionEnd).includes("\n");
    if (e.key === "ArrowUp" && onFirstLine && index.current + 1 < prompts.length) {
      if (index.current === -1) draft.current = el.value;
      index.current += 1;
      show(prompts[prompts.length - 1 - index.current]);
    } else if (e.key === "ArrowDown" && onLastLine && index.current >= 0) {
      index.current -= 1;
      show(index.current === -1 ? draft.current : prompts[prompts.length - 1 - index.current]);
    } else {
      return false;
    }
    e.preventDefault();
    return true;
  };
  const remember = (prompt: string) => {
    const prompts = savedPrompts().filter((p) => p !== prompt);
    prompts.push(prompt);
    try {
      localStorage.setItem(HISTORY_KEY, JSON.stringify(prompts.slice(-HISTORY_MAX)));
    } catch {
      // storage full or disabled: history is a convenience
    }
    index.current = -1;
  };
  return { keyDown, remember, typed: () => (index.current = -1) };
}

export function PromptBox({ busy, onSend, onStop }: Props) {
  const { providers, agents } = useChoices();
  const [text, setText] = useState("");
  const [model, setModel] = useRemembered("partwire.model");
  const [agent, setAgent] = useRemembered("partwire.agent");
  const [sending, setSending] = useState(false);
  const box = useRef<HTMLTextAreaElement>(null);
  const mentions = useMentions(agents, text, setText, box);
  const history = usePromptHistory(setText, box);
  const { suggestions, selected, pick } = mentions;

  const models = modelOptions(providers);
  const primaryAgents = agents.filter((a) => a.mode !== "subagent" && !a.hidden);
  // a remembered choice that the server no longer offers falls back to the default
  const chosenModel = models.some((m) => m.key === model) ? model : "";
  const chosenAgent = primaryAgents.some((a) => a.name === agent) ? agent : "";
  // the agent a prompt goes to, and the model it answers with when none is chosen
  const answering = agents.find((a) => a.name === (chosenAgent || "build")) ?? primaryAgents[0];
  const defaultModel = answering?.model ? `${answering.model.providerID}/${answering.model.modelID}` : undefined;

  const send = async () => {
    const prompt = text.trim();
    if (!prompt || sending) return;
    const [providerID, ...rest] = chosenModel.split("/");
    const chosen = chosenModel ? { providerID, modelID: rest.join("/") } : undefined;
    setSending(true);
    mentions.close();
    try {
      const files = await fileParts(prompt, mentions.mentioned);
      await onSend([{ type: "text", text: prompt }, ...files], chosen, chosenAgent || undefined);
      history.remember(prompt);
      setText("");
      mentions.mentioned.clear();
    } catch (error) {
      store.reportError(`Could not send: ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      setSending(false);
    }
  };

  const onKeyDown = (e: KeyboardEvent) => {
    if (mentions.keyDown(e) || history.keyDown(e)) return;
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      void send();
    }
  };

  return (
    <form class="promptbox" onSubmit={(e) => (e.preventDefault(), void send())}>
      <MentionList suggestions={suggestions} selected={selected} onPick={pick} />
      <textarea
        ref={box}
        rows={2}
        placeholder="Ask anything — @ to mention a file or agent, Shift+Enter for a new line"
        aria-label="Prompt"
        value={text}
        onInput={(e) => {
          const el = e.target as HTMLTextAreaElement;
          setText(el.value);
          history.typed();
          mentions.suggest(el.value, el.selectionStart);
        }}
        onKeyDown={onKeyDown}
        onBlur={() => setTimeout(mentions.close, 150)}
      />
      <div class="prompt-bar">
        <Picker
          label="Agent"
          value={chosenAgent}
          onChange={setAgent}
          options={primaryAgents.map((a) => ({ key: a.name, label: a.name }))}
          fallback="build"
        />
        <Picker label="Model" value={chosenModel} onChange={setModel} options={models} fallback={defaultModel} />
        <span class="prompt-actions">
          {busy && (
            <button type="button" class="btn btn-danger" onClick={onStop} title="Stop the session (Esc)">
              ■ Stop
            </button>
          )}
          <button type="submit" class="btn btn-primary" disabled={!text.trim() || sending}>
            Send
          </button>
        </span>
      </div>
    </form>
  );
}
