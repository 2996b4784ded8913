"""External loops for bench/capacity.py --via ingest: each session's message streamed
into POST /session/{id}/ingest at a model's pace."""

from __future__ import annotations

import asyncio
import json
import time


class IngestFeeder:
    """External loops: each session's message streamed into POST /session/{id}/ingest,
    one NDJSON line a token at ``rate`` tokens/s, with one timer a token (as lean as the
    mock model). ``sent`` notes when each delta's line was written."""

    def __init__(self, tokens: int, rate: float) -> None:
        self.tokens = tokens
        self.pause_s = 1 / rate
        self.sent: dict[str, int] = {}
        self.started = 0

    async def __call__(self, prompts: list[tuple[str, str]], stagger_s: float) -> None:
        await asyncio.gather(
            *(self._one(url, sid, i * stagger_s) for i, (url, sid) in enumerate(prompts))
        )

    async def _one(self, url: str, session: str, delay_s: float) -> None:
        await asyncio.sleep(delay_s)
        self.started += 1
        words = [f"i{self.started}w{n} " for n in range(self.tokens)]  # unique to the stream
        host, port = url.rsplit("//", 1)[1].split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        done = asyncio.get_running_loop().create_future()
        try:
            writer.write(
                f"POST /session/{session}/ingest HTTP/1.1\r\nHost: {host}\r\n"
                "content-type: application/x-ndjson\r\ntransfer-encoding: chunked\r\n\r\n".encode()
                + _line({"type": "start", "prompt": "stream please"})
                + _line({"type": "step-start"})
            )
            loop = asyncio.get_running_loop()
            loop.call_at(loop.time() + self.pause_s, self._write, writer, words, 0, done)
            await done
            response = await reader.read(65536)
            if not response.startswith(b"HTTP/1.1 200"):
                raise RuntimeError(f"ingest answered {response[:200]!r}")
        finally:
            writer.close()

    def _write(
        self, writer: asyncio.StreamWriter, words: list[str], n: int, done: asyncio.Future[None]
    ) -> None:
        if n == len(words):
            writer.write(_line({"type": "step-finish", "reason": "stop"}) + b"0\r\n\r\n")
            done.set_result(None)
            return
        self.sent[words[n]] = time.time_ns()
        writer.write(_line({"type": "text-delta", "delta": words[n]}))
        loop = asyncio.get_running_loop()
        loop.call_at(loop.time() + self.pause_s, self._write, writer, words, n + 1, done)


def _line(event: dict[str, object]) -> bytes:
    data = json.dumps(event).encode() + b"\n"
    return b"%x\r\n%s\r\n" % (len(data), data)
