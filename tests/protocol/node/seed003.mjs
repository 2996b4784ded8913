// Seed 003's frontend, as the seed writes it, against GET /session/{id}/stream.
//
//   node seed003.mjs URL SESSION MARKER
//
// Reads the session's part frames until an assistant message whose content holds MARKER
// has completed. Each
// frame goes through the seed's "Frontend State Management" cases, copied unmodified
// into a switch on the SSE event's name; around them this script only keeps messages by
// id and notes what the seed's state holds right before each part_complete and after
// each argsDelta. Prints {messages, beforeComplete, args, completed} as JSON.

const [url, sessionId, marker] = process.argv.slice(2);
const messages = {};
const beforeComplete = []; // [kind, what the part held right before its part_complete, final]
const args = []; // the args a tool-call part held after each argsDelta
const completed = []; // message_complete's messages

function handle(event, data) {
  if (event === "message_start") {
    messages[data.messageId] = { id: data.messageId, role: data.role, parts: [], status: "streaming" };
    return;
  }
  if (event === "message_complete") {
    messages[data.message.id].status = "complete";
    completed.push(data.message);
    return;
  }
  const message = messages[data.messageId];
  if (event === "part_complete") {
    const before = message.parts[data.partIndex];
    beforeComplete.push([data.part.type, JSON.parse(JSON.stringify(before)), data.part]);
  }
  switch (event) {
    // ---- seed 003, "Frontend State Management", unmodified ----
    // Handle streaming events
    case "part_start":
      // Initialize new part
      message.parts[data.partIndex] = { type: data.type, ...data.initialData };
      break;

    case "part_delta":
      // Update existing part
      const part = message.parts[data.partIndex];
      if (part.type === 'text') {
        part.text += data.delta;
      } else if (part.type === 'tool-call' && data.argsDelta) {
        part.args = JSON.parse(part.argsText + data.argsDelta);
      }
      break;

    case "part_complete":
      // Finalize part
      message.parts[data.partIndex] = data.part;
      break;
    // ---- end of the seed's code ----
  }
  if (event === "part_delta" && data.argsDelta) {
    args.push(JSON.parse(JSON.stringify(message.parts[data.partIndex].args)));
  }
}

const response = await fetch(`${url}/session/${sessionId}/stream`, {
  headers: { accept: "text/event-stream" },
});
if (!response.ok) throw new Error(`HTTP ${response.status}`);
const decoder = new TextDecoder();
let buffer = "";
reading: for await (const chunk of response.body) {
  buffer += decoder.decode(chunk, { stream: true });
  let end;
  while ((end = buffer.indexOf("\n\n")) >= 0) {
    const block = buffer.slice(0, end);
    buffer = buffer.slice(end + 2);
    let event = "message";
    const data = [];
    for (const line of block.split("\n")) {
      if (line.startsWith("event: ")) event = line.slice(7);
      else if (line.startsWith("data: ")) data.push(line.slice(6));
    }
    if (data.length === 0) continue;
    const parsed = JSON.parse(data.join("\n"));
    handle(event, parsed);
    const { role, content } = event === "message_complete" ? parsed.message : {};
    if (role === "assistant" && content.includes(marker)) break reading;
  }
}
const ordered = Object.values(messages).map(({ id, role, parts }) => ({ id, role, parts }));
process.stdout.write(JSON.stringify({ messages: ordered, beforeComplete, args, completed }));
process.exit(0);
