"""A mock OpenAI-compatible server that streams at a model's pace, for bench/capacity.py.

Every chat completion is answered with ``--tokens`` one-word chunks, ``1 / --rate``
seconds apart; the words carry the request's number (``r12w0 ``, ``r12w1 `` …) so that
each delta of every session is unique. Title requests get a short answer at once.
``GET /sent`` answers when each word was written (wall-clock ns, by word) since the last
``GET /sent``: a delta's latency runs from there, so a server that falls behind and
leaves the model's words waiting in its socket shows it.

It is an asyncio protocol on uvloop with one timer per streamed token and nothing else
per token but a socket write: at 300 sessions of 100 tokens/s it must write 30,000 chunks a
second while sharing the machine with the server it measures, so it is kept as lean as
the benchmark's client (bench/capacity.py reports its CPU beside the server's).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

import httptools

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.providers.mock_openai import text
from tests.providers.titles import MOCK_TITLE, is_title_request

HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


def chunked(data: bytes) -> bytes:
    """``data`` as one chunk of a chunked-encoding body."""
    return b"%x\r\n%s\r\n" % (len(data), data)


def sse_chunk(item: dict[str, object]) -> bytes:
    """One chunk of the answer as it goes on the wire: a chunked-encoding chunk of one
    server-sent event (bench/floor.py's model sends the same bytes)."""
    return chunked(f"data: {json.dumps(item)}\n\n".encode())


DONE = chunked(b"data: [DONE]\n\n") + b"0\r\n\r\n"
NOT_FOUND = b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n"


class Paced:
    def __init__(self, tokens: int, rate: float) -> None:
        self.tokens = tokens
        self.pause_s = 1 / rate
        self.requests = 0
        self.sent: dict[str, int] = {}  # when each word was written, since the last GET /sent

    def answer(self, body: bytes) -> tuple[list[str], list[bytes]]:
        """The words and chunks of the answer to one request (each chunk a whole
        chunked-encoding chunk, the n-th streaming the n-th word)."""
        request = json.loads(body or b"{}")
        if is_title_request(request):
            return [], [b"".join(sse_chunk(item) for item in text(MOCK_TITLE))]
        self.requests += 1
        words = [f"r{self.requests}w{i} " for i in range(self.tokens)]
        return words, [sse_chunk(item) for item in text(*words)]

    def sent_json(self) -> bytes:
        sent, self.sent = self.sent, {}
        return json.dumps(sent).encode()


class _Connection(asyncio.Protocol):
    """One keep-alive connection: requests in, a paced answer out for each."""

    def __init__(self, paced: Paced) -> None:
        self.paced = paced
        self.parser = httptools.HttpRequestParser(self)
        self.body: list[bytes] = []
        self.url = b""
        self.transport: asyncio.Transport | None = None
        self.loop = asyncio.get_running_loop()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is no subclass

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            assert self.transport is not None
            self.transport.close()

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        assert self.transport is not None
        url, body = self.url, b"".join(self.body)
        self.url, self.body = b"", []
        if self.parser.get_method() == b"GET" and url == b"/sent":
            sent = self.paced.sent_json()
            head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
            self.transport.write(head + b"content-length: %d\r\n\r\n" % len(sent) + sent)
            return
        if self.parser.get_method() != b"POST" or not url.endswith(b"/chat/completions"):
            self.transport.write(NOT_FOUND)
            return
        words, chunks = self.paced.answer(body)
        self.transport.write(HEAD)
        if len(chunks) == 1:  # a title: at once
            self.transport.write(chunks[0] + DONE)
            return
        self._next(words, chunks, 0, self.loop.time())

    def _next(self, words: list[str], chunks: list[bytes], n: int, due: float) -> None:
        """Write chunk ``n`` at ``due``; each token keeps its own time (no drift)."""
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        if n == len(chunks):
            transport.write(DONE)
            return
        due += self.paced.pause_s
        self.loop.call_at(due, self._write, words, chunks, n, due)

    def _write(self, words: list[str], chunks: list[bytes], n: int, due: float) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(chunks[n])
            if n < len(words):  # chunk n streams word n; the last ones end the answer
                self.paced.sent[words[n]] = time.time_ns()
            self._next(words, chunks, n + 1, due)

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None


async def serve(port: int, paced: Paced) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: _Connection(paced), "127.0.0.1", port)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--tokens", type=int, required=True)
    parser.add_argument("--rate", type=float, required=True, help="tokens per second")
    args = parser.parse_args()
    try:
        import uvloop
    except ImportError:  # the standard loop: slower, the same answers
        asyncio.run(serve(args.port, Paced(args.tokens, args.rate)))
    else:
        uvloop.run(serve(args.port, Paced(args.tokens, args.rate)))


if __name__ == "__main__":
    main()
