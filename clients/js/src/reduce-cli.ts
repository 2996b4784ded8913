/** Read a JSON array of SessionEvents on stdin, print one reduced conversation per session. */
import { reduceAll, type AnySessionEvent } from "./index.js";

const chunks: Buffer[] = [];
process.stdin.on("data", (chunk: Buffer) => chunks.push(chunk));
process.stdin.on("end", () => {
  const events = JSON.parse(Buffer.concat(chunks).toString("utf8")) as AnySessionEvent[];
  process.stdout.write(JSON.stringify(reduceAll(events)));
});
