// Two sessions side by side, prompt by prompt: a replay against its recording, a fork
// against its origin. The figures are the server's (GET /session/{a}/compare).
import { useEffect, useState } from "preact/hooks";
import { api } from "./api";
import { useStore } from "./hooks";
import { Markdown } from "./parts";
import { store } from "./store";
import type { Comparison, Session, Turn, TurnDiff } from "./types";

/** ``#/compare/A/B``: the two sessions, else null. */
export function compareFromHash(): [string, string] | null {
  const match = /^#\/compare\/(ses_\w+)\/(ses_\w+)/.exec(location.hash);
  return match ? [match[1], match[2]] : null;
}

/** The session this one was made from (a replay's recording, a fork's origin). */
export function originOf(session: Session | undefined): string | undefined {
  return session?.metadata?.replayOf?.sessionID ?? session?.metadata?.forkedFrom?.sessionID;
}

const ms = (value: number | null | undefined) => (value === null || value === undefined ? "–" : `${value.toLocaleString()} ms`);

function Side({ turn, diverging, side }: { turn: Turn | null; diverging: string[]; side: "A" | "B" }) {
  if (!turn) return <div class="compare-side empty">No prompt {side === "A" ? "in A" : "in B"}.</div>;
  const odd = new Set(diverging.filter((d) => d.startsWith(`${side}: `)).map((d) => d.slice(3)));
  return (
    <div class="compare-side" data-side={side}>
      <Markdown text={turn.text || "(no text)"} />
      {turn.calls.length > 0 && (
        <ul class="compare-calls">
          {turn.calls.map((call, i) => (
            <li key={i} class={odd.has(call) ? "diverging" : ""} title={odd.has(call) ? "the other session made no such call" : undefined}>
              <code>{call}</code>
            </li>
          ))}
        </ul>
      )}
      <div class="compare-figures">
        {turn.tokens.toLocaleString()} tokens · ${turn.cost.toFixed(4)} · {turn.errors} errors · first output {ms(turn.first_output_ms)} · total {ms(turn.total_ms)}
      </div>
    </div>
  );
}

function TurnRow({ diff }: { diff: TurnDiff }) {
  return (
    <section class="compare-turn" data-turn={diff.index}>
      <h3>
        {diff.index}. {diff.prompt || "(no text)"}
        <span class="compare-alike">
          {" "}
          · text {Math.round(diff.similarity * 100)}% alike · {diff.diverging.length} diverging calls
        </span>
      </h3>
      <div class="compare-columns">
        <Side turn={diff.a} diverging={diff.diverging} side="A" />
        <Side turn={diff.b} diverging={diff.diverging} side="B" />
      </div>
    </section>
  );
}

export function CompareView({ a, b }: { a: string; b: string }) {
  useStore("sessions");
  const [report, setReport] = useState<Comparison | null>(null);
  useEffect(() => {
    setReport(null);
    api.compare(a, b).then(setReport, (e: Error) => store.reportError(e.message));
  }, [a, b]);
  const title = (id: string) => store.sessions.get(id)?.title ?? id;
  return (
    <div class="conversation compare" data-testid="compare">
      <header class="compare-head">
        <div>
          A: <a href={`#/session/${a}`}>{title(a)}</a>
        </div>
        <div>
          B: <a href={`#/session/${b}`}>{title(b)}</a>
        </div>
      </header>
      {!report && <div class="empty">Comparing…</div>}
      {report && (
        <>
          <div class="compare-totals" role="status">
            {report.totals.prompts} prompts · text {Math.round(report.totals.similarity * 100)}% alike · {report.totals.diverging} diverging calls ·
            errors {report.totals.errors_a}/{report.totals.errors_b} · tokens {report.totals.tokens_a.toLocaleString()}/{report.totals.tokens_b.toLocaleString()}
          </div>
          {report.turns.map((diff) => (
            <TurnRow key={diff.index} diff={diff} />
          ))}
        </>
      )}
    </div>
  );
}
