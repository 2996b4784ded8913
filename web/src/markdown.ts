// Markdown → sanitized HTML, a block at a time, so a streaming text part re-parses
// only its last block; code blocks are highlighted and get a copy button.
import DOMPurify from "dompurify";
import type { HLJSApi } from "highlight.js";
import { Marked, type Tokens } from "marked";
import { store } from "./store";

/** highlight.js is most of the bundle: it loads after the first paint, then code re-renders. */
let hljs: HLJSApi | null = null;

export async function loadHighlighter(): Promise<void> {
  hljs = (await import("highlight.js/lib/common")).default;
  cache.clear();
  store.notify(HIGHLIGHT_KEY);
}

export const HIGHLIGHT_KEY = "highlight";

function escape(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const marked = new Marked({
  gfm: true,
  breaks: false,
  renderer: {
    code({ text, lang }: Tokens.Code): string {
      const language = (lang ?? "").split(/\s/)[0];
      let html: string;
      try {
        // no guessing: an unlabelled block (tool output, logs) stays plain
        html =
          hljs && language && hljs.getLanguage(language)
            ? hljs.highlight(text, { language, ignoreIllegals: true }).value
            : escape(text);
      } catch {
        html = escape(text);
      }
      const label = `<span class="code-lang">${escape(language)}</span>`;
      const bar = `<div class="code-bar">${label}<button class="copy" type="button" data-copy>Copy</button></div>`;
      return `<div class="code">${bar}<pre><code class="hljs">${html}</code></pre></div>`;
    },
  },
});

// links in model output open in a new tab and tell the target nothing about this page
DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A" && node.getAttribute("href")) {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  }
});

const cache = new Map<string, string>();

/** One block's HTML; blocks repeat across repaints, so they are cached by text. */
export function renderBlock(block: string): string {
  const hit = cache.get(block);
  if (hit !== undefined) return hit;
  const html = DOMPurify.sanitize(marked.parse(block, { async: false }) as string, {
    ADD_ATTR: ["data-copy", "target"],
  });
  if (cache.size > 5000) cache.clear();
  cache.set(block, html);
  return html;
}

/**
 * Split at blank lines outside fenced code, so every block but the last is final
 * while the text streams.
 */
export function splitBlocks(text: string): string[] {
  const blocks: string[] = [];
  let fence: string | null = null;
  let start = 0;
  let lineStart = 0;
  while (lineStart <= text.length) {
    let lineEnd = text.indexOf("\n", lineStart);
    if (lineEnd < 0) lineEnd = text.length;
    const line = text.slice(lineStart, lineEnd);
    const marker = /^\s{0,3}(`{3,}|~{3,})/.exec(line);
    if (marker) {
      if (fence === null) fence = marker[1];
      else if (marker[1].startsWith(fence[0]) && marker[1].length >= fence.length) fence = null;
    } else if (fence === null && line.trim() === "" && lineStart > start) {
      blocks.push(text.slice(start, lineStart));
      start = lineEnd + 1;
    }
    lineStart = lineEnd + 1;
  }
  if (start < text.length) blocks.push(text.slice(start));
  return blocks.filter((b) => b.trim() !== "");
}

/** Copy buttons inside rendered markdown: one delegated listener for the whole page. */
export function installCopyButtons(root: HTMLElement): void {
  root.addEventListener("click", (event) => {
    const button = (event.target as HTMLElement).closest("[data-copy]");
    if (!button) return;
    const code = button.closest(".code")?.querySelector("code")?.textContent ?? "";
    void navigator.clipboard?.writeText(code).then(
      () => {
        button.textContent = "Copied";
        setTimeout(() => (button.textContent = "Copy"), 1200);
      },
      () => undefined,
    );
  });
}
