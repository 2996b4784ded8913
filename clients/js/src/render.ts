/** A conversation as plain text, one line per block (sub-agents' blocks indented under them). */
import type { SessionConversationState, SubagentState } from "./reducer.js";
import type { ConversationBlock } from "./session-events.js";

function line(block: ConversationBlock): string {
  switch (block.type) {
    case "user_message":
      return `user: ${typeof block.content === "string" ? block.content : block.content.map((c) => (c.type === "text" ? c.text : `[image ${c.source.mediaType ?? ""}]`)).join(" ")}`;
    case "assistant_text":
      return `assistant: ${block.content}`;
    case "thinking":
      return `thinking: ${block.content}`;
    case "tool_use":
      return `tool ${block.toolName} ${JSON.stringify(block.input)} [${block.status ?? "complete"}]`;
    case "tool_result":
      return `${block.isError ? "error" : "result"}: ${typeof block.output === "string" ? block.output : JSON.stringify(block.output)}`;
    case "subagent":
      return `subagent ${block.name ?? ""}: ${block.input} [${block.status ?? "complete"}]`;
    case "system":
      return `system: ${block.message}`;
    case "error":
      return `error: ${block.message}`;
    case "skill_load":
      return `skill ${block.skillName}`;
  }
}

export function renderConversation(state: SessionConversationState): string {
  const out: string[] = [];
  const subagentOf = (block: ConversationBlock): SubagentState | undefined =>
    block.type === "subagent" ? state.subagents.find((s) => s.toolUseId === block.toolUseId) : undefined;
  const walk = (blocks: ConversationBlock[], indent: string): void => {
    for (const block of blocks) {
      out.push(indent + line(block).replace(/\n/g, `\n${indent}  `));
      const subagent = subagentOf(block);
      if (subagent) walk(subagent.blocks, indent + "  ");
    }
  };
  walk(state.blocks, "");
  return out.join("\n");
}
