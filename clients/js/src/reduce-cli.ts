/** Read a JSON array of SessionEvents on stdin, print one reduced state per session. */
import { reduceAll, type SessionEvent } from "./index.js";

const chunks: Buffer[] = [];
process.stdin.on("data", (chunk: Buffer) => chunks.push(chunk));
process.stdin.on("end", () => {
  const events = JSON.parse(Buffer.concat(chunks).toString("utf8")) as SessionEvent[];
  process.stdout.write(JSON.stringify(reduceAll(events)));
});
