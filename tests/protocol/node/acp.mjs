// The ACP TypeScript SDK's client app drives `partwire acp` over stdio, as an editor does.
//
//   node acp.mjs load PROJECT SESSION -- COMMAND...
//       session/load of a stored session only; prints {loaded, replayed}
//   node acp.mjs fork PROJECT SESSION PART -- COMMAND...
//       session/fork of a stored session at PART (_meta.partID; "-" forks it whole),
//       then session/load of the fork; prints {init, forked, loaded, replayed}
//   node acp.mjs PROJECT ANSWER MODE PROMPT... -- COMMAND...
//       spawns COMMAND (partwire acp) in PROJECT; initialize (offering fs/write_text_file),
//       session/new, session/set_mode MODE, one session/prompt per PROMPT (permission
//       asks answered with ANSWER: once|always|reject; "cancel:PROMPT" is cancelled
//       once it streams), then session/load of the same session on a second
//       connection; prints what the client saw as JSON
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";
import * as unstable from "@agentclientprotocol/sdk/unstable"; // session/fork

const argv = process.argv.slice(2);
const cut = argv.indexOf("--");
const loadOnly = argv[0] === "load"; // node acp.mjs load PROJECT SESSION -- COMMAND...
const forkOnly = argv[0] === "fork"; // node acp.mjs fork PROJECT SESSION PART -- COMMAND...
const [project, answer, mode, ...prompts] = argv.slice(loadOnly || forkOnly ? 1 : 0, cut);
const command = argv.slice(cut + 1);

function connectTo(seen) {
  const child = spawn(command[0], command.slice(1), {
    cwd: project,
    stdio: ["pipe", "pipe", "inherit"],
  });
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const app = acp
    .client({ name: "partwire-test" })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      seen.updates.push(params.update);
    })
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
      seen.asks.push(params);
      return { outcome: { outcome: "selected", optionId: answer } };
    })
    .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => {
      seen.writes.push({ path: params.path, content: params.content });
      return {};
    })
    .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
      // ACP_EDITOR_TEXT: the unsaved buffer this "editor" holds for every file
      seen.reads.push(params.path);
      return { content: process.env.ACP_EDITOR_TEXT };
    });
  return { child, stream, app };
}

async function session(seen) {
  const { child, stream, app } = connectTo(seen);
  const result = await app.connectWith(stream, async (ctx) => {
    const init = await ctx.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: {
        fs: { readTextFile: process.env.ACP_EDITOR_TEXT !== undefined, writeTextFile: true },
      },
    });
    const created = await ctx.request(acp.methods.agent.session.new, { cwd: project, mcpServers: [] });
    const sessionId = created.sessionId;
    await ctx.request(acp.methods.agent.session.setMode, { sessionId, modeId: mode });
    const stops = [];
    for (const text of prompts) {
      // "cancel:PROMPT" sends session/cancel once the answer has begun to stream
      const cancel = text.startsWith("cancel:");
      const sent = ctx.request(acp.methods.agent.session.prompt, {
        sessionId,
        prompt: [{ type: "text", text: cancel ? text.slice(7) : text }],
      });
      if (cancel) {
        const before = seen.updates.length;
        while (!seen.updates.slice(before).some((u) => u.sessionUpdate === "agent_message_chunk"))
          await new Promise((resolve) => setTimeout(resolve, 20));
        await ctx.notify(acp.methods.agent.session.cancel, { sessionId });
      }
      stops.push((await sent).stopReason);
    }
    return { init, sessionId, modes: created.modes, stops };
  });
  child.kill();
  return result;
}

async function load(sessionId, seen) {
  const { child, stream, app } = connectTo(seen);
  const result = await app.connectWith(stream, async (ctx) => {
    await ctx.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION });
    return await ctx.request(acp.methods.agent.session.load, { sessionId, cwd: project, mcpServers: [] });
  });
  child.kill();
  return result;
}

async function fork(sessionId, partId, seen) {
  const { child, stream, app } = connectTo(seen);
  const result = await app.connectWith(stream, async (ctx) => {
    const init = await ctx.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
    });
    const forked = await ctx.request(unstable.methods.agent.session.fork, {
      sessionId,
      cwd: project,
      ...(partId === "-" ? {} : { _meta: { partID: partId } }),
    });
    const loaded = await ctx.request(acp.methods.agent.session.load, {
      sessionId: forked.sessionId,
      cwd: project,
      mcpServers: [],
    });
    return { init, forked, loaded };
  });
  child.kill();
  return result;
}

if (forkOnly) {
  const replayed = { updates: [], asks: [], writes: [], reads: [] };
  const done = await fork(answer, mode, replayed); // the session id, then the part id
  process.stdout.write(JSON.stringify({ ...done, replayed }));
  process.exit(0);
}
if (loadOnly) {
  const replayed = { updates: [], asks: [], writes: [], reads: [] };
  const loaded = await load(answer, replayed); // the second word is the session id
  process.stdout.write(JSON.stringify({ loaded, replayed }));
  process.exit(0);
}
const live = { updates: [], asks: [], writes: [], reads: [] };
const ran = await session(live);
const replayed = { updates: [], asks: [], writes: [], reads: [] };
const loaded = await load(ran.sessionId, replayed);
process.stdout.write(JSON.stringify({ ...ran, live, loaded, replayed }));
