"""The monitor: partition state into the history, broker metrics into the run directory.

Every ``interval`` seconds it asks the cluster for each partition's leader, ISR, replicas
and (where the broker answers DescribeTopicPartitions, Kafka 3.7+) the eligible leader
replicas, plus the topic's ``min.insync.replicas``, and writes one ``metadata`` line per
partition (process ``"monitor"``, ``leader`` -1 when there is none; ``elr`` and
``last_known_elr`` only where reported). A failed observation writes nothing and is
logged: the checkers must not see invented state.

Separately, every ``metrics_interval`` seconds it scrapes each broker's Prometheus
endpoint (:7071, straight to the node, not through Toxiproxy) and appends the
replication-health samples (under-replicated, under-min-ISR, at-min-ISR, offline
partitions, ISR shrinks/expands) to ``broker-metrics.jsonl``, one JSON line per broker and
scrape: ``{"wall": epoch seconds, "node": id, "metrics": {"name{labels}": value}}`` or
``{"wall", "node", "error"}``.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import orjson
import requests
from prometheus_client.parser import text_string_to_metric_families

from kchaos.harness.rundir.history_writer import HistorySink

log = logging.getLogger(__name__)

PROCESS = "monitor"
HEALTH_METRIC = re.compile(
    r"under_?replicated|under_?min_?isr|at_?min_?isr|offline_?partitions|isr_?shrinks|isr_?expands",
    re.IGNORECASE,
)


class MetadataSource(Protocol):
    """Where the monitor gets partition state; the real one wraps KafkaAdminClient."""

    def describe(self, topics: Sequence[str]) -> list[dict[str, Any]]:
        """One dict per partition: topic, partition, leader, isr, replicas[, elr, ...]."""
        ...

    def min_insync(self, topics: Sequence[str]) -> dict[str, int]: ...

    def close(self) -> None: ...


def metadata_states(described: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Partition states from kafka-python's ``describe_topics`` (a Metadata request).

    kafka-python 3 names the fields as the protocol does (``name``, ``partition_index``,
    ``leader_id``, ``isr_nodes``, ``replica_nodes``), 2.x used ``topic``, ``partition``,
    ``leader``, ``isr``, ``replicas``; both are read. A topic error fails the observation
    (nothing is written), as a failed request does."""

    def field(d: Mapping[str, Any], new: str, old: str) -> Any:
        return d[new] if new in d else d[old]

    out: list[dict[str, Any]] = []
    for topic in described:
        name = field(topic, "name", "topic")
        if topic.get("error_code"):
            raise RuntimeError(f"topic {name}: error {topic['error_code']}")
        for p in topic["partitions"]:
            # a partition error (LEADER_NOT_AVAILABLE, REPLICA_NOT_AVAILABLE) describes the
            # state, which the fields carry: leader -1 when it has none
            leader = field(p, "leader_id", "leader")
            out.append(
                {
                    "topic": name,
                    "partition": field(p, "partition_index", "partition"),
                    "leader": leader if leader is not None else -1,
                    "isr": sorted(field(p, "isr_nodes", "isr")),
                    "replicas": list(field(p, "replica_nodes", "replicas")),
                }
            )
    return out


class AdminMetadataSource:
    """kafka-python's admin client: DescribeTopicPartitions (ELR) or Metadata (older)."""

    def __init__(self, bootstrap_servers: str, request_timeout_ms: int = 3000) -> None:
        from kafka import KafkaAdminClient

        self._admin = KafkaAdminClient(
            bootstrap_servers=bootstrap_servers.split(","),
            client_id="kchaos-monitor",
            request_timeout_ms=request_timeout_ms,
        )
        self._with_elr = True

    def describe(self, topics: Sequence[str]) -> list[dict[str, Any]]:
        if self._with_elr:
            try:
                return self._describe_partitions(topics)
            except Exception as exc:
                # brokers before 3.7: kafka-python refuses to send the request
                # (IncompatibleBrokerVersion, a subclass of UnsupportedVersionError), or
                # the broker answers UNSUPPORTED_VERSION
                from kafka.errors import UnsupportedVersionError

                if not isinstance(exc, UnsupportedVersionError):
                    raise
                log.info("monitor: no DescribeTopicPartitions (%r): Metadata from now on", exc)
                self._with_elr = False
        return self._describe_metadata(topics)

    def _describe_partitions(self, topics: Sequence[str]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for topic in self._admin.describe_topic_partitions(list(topics))["topics"]:
            if topic["error_code"]:
                raise RuntimeError(f"topic {topic['name']}: error {topic['error_code']}")
            for p in topic["partitions"]:
                state: dict[str, Any] = {
                    "topic": topic["name"],
                    "partition": p["partition_index"],
                    "leader": p["leader_id"] if p["leader_id"] is not None else -1,
                    "isr": sorted(p["isr_nodes"]),
                    "replicas": list(p["replica_nodes"]),
                    "elr": sorted(p["eligible_leader_replicas"] or []),
                }
                if p.get("last_known_elr"):
                    state["last_known_elr"] = sorted(p["last_known_elr"])
                out.append(state)
        return out

    def _describe_metadata(self, topics: Sequence[str]) -> list[dict[str, Any]]:
        return metadata_states(self._admin.describe_topics(list(topics)))

    def min_insync(self, topics: Sequence[str]) -> dict[str, int]:
        from kafka.admin import ConfigResource, ConfigResourceType

        resources = [ConfigResource(ConfigResourceType.TOPIC, t) for t in topics]
        got = self._admin.describe_configs(resources, config_filter="all")
        result: dict[str, int] = {}
        for name, configs in got.get("topic", {}).items():
            entry = configs.get("min.insync.replicas")
            if entry is not None:
                value = entry.get("value") if isinstance(entry, Mapping) else entry
                if value is not None:
                    result[name] = int(value)
        return result

    def close(self) -> None:
        self._admin.close()


class Monitor:
    """Background observer; ``start()`` / ``stop()`` (idempotent)."""

    def __init__(
        self,
        source_factory: Callable[[], MetadataSource],
        topics: Sequence[str],
        sink: HistorySink,
        *,
        interval: float = 0.5,
        metrics_urls: Mapping[int, str] | None = None,
        metrics_path: Path | None = None,
        metrics_interval: float = 2.0,
        min_insync_every: int = 1,
    ) -> None:
        self._source_factory = source_factory
        self.topics = tuple(topics)
        self.sink = sink
        self.interval = interval
        self.metrics_urls = dict(metrics_urls or {})
        self.metrics_path = metrics_path
        self.metrics_interval = metrics_interval
        self._min_insync_every = max(1, min_insync_every)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.observations = 0
        self.failures = 0
        self.scrapes = 0

    def start(self) -> None:
        self._threads = [threading.Thread(target=self._metadata_loop, name="monitor", daemon=True)]
        if self.metrics_urls and self.metrics_path is not None:
            self._threads.append(
                threading.Thread(target=self._scrape_loop, name="monitor-metrics", daemon=True)
            )
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(30)

    # -- partition state ---------------------------------------------------------------
    def observe_once(self, source: MetadataSource, min_insync: dict[str, int]) -> int:
        """Write one observation of every partition; the number of lines written."""
        states = source.describe(self.topics)
        for state in sorted(states, key=lambda s: (s["topic"], s["partition"])):
            event: dict[str, Any] = {"process": PROCESS, "type": "ok", "f": "metadata"}
            event.update(state)
            if state["topic"] in min_insync:
                event["min_insync"] = min_insync[state["topic"]]
            self.sink.append(event)
        return len(states)

    def _metadata_loop(self) -> None:
        source: MetadataSource | None = None
        min_insync: dict[str, int] = {}
        tick = 0
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                if source is None:
                    source = self._source_factory()
                if tick % self._min_insync_every == 0 or not min_insync:
                    min_insync.update(source.min_insync(self.topics))
                self.observe_once(source, min_insync)
                self.observations += 1
            except Exception as exc:
                self.failures += 1
                log.info("monitor: observation failed: %r", exc)
                # A client whose request went to a paused broker keeps sending there and
                # times out on every observation for as long as the pause lasts: drop it
                # (closed aside, a close can wait on the same broker) and start afresh.
                if source is not None:
                    _close_aside(source)
                    source = None
            tick += 1
            self._stop.wait(max(0.0, self.interval - (time.monotonic() - started)))
        if source is not None:
            try:
                source.close()
            except Exception:
                log.debug("monitor: close failed", exc_info=True)

    # -- broker metrics ----------------------------------------------------------------
    def _scrape_loop(self) -> None:
        assert self.metrics_path is not None
        self.metrics_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.metrics_path, "ab") as out:
            while not self._stop.is_set():
                started = time.monotonic()
                for node, url in sorted(self.metrics_urls.items()):
                    out.write(orjson.dumps(scrape(node, url)) + b"\n")
                out.flush()
                self.scrapes += 1
                self._stop.wait(max(0.0, self.metrics_interval - (time.monotonic() - started)))


def _close_aside(source: MetadataSource) -> None:
    def close() -> None:
        try:
            source.close()
        except Exception:  # noqa: BLE001 - a client that will not close is harmless
            log.debug("monitor: close failed", exc_info=True)

    threading.Thread(target=close, name="monitor-close", daemon=True).start()


def health_samples(text: str) -> dict[str, float]:
    """The replication-health samples of one Prometheus exposition."""
    found: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        if not HEALTH_METRIC.search(family.name):
            continue
        for sample in family.samples:
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items()))
            found[f"{sample.name}{{{labels}}}" if labels else sample.name] = sample.value
    return found


def scrape(node: int, url: str, timeout: float = 2.0) -> dict[str, Any]:
    wall = time.time()
    try:
        response = requests.get(url, timeout=timeout)
        response.raise_for_status()
        return {"wall": wall, "node": node, "metrics": health_samples(response.text)}
    except Exception as exc:
        return {"wall": wall, "node": node, "error": repr(exc)}
