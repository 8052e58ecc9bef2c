"""The engine's own Prometheus metrics. Created unregistered, so that the lobby, scoring and the tools, which
import engine modules, do not export them; `register` adds them to the default registry when the engine
serves."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from prometheus_client import REGISTRY, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector


class Tally(Collector):
    """A counter for the hottest paths (one count per watch message, per event fed): `inc` is an integer add, where
    a Prometheus `Counter` takes a lock and checks its argument every time; the count is handed to Prometheus at
    each scrape (read from the metrics server's thread: an int is read whole)."""

    def __init__(self, name: str, documentation: str) -> None:
        self._name = name
        self._documentation = documentation
        self.value = 0

    def inc(self) -> None:
        self.value += 1

    def collect(self) -> Iterator[CounterMetricFamily]:
        yield CounterMetricFamily(self._name, self._documentation, value=self.value)

    def describe(self) -> Iterator[CounterMetricFamily]:
        yield CounterMetricFamily(self._name, self._documentation)


ACTS = Counter("paiju_engine_acts_total", "Commands applied", ["game"], registry=None)
REJECTIONS = Counter("paiju_engine_rejections_total", "Commands refused, by status", ["status"], registry=None)
LATENCY = Histogram(
    "paiju_engine_act_seconds",
    "Time to apply one command (load, decide, append)",
    buckets=(0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0),
    registry=None,
)
CONFLICTS = Counter(
    "paiju_engine_conflicts_total", "Appends that lost to another writer and were decided again", registry=None
)
ACTIVE_GAMES = Gauge("paiju_engine_active_games", "Games this process has served since it started", registry=None)
FEED_EVENTS = Tally(
    "paiju_engine_feed_events_total", "Events the feed delivered (those of the partitions owned)"
)  # one count per event of every game owned: a `Tally`, as the watch messages
WATCH_MESSAGES = Tally(
    "paiju_engine_watch_messages_total",
    "Messages sent on Watch streams (an event, the events of a change, a turn alone, or why the stream ends)",
)
PARTITIONS_OWNED = Gauge("paiju_engine_partitions_owned", "Partitions of the games this replica owns", registry=None)


def register() -> None:
    """Export the engine's metrics (once per process; the engine's start calls it)."""
    for metric in (ACTS, REJECTIONS, LATENCY, CONFLICTS, ACTIVE_GAMES, FEED_EVENTS, WATCH_MESSAGES, PARTITIONS_OWNED):
        with contextlib.suppress(ValueError):  # registered already
            REGISTRY.register(metric)
