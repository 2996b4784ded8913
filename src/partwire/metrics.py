"""What the server is doing, as Prometheus metrics (``GET /metrics``).

Counts are kept here as plain numbers, bumped where the work happens and off the
per-delta path wherever a batch is at hand: the writer counts a commit's deltas once per
commit. A scrape turns them, with the states read from the runtime at that moment
(sessions running, streams open), into metric families that Prometheus' own client
library renders. The library loads on the first scrape, so it costs a start nothing.
"""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prometheus_client.core import Metric

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@dataclass
class Histogram:
    """Observations counted into cumulative buckets, as Prometheus reads them."""

    bounds: tuple[float, ...]
    counts: list[int] = field(default_factory=list)
    total: float = 0.0

    def __post_init__(self) -> None:
        self.counts = [0] * (len(self.bounds) + 1)  # the last one is +Inf

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.total += value

    def buckets(self) -> list[tuple[str, float]]:
        running, out = 0, list[tuple[str, float]]()
        for bound, count in zip((*self.bounds, float("inf")), self.counts, strict=True):
            running += count
            out.append(("+Inf" if bound == float("inf") else repr(float(bound)), running))
        return out


@dataclass
class Counts:
    """Everything counted since the process started."""

    deltas: int = 0
    commit_seconds: Histogram = field(
        default_factory=lambda: Histogram((0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.1, 1.0))
    )
    commit_writes: Histogram = field(
        default_factory=lambda: Histogram((1, 2, 4, 8, 16, 32, 64, 128, 256, 1024, 5000))
    )
    replay_seconds: Histogram = field(
        default_factory=lambda: Histogram((0.001, 0.01, 0.1, 0.5, 1.0, 5.0, 30.0))
    )
    start_wait_seconds: Histogram = field(
        default_factory=lambda: Histogram((0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0))
    )
    provider_errors: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    tokens: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    cost: defaultdict[tuple[str, str], float] = field(default_factory=lambda: defaultdict(float))


COUNTS = Counts()


def count_commit(writes: int, deltas: int, seconds: float) -> None:
    COUNTS.commit_seconds.observe(seconds)
    COUNTS.commit_writes.observe(writes)
    COUNTS.deltas += deltas


def count_start_wait(seconds: float) -> None:
    COUNTS.start_wait_seconds.observe(seconds)


def count_replay(seconds: float) -> None:
    COUNTS.replay_seconds.observe(seconds)


def count_provider_error(provider: str, kind: str, retryable: bool) -> None:
    COUNTS.provider_errors[provider, kind, "true" if retryable else "false"] += 1


def count_usage(provider: str, model: str, tokens: dict[str, int], cost: float) -> None:
    for kind, number in tokens.items():
        if number:
            COUNTS.tokens[provider, model, kind] += number
    if cost:
        COUNTS.cost[provider, model] += cost


def _families(counts: Counts, running: int, streams: dict[str, int]) -> Iterator[Metric]:
    from prometheus_client.core import (
        CounterMetricFamily,
        GaugeMetricFamily,
        HistogramMetricFamily,
    )

    live = GaugeMetricFamily("partwire_live_sessions", "Sessions running now on this server")
    live.add_metric([], running)
    yield live
    open_streams = GaugeMetricFamily(
        "partwire_streams", "Event streams open now, by transport", labels=["transport"]
    )
    for transport, number in sorted(streams.items()):
        open_streams.add_metric([transport], number)
    yield open_streams
    yield CounterMetricFamily(
        "partwire_deltas", "Streamed deltas committed and published", value=counts.deltas
    )
    for name, text, histogram in (
        (
            "partwire_commit_seconds",
            "How long one commit of the writer took",
            counts.commit_seconds,
        ),
        ("partwire_commit_writes", "Writes one commit carried", counts.commit_writes),
        (
            "partwire_stream_replay_seconds",
            "Replay lag: how long a stream resumed from a cursor read the log before going live",
            counts.replay_seconds,
        ),
        (
            "partwire_start_wait_seconds",
            "How long an answer waited to start while the event loop was busy",
            counts.start_wait_seconds,
        ),
    ):
        yield HistogramMetricFamily(
            name, text, buckets=histogram.buckets(), sum_value=histogram.total
        )
    errors = CounterMetricFamily(
        "partwire_provider_errors",
        "Model calls that failed, by provider and class (retried ones too)",
        labels=["provider", "kind", "retryable"],
    )
    for key, number in sorted(counts.provider_errors.items()):
        errors.add_metric(list(key), number)
    yield errors
    tokens = CounterMetricFamily(
        "partwire_tokens", "Tokens of completed answers", labels=["provider", "model", "kind"]
    )
    for key, number in sorted(counts.tokens.items()):
        tokens.add_metric(list(key), number)
    yield tokens
    cost = CounterMetricFamily(
        "partwire_cost_usd", "Cost of completed answers in USD", labels=["provider", "model"]
    )
    for model, usd in sorted(counts.cost.items()):
        cost.add_metric(list(model), usd)
    yield cost


def exposition(running: int, streams: dict[str, int]) -> bytes:
    """This process's counts and one runtime's states, in Prometheus' text format."""
    from prometheus_client import CollectorRegistry, generate_latest

    class _Scrape:
        def collect(self) -> Iterable[Metric]:
            return _families(COUNTS, running, streams)

        def describe(self) -> list[Any]:
            return []

    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Scrape())
    return bytes(generate_latest(registry))
