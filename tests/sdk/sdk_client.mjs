// Drives a partwire server with the official opencode JS SDK; prints what it saw as JSON.
// Run by tests/sdk/test_opencode_sdk.py with PARTWIRE_URL set.
import { createOpencodeClient } from "@opencode-ai/sdk";

const client = createOpencodeClient({ baseUrl: process.env.PARTWIRE_URL });
const seen = [];

function ok(result, what) {
  if (result.error) throw new Error(`${what} failed: ${JSON.stringify(result.error)}`);
  return result.data;
}

// Subscribe first, and wait until the stream is really connected.
const events = await client.event.subscribe();
let connected;
const ready = new Promise((resolve) => (connected = resolve));
const waiters = [];
const reader = (async () => {
  for await (const event of events.stream) {
    seen.push(event);
    if (event.type === "server.connected") connected();
    for (const waiter of [...waiters]) {
      if (waiter.match(event)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(event);
      }
    }
  }
})();
await ready;
const next = (match) => new Promise((resolve) => waiters.push({ match, resolve }));
const idle = (id) => next((e) => e.type === "session.idle" && e.properties.sessionID === id);

const out = {};
const session = ok(await client.session.create({ body: { title: "from the sdk" } }), "create");
out.sessionID = session.id;

const firstIdle = idle(session.id);
const answer = ok(
  await client.session.prompt({
    path: { id: session.id },
    body: { parts: [{ type: "text", text: "hello from the sdk" }] },
  }),
  "prompt",
);
out.promptParts = answer.parts.map((p) => p.type);
out.promptRole = answer.info.role;
await firstIdle; // the stream may deliver it after the HTTP answer: wait, then count

const streamed = idle(session.id);
const mark = seen.length;
ok(
  await client.session.promptAsync({
    path: { id: session.id },
    body: { parts: [{ type: "text", text: "long 40" }] },
  }),
  "promptAsync",
);
await streamed;
out.deltas = seen
  .slice(mark)
  .filter((e) => e.type === "message.part.delta" && e.properties.sessionID === session.id)
  .map((e) => e.properties.delta)
  .join("");

const messages = ok(await client.session.messages({ path: { id: session.id } }), "messages");
out.messageRoles = messages.map((m) => m.info.role);
out.lastText = messages.at(-1).parts.find((p) => p.type === "text")?.text;

const asked = next((e) => e.type === "permission.asked" && e.properties.sessionID === session.id);
const afterAsk = idle(session.id);
ok(
  await client.session.promptAsync({
    path: { id: session.id },
    body: { agent: "plan", parts: [{ type: "text", text: "bash echo sdk-approved" }] },
  }),
  "promptAsync (plan)",
);
const ask = await asked;
out.permission = ask.properties.permission;
ok(
  await client.postSessionIdPermissionsPermissionId({
    path: { id: session.id, permissionID: ask.properties.id },
    body: { response: "once" },
  }),
  "permission reply",
);
await afterAsk;
const afterPermission = ok(await client.session.messages({ path: { id: session.id } }), "messages");
const bash = afterPermission.flatMap((m) => m.parts).find((p) => p.type === "tool" && p.tool === "bash");
out.bashOutput = bash.state.output.trim();

const firstDelta = next((e) => e.type === "message.part.delta" && e.properties.sessionID === session.id);
const aborted = idle(session.id);
ok(
  await client.session.promptAsync({
    path: { id: session.id },
    body: { parts: [{ type: "text", text: "long 1000000" }] },
  }),
  "promptAsync (long)",
);
await firstDelta;
out.abort = ok(await client.session.abort({ path: { id: session.id } }), "abort");
await aborted;
const final = ok(await client.session.messages({ path: { id: session.id } }), "messages");
out.abortError = final.at(-1).info.error?.name;

const shared = ok(await client.session.share({ path: { id: session.id } }), "share");
out.shareURL = shared.share?.url;
const guest = await fetch(out.shareURL, { redirect: "manual" });
out.shareStatus = guest.status;
out.unshared = ok(await client.session.unshare({ path: { id: session.id } }), "unshare").id;

out.deleted = ok(await client.session.delete({ path: { id: session.id } }), "delete");
const gone = await client.session.get({ path: { id: session.id } });
out.getAfterDelete = gone.response.status;

console.log(JSON.stringify(out));
process.exit(0);
