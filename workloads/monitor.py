"""The monitor: partition state into the history, broker metrics into the run directory.

Every ``interval`` seconds it asks the cluster for each partition's leader, ISR, replicas
and (where the broker answers DescribeTopicPartitions, Kafka 3.7+) the eligible leader
replicas, plus the topic's ``min.insync.replicas``, and writes one ``metadata`` line per
partition (process ``"monitor"``, ``leader`` -1 when there is none; ``elr`` and
``last_known_elr`` only where reported). A failed observation writes nothing and is
logged: the checkers must not see invented state.

Each observation has a deadline (``deadline``, by default four intervals and at least
1.5 s). It runs in a thread of its own with a client of its own; when the deadline passes
the monitor abandons it (whatever it returns later is dropped, and its client is closed
when it ends) and the next observation starts on a fresh client. A request stuck on a
paused broker therefore costs one late sample, not a silence for the length of the pause.
Every line carries ``observe_ms``, how long its observation took; ``late`` counts the
abandoned ones and ``late_ms`` keeps how long each really took once it ended.

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

    #: At most this many abandoned observations may still be running; past it the monitor
    #: waits for one to end before it starts another (each holds a client and a thread).
    MAX_ABANDONED = 8

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
        deadline: float | None = None,
    ) -> None:
        self._source_factory = source_factory
        self.topics = tuple(topics)
        self.sink = sink
        self.interval = interval
        self.deadline = deadline if deadline is not None else max(1.5, 4 * interval)
        self.metrics_urls = dict(metrics_urls or {})
        self.metrics_path = metrics_path
        self.metrics_interval = metrics_interval
        self._min_insync_every = max(1, min_insync_every)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._abandoned_running = 0
        self.observations = 0
        self.failures = 0
        self.late = 0
        self.late_ms: list[float] = []
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
    def observe_once(
        self, source: MetadataSource, min_insync: dict[str, int], took_ms: float | None = None
    ) -> int:
        """Write one observation of every partition; the number of lines written."""
        return self._write(source.describe(self.topics), min_insync, took_ms)

    def _write(
        self,
        states: Sequence[Mapping[str, Any]],
        min_insync: Mapping[str, int],
        took_ms: float | None,
    ) -> int:
        for state in sorted(states, key=lambda s: (s["topic"], s["partition"])):
            event: dict[str, Any] = {"process": PROCESS, "type": "ok", "f": "metadata"}
            event.update(state)
            if state["topic"] in min_insync:
                event["min_insync"] = min_insync[state["topic"]]
            if took_ms is not None:
                event["observe_ms"] = round(took_ms, 1)
            self.sink.append(event)
        return len(states)

    def _metadata_loop(self) -> None:
        source: MetadataSource | None = None
        min_insync: dict[str, int] = {}
        tick = 0
        while not self._stop.is_set():
            started = time.monotonic()
            with self._lock:
                crowded = self._abandoned_running >= self.MAX_ABANDONED
            if not crowded:
                want_min_insync = tick % self._min_insync_every == 0 or not min_insync
                attempt = _Attempt(self, source, want_min_insync)
                attempt.thread.start()
                attempt.done.wait(self.deadline)
                with self._lock:
                    finished = attempt.done.is_set()
                    if not finished:
                        attempt.abandoned = True
                        self._abandoned_running += 1
                if not finished:
                    # the attempt keeps its client and closes it when it ends
                    self.late += 1
                    source = None
                    log.info("monitor: observation abandoned after %.1f s", self.deadline)
                elif attempt.error is not None:
                    self.failures += 1
                    log.info("monitor: observation failed: %r", attempt.error)
                    # A client whose request went to a paused broker keeps sending there:
                    # drop it (closed aside, a close can wait on the same broker).
                    if attempt.source is not None:
                        _close_aside(attempt.source)
                    source = None
                else:
                    source = attempt.source
                    min_insync.update(attempt.min_insync)
                    self._write(attempt.states, min_insync, attempt.took_ms)
                    self.observations += 1
            tick += 1
            self._stop.wait(max(0.0, self.interval - (time.monotonic() - started)))
        if source is not None:
            try:
                source.close()
            except Exception:
                log.debug("monitor: close failed", exc_info=True)

    def _attempt_ended(self, attempt: _Attempt) -> bool:
        """Called by an attempt when it ends; True when the monitor had abandoned it."""
        with self._lock:
            if attempt.abandoned:
                self._abandoned_running -= 1
                self.late_ms.append(round(attempt.took_ms, 1))
            attempt.done.set()
            return attempt.abandoned

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


class _Attempt:
    """One observation in a thread of its own, which the monitor may abandon."""

    def __init__(self, monitor: Monitor, source: MetadataSource | None, min_insync: bool) -> None:
        self.monitor = monitor
        self.source = source
        self.want_min_insync = min_insync
        self.states: list[dict[str, Any]] = []
        self.min_insync: dict[str, int] = {}
        self.error: BaseException | None = None
        self.took_ms = 0.0
        self.abandoned = False
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, name="monitor-observe", daemon=True)

    def _run(self) -> None:
        started = time.monotonic()
        try:
            if self.source is None:
                self.source = self.monitor._source_factory()
            if self.want_min_insync:
                self.min_insync = dict(self.source.min_insync(self.monitor.topics))
            self.states = self.source.describe(self.monitor.topics)
        except Exception as exc:  # noqa: BLE001 - reported by the monitor loop
            self.error = exc
        self.took_ms = (time.monotonic() - started) * 1000
        if self.monitor._attempt_ended(self) and self.source is not None:
            _close_aside(self.source)


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
