"""A mock OpenAI-compatible server that streams at a model's pace, for bench/capacity.py.

Every chat completion is answered with ``--tokens`` one-word chunks, ``1 / --rate``
seconds apart; the words carry the request's number (``r12w0 ``, ``r12w1 `` …) so that
each delta of every session is unique. Title requests get a short answer at once.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.providers.mock_openai import text
from tests.providers.titles import MOCK_TITLE, is_title_request


class Paced:
    def __init__(self, tokens: int, rate: float) -> None:
        self.tokens = tokens
        self.pause_s = 1 / rate
        self.requests = 0

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/chat/completions", self.answer, methods=["POST"])])

    async def answer(self, request: Request) -> Response:
        body = await request.json()
        if is_title_request(body):
            return StreamingResponse(
                self._stream(text(MOCK_TITLE), 0), media_type="text/event-stream"
            )
        self.requests += 1
        words = [f"r{self.requests}w{i} " for i in range(self.tokens)]
        return StreamingResponse(
            self._stream(text(*words), self.pause_s), media_type="text/event-stream"
        )

    async def _stream(self, chunks: list[dict[str, object]], pause_s: float) -> AsyncIterator[str]:
        for item in chunks:
            await asyncio.sleep(pause_s)
            yield f"data: {json.dumps(item)}\n\n"
        yield "data: [DONE]\n\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--tokens", type=int, required=True)
    parser.add_argument("--rate", type=float, required=True, help="tokens per second")
    args = parser.parse_args()
    paced = Paced(args.tokens, args.rate)
    uvicorn.run(paced.app(), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
