// Every operation of one opencode JS SDK client, called against a server; prints one JSON
// line per call: {name, operationId, status, body}. Run by tests/sdk/test_sdk_sweep.py
// (against partwire) and, to record what opencode itself answers, against `opencode serve`.
//
//   SWEEP_URL      the server
//   SWEEP_SDK      the module: @opencode-ai/sdk, @opencode-ai/sdk/v2, opencode-sdk-1-19, …
//   SWEEP_DIR      the project directory the server serves (a git repository)
//
// The operations are found by walking the client (so a method a newer SDK adds is called
// too, or reported as having no arguments below); each method's HTTP verb and path are read
// from its own source, and mapped to the reference document's operationId. The arguments
// are written once per operationId as {path, query, body} with the reference's names and
// turned into the client's own calling style: v1's {path, query, body} (its path names
// taken by position) or v2's flat parameters (read from the method's buildClientParams).
import { readFileSync } from "node:fs";

const BASE = process.env.SWEEP_URL;
const SDK = process.env.SWEEP_SDK;
const DIR = process.env.SWEEP_DIR;
const CALL_TIMEOUT_MS = Number(process.env.SWEEP_TIMEOUT_MS ?? 15000);
const reference = JSON.parse(
  readFileSync(new URL("../opencode_reference/openapi.json", import.meta.url), "utf8"),
);
const { createOpencodeClient } = await import(SDK);

// ---- the reference: "VERB /path/{}" → operation ------------------------------------------
const templates = new Map();
for (const [path, item] of Object.entries(reference.paths)) {
  for (const [verb, op] of Object.entries(item)) {
    if (!op || typeof op !== "object" || !op.operationId) continue;
    const pathParams = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
    const query = (op.parameters ?? []).filter((p) => p.in === "query").map((p) => p.name);
    templates.set(`${verb.toUpperCase()} ${path.replace(/\{[^}]+\}/g, "{}")}`, {
      operationId: op.operationId,
      path,
      pathParams,
      query,
    });
  }
}

// ---- raw HTTP for setting things up -------------------------------------------------------
let counter = 0;
const unique = (stem) => `${stem}-${process.pid}-${++counter}`;
// null when the server does not answer in time (a setup step that fails leaves the call
// with an id that does not exist, and the server's answer to that is what is recorded)
async function http(method, path, body) {
  let text;
  try {
    const response = await fetch(BASE + path, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
    });
    text = await response.text();
  } catch {
    return null;
  }
  try {
    return text ? JSON.parse(text) : null;
  } catch {
    return text;
  }
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
async function until(probe, tries = 100) {
  for (let n = 0; n < tries; n++) {
    const found = await probe().catch(() => undefined);
    if (found) return found;
    await sleep(100);
  }
  return undefined;
}

const project = await http("GET", "/project/current");
const ctx = {
  projectID: project?.id ?? "missing",
  directory: DIR,
  async session(title = "sweep") {
    return (await http("POST", "/session", { title })) ?? { id: "ses_missing" };
  },
  // a session with one finished exchange: its user message, the answer and a text part
  async exchange() {
    const session = await ctx.session();
    const answer = await http("POST", `/session/${session.id}/message`, {
      parts: [{ type: "text", text: "hello" }],
    });
    const info = answer?.info ?? {};
    const part = (answer?.parts ?? []).find((p) => p.type === "text") ?? {};
    return {
      session,
      messageID: info.id ?? "msg_missing",
      userMessageID: info.parentID ?? "msg_missing",
      part,
    };
  },
  // a pending ask: the plan agent asks before it runs bash
  async permission() {
    const session = await ctx.session();
    await http("POST", `/session/${session.id}/prompt_async`, {
      agent: "plan",
      parts: [{ type: "text", text: "bash echo sweep" }],
    });
    const ask = await until(async () =>
      ((await http("GET", "/permission")) ?? []).find((p) => p.sessionID === session.id),
    );
    return { session, id: ask?.id ?? "per_missing" };
  },
  async question() {
    const session = await ctx.session();
    await http("POST", `/session/${session.id}/prompt_async`, {
      parts: [{ type: "text", text: "question" }],
    });
    const asked = await until(async () =>
      ((await http("GET", "/question")) ?? []).find((q) => q.sessionID === session.id),
    );
    return { session, id: asked?.id ?? "que_missing" };
  },
  async pty() {
    return (await http("POST", "/pty", { command: "/bin/sh" })) ?? { id: "pty_missing" };
  },
  // opencode keeps v2's terminals apart from v1's (partwire's are the same ones)
  async v2pty() {
    const made = await http("POST", "/api/pty", { command: "/bin/sh" });
    return made?.data ?? { id: "pty_missing" };
  },
  async worktree() {
    return (await http("POST", "/experimental/worktree", { name: unique("sweep") })) ?? {};
  },
  async saved() {
    const { session, id } = await ctx.permission();
    await http("POST", `/permission/${id}/reply`, { reply: "always" });
    const saved = await http("GET", "/api/permission/saved");
    const mine = (saved?.data ?? []).find((s) => s.id.startsWith(session.id)) ?? saved?.data?.[0];
    return mine?.id ?? "missing";
  },
  patch(name) {
    return `diff --git a/${name} b/${name}\nnew file mode 100644\n--- /dev/null\n+++ b/${name}\n@@ -0,0 +1 @@\n+sweep\n`;
  },
};

const text = (t) => [{ type: "text", text: t }];
const demo = { providerID: "demo", modelID: "demo" };

// ---- the arguments of every operation ---------------------------------------------------
const ARGS = {
  "auth.set": async () => ({ path: { providerID: "openai" }, body: { type: "api", key: "sk-sweep" } }),
  "auth.remove": async () => {
    await http("PUT", "/auth/anthropic", { type: "api", key: "sk-sweep" });
    return { path: { providerID: "anthropic" } };
  },
  "app.log": async () => ({ body: { service: "sweep", level: "info", message: "hello" } }),
  "experimental.controlPlane.moveSession": async () => {
    const [session, tree] = [await ctx.session(), await ctx.worktree()];
    return { body: { sessionID: session.id, destination: { directory: tree.directory ?? DIR } } };
  },
  "global.health": async () => ({}),
  "global.event": async () => ({ stream: true }),
  "global.config.get": async () => ({}),
  "global.config.update": async () => ({ body: { username: "sweep" } }),
  "global.dispose": async () => ({ last: true }),
  "global.upgrade": async () => ({ body: { target: "0.0.1" } }),
  "event.subscribe": async () => ({ stream: true }),
  "config.get": async () => ({}),
  "config.update": async () => ({ body: { username: "sweep" } }),
  "config.providers": async () => ({}),
  "experimental.capabilities.get": async () => ({}),
  "experimental.console.get": async () => ({}),
  "experimental.console.listOrgs": async () => ({}),
  "experimental.console.switchOrg": async () => ({ body: { accountID: "acc", orgID: "org" } }),
  "tool.list": async () => ({ query: { provider: "demo", model: "demo" } }),
  "tool.ids": async () => ({}),
  "worktree.list": async () => ({}),
  "worktree.create": async () => ({ body: { name: unique("sweep") } }),
  "worktree.remove": async () => ({ body: { directory: (await ctx.worktree()).directory } }),
  "worktree.reset": async () => ({ body: { directory: (await ctx.worktree()).directory } }),
  "experimental.session.list": async () => ({}),
  "experimental.session.background": async () => ({ path: { sessionID: (await ctx.session()).id } }),
  "experimental.resource.list": async () => ({}),
  "find.text": async () => ({ query: { pattern: "alpha" } }),
  "find.files": async () => ({ query: { query: "notes" } }),
  "find.symbols": async () => ({ query: { query: "main" } }),
  "file.list": async () => ({ query: { path: "." } }),
  "file.read": async () => ({ query: { path: "notes.txt" } }),
  "file.status": async () => ({}),
  "instance.dispose": async () => ({ last: true }),
  "path.get": async () => ({}),
  "vcs.get": async () => ({}),
  "vcs.status": async () => ({}),
  "vcs.diff": async () => ({ query: { mode: "git" } }),
  "vcs.diff.raw": async () => ({}),
  "vcs.apply": async () => ({ body: { patch: ctx.patch(`${unique("applied")}.txt`) } }),
  "command.list": async () => ({}),
  "app.agents": async () => ({}),
  "app.skills": async () => ({}),
  "lsp.status": async () => ({}),
  "formatter.status": async () => ({}),
  "mcp.status": async () => ({}),
  "mcp.add": async () => ({
    body: { name: unique("mcp"), config: { type: "local", command: ["true"], enabled: false } },
  }),
  "mcp.auth.start": async () => ({ path: { name: "sweep" } }),
  "mcp.auth.remove": async () => ({ path: { name: "sweep" } }),
  "mcp.auth.callback": async () => ({ path: { name: "sweep" }, body: { code: "x" } }),
  "mcp.auth.authenticate": async () => ({ path: { name: "sweep" } }),
  "mcp.connect": async () => ({ path: { name: "sweep" } }),
  "mcp.disconnect": async () => ({ path: { name: "sweep" } }),
  "project.list": async () => ({}),
  "project.current": async () => ({}),
  "project.initGit": async () => ({}),
  "project.update": async () => ({ path: { projectID: ctx.projectID }, body: { name: "sweep" } }),
  "project.directories": async () => ({ path: { projectID: ctx.projectID } }),
  "experimental.projectCopy.generateName": async () => ({
    path: { projectID: ctx.projectID },
    body: { context: "fix the login bug" },
  }),
  "pty.shells": async () => ({}),
  "pty.list": async () => ({}),
  "pty.create": async () => ({ body: { command: "/bin/sh", title: "sweep" } }),
  "pty.get": async () => ({ path: { ptyID: (await ctx.pty()).id } }),
  "pty.update": async () => ({ path: { ptyID: (await ctx.pty()).id }, body: { title: "renamed" } }),
  "pty.remove": async () => ({ path: { ptyID: (await ctx.pty()).id } }),
  "pty.connectToken": async () => ({ path: { ptyID: (await ctx.pty()).id } }),
  "pty.connect": async () => ({ path: { ptyID: (await ctx.pty()).id } }),
  "question.list": async () => ({}),
  "question.reply": async () => ({
    path: { requestID: (await ctx.question()).id },
    body: { answers: [["Blue"]] },
  }),
  "question.reject": async () => ({ path: { requestID: (await ctx.question()).id } }),
  "permission.list": async () => ({}),
  "permission.reply": async () => ({
    path: { requestID: (await ctx.permission()).id },
    body: { reply: "once" },
  }),
  "provider.list": async () => ({}),
  "provider.auth": async () => ({}),
  "provider.oauth.authorize": async () => ({ path: { providerID: "openai" }, body: { method: 0 } }),
  "provider.oauth.callback": async () => ({
    path: { providerID: "nope" },
    body: { method: 0, code: "x" },
  }),
  "session.list": async () => ({}),
  "session.create": async () => ({ body: { title: "sweep" } }),
  "session.status": async () => ({}),
  "session.get": async () => ({ path: { sessionID: (await ctx.session()).id } }),
  "session.delete": async () => ({ path: { sessionID: (await ctx.session()).id } }),
  "session.update": async () => ({
    path: { sessionID: (await ctx.session()).id },
    body: { title: "renamed" },
  }),
  "session.children": async () => ({ path: { sessionID: (await ctx.session()).id } }),
  "session.todo": async () => ({ path: { sessionID: (await ctx.session()).id } }),
  "session.diff": async () => ({ path: { sessionID: (await ctx.session()).id } }),
  "session.messages": async () => ({ path: { sessionID: (await ctx.exchange()).session.id } }),
  "session.prompt": async () => ({
    path: { sessionID: (await ctx.session()).id },
    body: { parts: text("hello") },
  }),
  "session.message": async () => {
    const { session, messageID } = await ctx.exchange();
    return { path: { sessionID: session.id, messageID } };
  },
  "session.deleteMessage": async () => {
    const { session, messageID } = await ctx.exchange();
    return { path: { sessionID: session.id, messageID } };
  },
  "session.fork": async () => ({ path: { sessionID: (await ctx.exchange()).session.id }, body: {} }),
  "session.abort": async () => ({ path: { sessionID: (await ctx.session()).id } }),
  "session.init": async () => {
    const messageID = `msg_${Date.now().toString(16)}${unique("init").replace(/\W/g, "")}`;
    return { path: { sessionID: (await ctx.session()).id }, body: { ...demo, messageID } };
  },
  "session.share": async () => ({ path: { sessionID: (await ctx.session()).id } }),
  "session.unshare": async () => ({ path: { sessionID: (await ctx.session()).id } }),
  "session.summarize": async () => ({
    path: { sessionID: (await ctx.exchange()).session.id },
    body: demo,
  }),
  "session.prompt_async": async () => ({
    path: { sessionID: (await ctx.session()).id },
    body: { parts: text("hello") },
  }),
  "session.command": async () => ({
    path: { sessionID: (await ctx.session()).id },
    body: { command: "sweep", arguments: "notes.txt" },
  }),
  "session.shell": async () => ({
    path: { sessionID: (await ctx.session()).id },
    body: { agent: "build", command: "echo sweep" },
  }),
  "session.revert": async () => {
    const { session, userMessageID } = await ctx.exchange();
    return { path: { sessionID: session.id }, body: { messageID: userMessageID } };
  },
  "session.unrevert": async () => ({ path: { sessionID: (await ctx.exchange()).session.id } }),
  "permission.respond": async () => {
    const { session, id } = await ctx.permission();
    return { path: { sessionID: session.id, permissionID: id }, body: { response: "once" } };
  },
  "part.delete": async () => {
    const { session, messageID, part } = await ctx.exchange();
    return { path: { sessionID: session.id, messageID, partID: part.id ?? "prt_missing" } };
  },
  "part.update": async () => {
    const { session, messageID, part } = await ctx.exchange();
    return {
      path: { sessionID: session.id, messageID, partID: part.id ?? "prt_missing" },
      body: { ...part, text: "edited" },
    };
  },
  "sync.start": async () => ({}),
  "sync.replay": async () => ({ body: { directory: DIR, events: [] } }),
  "sync.steal": async () => ({ body: { sessionID: (await ctx.session()).id } }),
  "sync.history.list": async () => ({ body: {} }),
  "tui.appendPrompt": async () => ({ body: { text: "hello" } }),
  "tui.openHelp": async () => ({}),
  "tui.openSessions": async () => ({}),
  "tui.openThemes": async () => ({}),
  "tui.openModels": async () => ({}),
  "tui.submitPrompt": async () => ({}),
  "tui.clearPrompt": async () => ({}),
  "tui.executeCommand": async () => ({ body: { command: "agent.cycle" } }),
  "tui.showToast": async () => ({ body: { message: "hello", variant: "info" } }),
  "tui.publish": async () => ({
    body: { type: "tui.prompt.append", properties: { text: "hello" } },
  }),
  "tui.selectSession": async () => ({ body: { sessionID: (await ctx.session()).id } }),
  "tui.control.next": async () => ({}),
  "tui.control.response": async () => ({ body: { ok: true } }),
  "experimental.workspace.adapter.list": async () => ({}),
  "experimental.workspace.list": async () => ({}),
  "experimental.workspace.create": async () => ({ body: { type: "sweep" } }),
  "experimental.workspace.syncList": async () => ({}),
  "experimental.workspace.status": async () => ({}),
  "experimental.workspace.remove": async () => ({ path: { id: "wrk_sweep" } }),
  "experimental.workspace.warp": async () => ({
    body: { id: null, sessionID: (await ctx.session()).id },
  }),
  "v2.health.get": async () => ({}),
  "v2.location.get": async () => ({}),
  "v2.agent.list": async () => ({}),
  "v2.session.list": async () => ({ query: { limit: 5 } }),
  "v2.session.create": async () => ({ body: { agent: "build" } }),
  "v2.session.active": async () => ({}),
  "v2.session.get": async () => ({ path: { sessionID: (await ctx.session()).id } }),
  "v2.session.switchAgent": async () => ({
    path: { sessionID: (await ctx.session()).id },
    body: { agent: "plan" },
  }),
  "v2.session.switchModel": async () => ({
    path: { sessionID: (await ctx.session()).id },
    body: { model: { id: "demo", providerID: "demo" } },
  }),
  "v2.session.prompt": async () => ({
    path: { sessionID: (await ctx.session()).id },
    body: { prompt: { text: "hello" } },
  }),
  "v2.session.compact": async () => ({ path: { sessionID: (await ctx.exchange()).session.id } }),
  "v2.session.wait": async () => ({ path: { sessionID: (await ctx.exchange()).session.id } }),
  "v2.session.revert.stage": async () => {
    const { session, userMessageID } = await ctx.exchange();
    return { path: { sessionID: session.id }, body: { messageID: userMessageID } };
  },
  "v2.session.revert.clear": async () => ({ path: { sessionID: (await ctx.exchange()).session.id } }),
  "v2.session.revert.commit": async () => ({ path: { sessionID: (await ctx.exchange()).session.id } }),
  "v2.session.context": async () => ({ path: { sessionID: (await ctx.exchange()).session.id } }),
  "v2.session.history": async () => ({ path: { sessionID: (await ctx.exchange()).session.id } }),
  "v2.session.events": async () => ({
    path: { sessionID: (await ctx.exchange()).session.id },
    stream: true,
  }),
  "v2.session.interrupt": async () => ({ path: { sessionID: (await ctx.session()).id } }),
  "v2.session.message": async () => {
    const { session, messageID } = await ctx.exchange();
    return { path: { sessionID: session.id, messageID } };
  },
  "v2.session.messages": async () => ({ path: { sessionID: (await ctx.exchange()).session.id } }),
  "v2.model.list": async () => ({}),
  "v2.provider.list": async () => ({}),
  "v2.provider.get": async () => ({ path: { providerID: "openai" } }),
  "v2.integration.list": async () => ({}),
  "v2.integration.get": async () => ({ path: { integrationID: "openai" } }),
  "v2.integration.connect.key": async () => ({
    path: { integrationID: "openai" },
    body: { key: "sk-sweep", label: "sweep" },
  }),
  "v2.integration.connect.oauth": async () => ({
    path: { integrationID: "openai" },
    body: { methodID: "chatgpt-browser", inputs: {} },
  }),
  "v2.integration.attempt.status": async () => ({ path: { attemptID: "att_sweep" } }),
  "v2.integration.attempt.cancel": async () => ({ path: { attemptID: "att_sweep" } }),
  "v2.integration.attempt.complete": async () => ({ path: { attemptID: "att_sweep" }, body: {} }),
  "v2.credential.update": async () => {
    await http("POST", "/api/integration/openai/connect/key", { key: "sk-sweep" });
    return { path: { credentialID: "crd_openai" }, body: { label: "renamed" } };
  },
  "v2.credential.remove": async () => {
    await http("POST", "/api/integration/openai/connect/key", { key: "sk-sweep" });
    return { path: { credentialID: "crd_openai" } };
  },
  "v2.permission.request.list": async () => ({}),
  "v2.permission.saved.list": async () => ({}),
  "v2.permission.saved.remove": async () => ({ path: { id: await ctx.saved() } }),
  "v2.session.permission.create": async () => ({
    path: { sessionID: (await ctx.session()).id },
    body: { action: "bash", resources: ["echo sweep"] },
  }),
  "v2.session.permission.list": async () => ({ path: { sessionID: (await ctx.permission()).session.id } }),
  "v2.session.permission.get": async () => {
    const { session, id } = await ctx.permission();
    return { path: { sessionID: session.id, requestID: id } };
  },
  "v2.session.permission.reply": async () => {
    const { session, id } = await ctx.permission();
    return { path: { sessionID: session.id, requestID: id }, body: { reply: "once" } };
  },
  "v2.fs.read": async () => ({}),
  "v2.fs.list": async () => ({ query: { path: "." } }),
  "v2.fs.find": async () => ({ query: { query: "notes" } }),
  "v2.command.list": async () => ({}),
  "v2.skill.list": async () => ({}),
  "v2.event.subscribe": async () => ({ stream: true }),
  "v2.pty.list": async () => ({}),
  "v2.pty.create": async () => ({ body: { command: "/bin/sh" } }),
  "v2.pty.get": async () => ({ path: { ptyID: (await ctx.v2pty()).id } }),
  "v2.pty.update": async () => ({ path: { ptyID: (await ctx.v2pty()).id }, body: { title: "renamed" } }),
  "v2.pty.remove": async () => ({ path: { ptyID: (await ctx.v2pty()).id } }),
  "v2.pty.connectToken": async () => ({ path: { ptyID: (await ctx.v2pty()).id } }),
  "v2.pty.connect": async () => ({ path: { ptyID: (await ctx.v2pty()).id } }),
  "v2.question.request.list": async () => ({}),
  "v2.session.question.list": async () => ({ path: { sessionID: (await ctx.question()).session.id } }),
  "v2.session.question.reply": async () => {
    const { session, id } = await ctx.question();
    return { path: { sessionID: session.id, requestID: id }, body: { answers: [["Blue"]] } };
  },
  "v2.session.question.reject": async () => {
    const { session, id } = await ctx.question();
    return { path: { sessionID: session.id, requestID: id } };
  },
  "v2.reference.list": async () => ({}),
  "v2.projectCopy.create": async () => ({
    path: { projectID: ctx.projectID },
    body: { strategy: "worktree", directory: DIR, name: unique("copy") },
  }),
  "v2.projectCopy.remove": async () => ({
    path: { projectID: ctx.projectID },
    body: { directory: (await ctx.worktree()).directory ?? DIR, force: true },
  }),
  "v2.projectCopy.refresh": async () => ({ path: { projectID: ctx.projectID } }),
};

// ---- the client's operations ----------------------------------------------------------
function operations(root) {
  const found = [];
  const seen = new Set();
  function walk(node, prefix) {
    if (seen.has(node)) return;
    seen.add(node);
    const names = new Set();
    for (let proto = node; proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
      for (const name of Object.getOwnPropertyNames(proto)) names.add(name);
    }
    for (const name of names) {
      if (name === "constructor" || name.startsWith("_") || name === "client") continue;
      const value = node[name];
      if (typeof value === "function") {
        const source = value.toString();
        // v1: .get.sse({url}), v2: .sse.get({url}), else .get({url})
        const call = source.match(/\)\.(sse\.)?(get|post|put|patch|delete)(\.sse)?\(\{\s*url: "([^"]+)"/);
        if (call) {
          const sse = Boolean(call[1] || call[3]);
          found.push({ name: prefix + name, fn: value.bind(node), source, verb: call[2], sse, url: call[4] });
        }
      } else if (value && typeof value === "object" && !Array.isArray(value)) {
        walk(value, `${prefix}${name}.`);
      }
    }
  }
  walk(root, "");
  return found;
}

// v2 methods list their parameters: {in, key} and {key, map: "body"}
function flatKeys(source) {
  const keys = { body: null };
  for (const m of source.matchAll(/\{ key: "(\w+)", map: "body" \}/g)) keys.body = m[1];
  return keys;
}

function callArgs(op, template, args) {
  const path = args.path ?? {};
  const query = args.query ?? {};
  const v1 = !op.source.includes("buildClientParams");
  if (v1) {
    const names = [...op.url.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
    const positional = Object.fromEntries(names.map((n, i) => [n, path[template.pathParams[i]]]));
    const out = {};
    if (names.length) out.path = positional;
    if (Object.keys(query).length) out.query = query;
    if (args.body !== undefined) out.body = args.body;
    return out;
  }
  const whole = flatKeys(op.source).body;
  const body = args.body === undefined ? {} : whole ? { [whole]: args.body } : args.body;
  return { ...path, ...query, ...body };
}

async function outcome(op, promise) {
  const result = await promise;
  if (op.sse) {
    // one event (or the stream's end) is enough: a 2xx stream that speaks
    const first = await Promise.race([
      result.stream.next().then((r) => r.value ?? null),
      sleep(5000).then(() => null),
    ]);
    await result.stream.return?.();
    return { status: 200, body: first };
  }
  return { status: result.response?.status ?? null, body: result.data ?? result.error ?? null };
}

const client = createOpencodeClient({ baseUrl: BASE });
const found = operations(client);
const late = [];
for (const op of found) {
  const template = templates.get(`${op.verb.toUpperCase()} ${op.url.replace(/\{[^}]+\}/g, "{}")}`);
  const operationId = template?.operationId ?? null;
  const make = operationId && ARGS[operationId];
  if (!make) {
    console.log(JSON.stringify({ name: op.name, operationId, status: null, body: "no arguments for it" }));
    continue;
  }
  const args = await make();
  if (args.last) {
    late.push({ op, operationId, template, args });
    continue;
  }
  await run(op, operationId, template, args);
}
for (const { op, operationId, template, args } of late) await run(op, operationId, template, args);

async function run(op, operationId, template, args) {
  let line;
  try {
    const signal = AbortSignal.timeout(CALL_TIMEOUT_MS);
    const params = callArgs(op, template, args);
    const pending = op.source.includes("buildClientParams")
      ? op.fn(params, { signal })
      : op.fn({ ...params, signal });
    const result = await outcome(op, pending);
    line = { name: op.name, operationId, ...result };
  } catch (error) {
    line = { name: op.name, operationId, status: null, body: `threw: ${String(error)}` };
  }
  console.log(JSON.stringify(line));
}
// an SSE call's stream may hold the process open after its reader let go of it
process.exit(0);
