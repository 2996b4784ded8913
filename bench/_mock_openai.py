"""The mock OpenAI-compatible server of the tests, as a process for bench/provider.py.

It answers every chat completion with N one-word content chunks, as fast as it can.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import uvicorn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.providers.mock_openai import MockOpenAI, text


class Endless(MockOpenAI):
    def __init__(self, words: int) -> None:
        super().__init__()
        self.words = words

    def refill(self) -> None:
        self.script.append(text(*(f"w{i} " for i in range(self.words))))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--words", type=int, required=True)
    args = parser.parse_args()
    mock = Endless(args.words)
    for _ in range(4):
        mock.refill()
    uvicorn.run(mock.app(), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
