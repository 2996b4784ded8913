"""The JS client signs in with a token: `requestJson` over HTTP and `hubOptions` for
socket.io-client, against a server with users (Node, clients/js built)."""

from __future__ import annotations

import json

from partwire.config import Settings
from partwire.server.runner import serve_in_background
from tests.jsclient import require_js_client, run_js
from tests.server.test_team_access import add_token

SCRIPT = """
import { io } from "socket.io-client";
import { hubOptions, requestJson, PartwireError } from "@partwire/client";

const [server, token] = process.argv.slice(2);
const out = {};
try {
  await requestJson(server, "/session");
} catch (error) {
  out.without = error instanceof PartwireError ? error.status : String(error);
}
const session = await requestJson(server, "/session", { method: "POST", body: {}, token });
out.me = (await requestJson(server, "/user", { token })).name;
const subscribe = (options) => new Promise((resolve) => {
  const socket = io(server, options);
  socket.on("connect", () => socket.emit("subscribe", { sessionId: session.id }, (ack) => {
    socket.close();
    resolve(ack);
  }));
});
out.ack = await subscribe(hubOptions(token));
out.polled = await subscribe({ ...hubOptions(token), transports: ["polling"] });
console.log(JSON.stringify(out));
process.exit(0); // a closed polling socket's last request would keep Node alive a while
"""


async def test_the_js_client_signs_in_with_a_token(settings: Settings) -> None:
    require_js_client()
    token = add_token(settings, "alice")
    async with serve_in_background(settings) as url:
        out, _ = await run_js("token-client.mjs", SCRIPT, url, token)
    seen = json.loads(out.splitlines()[-1])
    assert seen["without"] == 401 and seen["me"] == "alice"
    assert seen["ack"]["ok"] is True and seen["polled"]["ok"] is True
