// GET /event as a fetch stream: resumes with Last-Event-ID after any drop, so the
// store sees every logged event exactly once; `server.resync` reloads from HTTP.
import type { Store } from "./store";
import type { WireEvent } from "./types";

const RETRY_MS = [250, 500, 1000, 2000, 4000];

export class EventStream {
  private controller: AbortController | null = null;
  private attempt = 0;
  private stopped = false;
  private firstConnect = true;

  constructor(
    private readonly store: Store,
    private readonly onConnected: (first: boolean) => Promise<void>,
    private readonly onResync: () => Promise<void>,
  ) {}

  start(): void {
    void this.run();
  }

  /** Drop the connection as a network failure would (tests and the bench use this). */
  drop(): void {
    this.controller?.abort();
  }

  stop(): void {
    this.stopped = true;
    this.controller?.abort();
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      this.controller = new AbortController();
      try {
        await this.read(this.controller.signal);
      } catch {
        // dropped or refused: fall through to the retry below
      }
      this.store.setConnected(false);
      if (this.stopped) return;
      const wait = RETRY_MS[Math.min(this.attempt, RETRY_MS.length - 1)];
      this.attempt += 1;
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }

  private async read(signal: AbortSignal): Promise<void> {
    const headers: Record<string, string> = { accept: "text/event-stream" };
    if (this.store.lastEventID) headers["last-event-id"] = this.store.lastEventID;
    const response = await fetch("/event", { headers, signal, cache: "no-store" });
    if (!response.ok || !response.body) throw new Error(`GET /event: HTTP ${response.status}`);
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let end = buffer.indexOf("\n\n");
      while (end >= 0) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        await this.dispatch(frame);
        end = buffer.indexOf("\n\n");
      }
    }
  }

  private async dispatch(frame: string): Promise<void> {
    let data = "";
    let id: string | undefined;
    for (const line of frame.split("\n")) {
      if (line.startsWith("data:")) data += line.slice(line.charAt(5) === " " ? 6 : 5);
      else if (line.startsWith("id:")) id = line.slice(3).trim();
    }
    if (!data) return;
    const event = JSON.parse(data) as WireEvent;
    // only an event in the server's log has an id: line; one announced while the server's
    // store took no write has none, and resuming from it would skip what came after
    if (id) this.store.lastEventID = id;
    if (event.type === "server.connected") {
      this.attempt = 0;
      this.store.setConnected(true);
      const first = this.firstConnect;
      this.firstConnect = false;
      await this.onConnected(first);
    } else if (event.type === "server.resync") {
      this.store.lastEventID = null;
      await this.onResync();
    } else if (event.type !== "server.heartbeat") {
      this.store.apply(event);
    }
  }
}
