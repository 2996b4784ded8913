// The official opencode JS SDK 1.19.3 against partwire: its v2 client (/api/*) and the v1
// calls opencode's TUI made in vain before partwire had them. Prints, for each call,
// {name, ok, status, data} as JSON. Run by tests/sdk/test_opencode_sdk_v2.py.
import { createOpencodeClient } from "opencode-sdk-1-19/v2";

const baseUrl = process.env.PARTWIRE_URL;
const client = createOpencodeClient({ baseUrl });
const results = [];

async function call(name, run) {
  try {
    const result = await run();
    results.push({
      name,
      ok: !result.error,
      status: result.response?.status,
      data: result.data ?? null,
      error: result.error ?? null,
    });
    return result.data;
  } catch (error) {
    results.push({ name, ok: false, status: null, data: null, error: String(error) });
    return undefined;
  }
}

const v2 = client.v2;
await call("v2.health.get", () => v2.health.get());
await call("v2.location.get", () => v2.location.get());
await call("v2.agent.list", () => v2.agent.list());
await call("v2.command.list", () => v2.command.list());
await call("v2.skill.list", () => v2.skill.list());
await call("v2.model.list", () => v2.model.list());
await call("v2.provider.list", () => v2.provider.list());
await call("v2.fs.find", () => v2.fs.find({ query: "read" }));
await call("v2.permission.request.list", () => v2.permission.request.list());
await call("v2.question.request.list", () => v2.question.request.list());
const created = await call("v2.session.create", () => v2.session.create({ agent: "build" }));
const sessionID = created?.data?.id;
await call("v2.session.list", () => v2.session.list({ limit: 10 }));
await call("v2.session.get", () => v2.session.get({ sessionID }));
await call("v2.session.prompt", () => v2.session.prompt({ sessionID, prompt: { text: "list" } }));
await call("v2.session.wait", () => v2.session.wait({ sessionID }));
await call("v2.session.messages", () => v2.session.messages({ sessionID }));
await call("v2.session.context", () => v2.session.context({ sessionID }));
await call("v2.session.active", () => v2.session.active());
await call("v2.session.interrupt", () => v2.session.interrupt({ sessionID }));

// v1 calls of the same SDK that used to 404
await call("global.config.get", () => client.global.config.get());
await call("vcs.status", () => client.vcs.status());
await call("find.symbols", () => client.find.symbols({ query: "main" }));
await call("app.log", () =>
  client.app.log({ service: "sdk", level: "info", message: "hello from the sdk" }),
);
await call("tool.ids", () => client.tool.ids());
await call("app.skills", () => client.app.skills());
await call("provider.auth", () => client.provider.auth());
await call("experimental.capabilities.get", () => client.experimental.capabilities.get());

process.stdout.write(JSON.stringify({ sessionID, results }));
