/**
 * A ClientHub client for the server's tests, typed with the seed's declarations
 * (src/session-events.ts): subscribes to one session over Socket.IO (socket.io-client) or
 * a plain WebSocket (ws), prints "subscribed" once acknowledged, then the events it
 * received, their reduced state and that state rendered as text as one JSON line when
 * `idles` session:idle events of the main conversation have arrived.
 *
 *   node dist/scripts/hub-client.js socketio|ws URL SESSION_ID IDLES [SINCE]
 */
import { io } from "socket.io-client";
import WebSocket from "ws";
import {
  createInitialConversationState,
  reduceSessionEvent,
  renderConversation,
  type AnySessionEvent,
} from "../src/index.js";

const [transport, url, sessionId, idlesArg, since] = process.argv.slice(2);
const idles = Number(idlesArg);
const events: AnySessionEvent[] = [];
let state = createInitialConversationState();
let seen = 0;
let finish: () => void = () => {};

function received(event: AnySessionEvent): void {
  events.push(event);
  state = reduceSessionEvent(state, event);
  const mainIdle = event.type === "session:idle" && (event.context.conversationId ?? "main") === "main";
  if (mainIdle && ++seen === idles) setTimeout(() => finish(), 300);
}

function done(close: () => void): void {
  close();
  // exit once the line is written: a pipe takes it in pieces
  const line = JSON.stringify({ events, state, rendered: renderConversation(state) }) + "\n";
  process.stdout.write(line, () => process.exit(0));
}

const subscribe = since ? { sessionId, since } : { sessionId };
setTimeout(() => {
  process.stderr.write(`timed out after ${events.length} events\n`);
  process.exit(2);
}, 30_000);

if (transport === "socketio") {
  const socket = io(url, { transports: ["websocket"] });
  finish = () => done(() => socket.close());
  socket.on("session:event", received);
  socket.on("connect", () => {
    socket.emit("subscribe", subscribe, (ack: { ok: boolean; error?: string }) => {
      if (!ack.ok) {
        process.stderr.write(`refused: ${ack.error}\n`);
        process.exit(3);
      }
      process.stdout.write("subscribed\n");
    });
  });
} else {
  const socket = new WebSocket(url.replace(/^http/, "ws") + "/ws");
  finish = () => done(() => socket.close());
  socket.on("open", () => socket.send(JSON.stringify({ event: "subscribe", data: subscribe })));
  socket.on("message", (raw: WebSocket.RawData) => {
    const message = JSON.parse(raw.toString()) as { event: string; data: any };
    if (message.event === "ack") {
      if (!message.data.ok) {
        process.stderr.write(`refused: ${message.data.error}\n`);
        process.exit(3);
      }
      process.stdout.write("subscribed\n");
    } else if (message.event === "session:event") {
      received(message.data as AnySessionEvent);
    }
  });
}
