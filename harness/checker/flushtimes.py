"""The brokers' own log flush (fsync) times, from ``broker-metrics.jsonl``.

Kafka times every flush of a log (``kafka.log:type=LogFlushStats,
name=LogFlushRateAndTimeMs``, a Yammer timer: segment rolls, ``flush.ms``, shutdown). The
brokers' JMX exporter publishes its count, median, 99th percentile and maximum in
milliseconds (compose/kafka/config/jmx-exporter.yaml), and the monitor keeps them in
``broker-metrics.jsonl`` every 2 s per broker. A disk fault that slows or freezes writes
back (``slow-sync``, ``slow-disk``, ``disk-stall``) shows there as flushes that take
seconds, or as a flush stuck until the heal and timed when it finally ends. The timer's
percentiles decay over minutes and its maximum is over the broker's life, so a fault's
effect is the highest value seen during it against the highest seen before it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from kchaos.harness.rundir.nodelogs import history_time_ns

#: The timer's metric names, without their suffix (the exporter lower-cases them).
FLUSH_TIMER = "kafka_log_logflushstats_logflushrateandtimems"
_P99 = f"{FLUSH_TIMER}_99thpercentile"
_MAX = f"{FLUSH_TIMER}_max"
_COUNT = f"{FLUSH_TIMER}_count"


@dataclass(frozen=True)
class FlushSample:
    """One scrape of one broker's flush timer, on the history's time base (ns)."""

    time: int
    p99_ms: float
    max_ms: float
    count: float

    @property
    def worst_ms(self) -> float:
        return max(self.p99_ms, self.max_ms)


def read_flush_times(path: Path, origin_unix_ns: int) -> dict[int, list[FlushSample]]:
    """Every broker's flush-timer samples in ``path`` (broker-metrics.jsonl), in time
    order; a broker whose scrapes never had the timer is absent. Unreadable lines (a torn
    last line) are skipped."""
    out: dict[int, list[FlushSample]] = {}
    with path.open("rb") as fh:
        for raw in fh:
            try:
                line = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            sample = _sample(line, origin_unix_ns)
            if sample is not None:
                out.setdefault(int(line["node"]), []).append(sample)
    for samples in out.values():
        samples.sort(key=lambda s: s.time)
    return out


def _sample(line: Any, origin_unix_ns: int) -> FlushSample | None:
    if not isinstance(line, Mapping):
        return None
    metrics, wall, node = line.get("metrics"), line.get("wall"), line.get("node")
    if not isinstance(metrics, Mapping) or not isinstance(wall, int | float):
        return None
    if not isinstance(node, int) or isinstance(node, bool):
        return None
    values = [metrics.get(k) for k in (_P99, _MAX, _COUNT)]
    if not all(isinstance(v, int | float) for v in values):
        return None
    p99, peak, count = (float(v) for v in values)  # type: ignore[arg-type]
    return FlushSample(history_time_ns(int(wall * 1000), origin_unix_ns), p99, peak, count)
