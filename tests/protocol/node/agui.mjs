// @ag-ui/client's HttpAgent against partwire's POST /agui.
//
//   node agui.mjs run URL THREAD PROMPT [AGENT] [once|always|reject]
//       runs the prompt; every interrupt a run ends with is answered with a new run's
//       resume entries; prints {messages, state, events, rounds, interrupts}
//   node agui.mjs reconnect URL THREAD
//       a run with nothing new: the messages snapshot and state; prints the same
//   node agui.mjs replay FILE...
//       each FILE one run's SSE body, fed to one HttpAgent run after another through
//       its own pipeline (fetch answers with the file); prints the same
import { readFile } from "node:fs/promises";
import { HttpAgent } from "@ag-ui/client";

function agentFor(url, threadId) {
  return new HttpAgent({ url: `${url}/agui`, threadId });
}

function recorder(events) {
  return {
    onEvent({ event }) {
      events.push(event.type === "CUSTOM" ? `CUSTOM:${event.name}` : event.type);
    },
  };
}

async function run(url, threadId, prompt, agentName, answer = "once") {
  const agent = agentFor(url, threadId);
  agent.messages = [{ id: "user-1", role: "user", content: prompt }];
  const events = [];
  const interrupts = [];
  const forwardedProps = agentName ? { agent: agentName } : {};
  let rounds = 1;
  await agent.runAgent({ forwardedProps }, recorder(events));
  while (agent.pendingInterrupts.length > 0 && rounds < 5) {
    rounds += 1;
    interrupts.push(...agent.pendingInterrupts);
    const resume = agent.pendingInterrupts.map((interrupt) => ({
      interruptId: interrupt.id,
      status: "resolved",
      payload: { reply: answer },
    }));
    await agent.runAgent({ resume }, recorder(events));
  }
  return { messages: agent.messages, state: agent.state, events, rounds, interrupts };
}

async function reconnect(url, threadId) {
  const agent = agentFor(url, threadId);
  const events = [];
  await agent.runAgent({}, recorder(events));
  return { messages: agent.messages, state: agent.state, events, rounds: 1, interrupts: [] };
}

async function replay(files) {
  const agent = agentFor("http://replay.invalid", "replay");
  const events = [];
  for (const file of files) {
    const body = await readFile(file);
    globalThis.fetch = async () =>
      new Response(body, { headers: { "content-type": "text/event-stream" } });
    await agent.runAgent({}, recorder(events));
  }
  return { messages: agent.messages, state: agent.state, events, rounds: files.length, interrupts: [] };
}

const modes = { run, reconnect, replay: (...files) => replay(files) };
const [mode, ...args] = process.argv.slice(2);
const result = await modes[mode](...args);
process.stdout.write(JSON.stringify(result));
