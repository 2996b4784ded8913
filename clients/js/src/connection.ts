/**
 * Signing in to a partwire server that has users: every request and socket carries the
 * user's token (`partwire token create --user NAME`) as `Authorization: Bearer`. A server
 * on loopback with no users needs none, and these helpers then add nothing.
 */

/** The headers that sign a request in (none without a token). */
export function authHeaders(token?: string): Record<string, string> {
  return token ? { authorization: `Bearer ${token}` } : {};
}

/** Options for socket.io-client's `io(server, …)`: the WebSocket transport, signed in
 * (Node sends `extraHeaders` on the WebSocket upgrade; browsers send the page's own
 * credentials instead). */
export function hubOptions(token?: string): {
  transports: string[];
  extraHeaders: Record<string, string>;
} {
  return { transports: ["websocket"], extraHeaders: authHeaders(token) };
}

/** The error a refused request throws: the server's status and its message. */
export class PartwireError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** One JSON request to the server's HTTP API, signed in with `token`. */
export async function requestJson<T>(
  server: string,
  path: string,
  options: { method?: string; body?: unknown; token?: string } = {},
): Promise<T> {
  const headers: Record<string, string> = authHeaders(options.token);
  const init: RequestInit = { method: options.method ?? "GET", headers };
  if (options.body !== undefined) {
    headers["content-type"] = "application/json";
    init.body = JSON.stringify(options.body);
  }
  const response = await fetch(new URL(path, server), init);
  const text = await response.text();
  if (!response.ok) {
    let message = `${init.method} ${path}: HTTP ${response.status}`;
    try {
      message = (JSON.parse(text) as { data?: { message?: string } }).data?.message ?? message;
    } catch {
      // not JSON: keep the status line
    }
    throw new PartwireError(response.status, message);
  }
  return (text ? JSON.parse(text) : null) as T;
}
