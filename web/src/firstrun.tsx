// The first screen: which model answers, how to add a real one, and the demo model's
// prompts as chips to try (a click sends one).
import { useEffect, useState } from "preact/hooks";
import { api } from "./api";
import type { ModelRef } from "./types";

const DEMO_PROMPTS = ["long 300", "list", "bash ls", "question", "todo", "task list"];

export function FirstRun({ onPick }: { onPick: (prompt: string) => void }) {
  const [model, setModel] = useState<ModelRef | null | undefined>(undefined);
  useEffect(() => {
    api.agents().then(
      (agents) => setModel((agents.find((a) => a.name === "build") ?? agents[0])?.model ?? null),
      () => setModel(null),
    );
  }, []);
  if (model === undefined) return <div class="empty first-run">Send a prompt to start.</div>;
  const demo = !model || model.providerID === "demo";
  const name = model ? `${model.providerID}/${model.modelID}` : "demo/demo";
  return (
    <div class="empty first-run" data-testid="first-run">
      <p>
        Answering: <strong>{name}</strong>
        {demo && " — the offline demo model: no key, no network, a few commands to show what partwire does."}
      </p>
      {demo && (
        <>
          <p class="first-run-hint">
            For a real model, set <code>OPENAI_API_KEY</code> or <code>ANTHROPIC_API_KEY</code> and restart, or add a
            provider to <code>partwire.json</code> (it takes effect at once).
          </p>
          <div class="chips" role="group" aria-label="Try the demo">
            {DEMO_PROMPTS.map((prompt) => (
              <button key={prompt} type="button" class="chip chip-prompt" onClick={() => onPick(prompt)}>
                {prompt}
              </button>
            ))}
          </div>
        </>
      )}
      {!demo && <p class="first-run-hint">Send a prompt to start.</p>}
    </div>
  );
}
