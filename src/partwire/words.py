"""Counts in words people read: ``1 line``, ``2 lines``."""

from __future__ import annotations


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"
