// The AI SDK's own client code against partwire's UI message streams.
//
//   node aisdk.mjs read FILE...       each FILE one turn's SSE body → the UIMessages the
//                                     SDK's readUIMessageStream builds (JSON, one array)
//   node aisdk.mjs chat URL CHAT PROMPT [AGENT] [approve|reject]
//                                     DefaultChatTransport posts the prompt; every tool
//                                     approval asked is answered and posted again, as
//                                     useChat does; prints {message, chunks, rounds}
import { readFile } from "node:fs/promises";
import {
  DefaultChatTransport,
  parseJsonEventStream,
  readUIMessageStream,
  uiMessageChunkSchema,
} from "ai";

function plain(value) {
  return JSON.parse(JSON.stringify(value));
}

async function lastOf(messages) {
  let last;
  for await (const message of messages) last = message;
  return last;
}

function validated(body) {
  return parseJsonEventStream({ stream: body, schema: uiMessageChunkSchema }).pipeThrough(
    new TransformStream({
      transform(result, controller) {
        if (!result.success) throw result.error;
        controller.enqueue(result.value);
      },
    }),
  );
}

async function read(files) {
  const out = [];
  for (const file of files) {
    const body = new Blob([await readFile(file)]).stream();
    const message = await lastOf(
      readUIMessageStream({ stream: validated(body), onError: (e) => { throw e; } }),
    );
    out.push(plain(message));
  }
  return out;
}

function tee(stream, seen) {
  return stream.pipeThrough(
    new TransformStream({
      transform(chunk, controller) {
        seen.push(chunk.type);
        controller.enqueue(chunk);
      },
    }),
  );
}

async function chat(url, chatId, prompt, agent, answer) {
  const transport = new DefaultChatTransport({
    api: `${url}/ui/chat`,
    body: agent ? { agent } : {},
  });
  const user = { id: "user-1", role: "user", parts: [{ type: "text", text: prompt }] };
  const seen = [];
  let messages = [user];
  let message;
  let rounds = 0;
  for (;;) {
    rounds += 1;
    const stream = await transport.sendMessages({
      chatId,
      messages,
      trigger: "submit-message",
      messageId: undefined,
      abortSignal: undefined,
    });
    message = plain(
      await lastOf(
        readUIMessageStream({
          message: message,
          stream: tee(stream, seen),
          onError: (e) => { throw e; },
        }),
      ),
    );
    const asked = message.parts.filter((p) => p.state === "approval-requested");
    if (asked.length === 0 || rounds > 5) break;
    for (const part of asked) {
      part.state = "approval-responded";
      const approved = answer !== "reject";
      part.approval = { ...part.approval, approved, ...(approved ? {} : { reason: "not now" }) };
    }
    messages = [user, message];
  }
  return { message, chunks: seen, rounds };
}

const [mode, ...args] = process.argv.slice(2);
const result = mode === "read" ? await read(args) : await chat(...args);
process.stdout.write(JSON.stringify(result));
