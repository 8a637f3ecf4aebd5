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

In a run with transactions it also samples, every ``interval`` seconds, each
transactional partition's last stable offset and high watermark (``stable_offsets``,
:class:`StableOffsetSampling`; the client is :mod:`kchaos.workloads.lso`) into the run
directory's stable-offset samples (:mod:`kchaos.harness.rundir.stable_offsets`, not the
history: format 1.2 defines no such line). That observation runs in a loop of its own,
with its own client, under the same deadline and the same abandon-and-replace rule, so a
slow LSO question never delays a metadata observation. A partition that does not answer
is left out of that sample; the others are written.

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import orjson
import requests
from prometheus_client.parser import text_string_to_metric_families

from kchaos.harness.rundir.history_writer import HistorySink
from kchaos.harness.rundir.stable_offsets import StableOffsetSample
from kchaos.workloads.clients import close_quietly
from kchaos.workloads.lso import StableOffsetSource

log = logging.getLogger(__name__)

PROCESS = "monitor"
# replication health, and the log flush (fsync) timer a disk fault's measure reads
# (harness.checker.flushtimes)
HEALTH_METRIC = re.compile(
    r"under_?replicated|under_?min_?isr|at_?min_?isr|offline_?partitions|isr_?shrinks|isr_?expands"
    r"|logflushstats",
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


class SampleWriter(Protocol):
    """Where stable-offset samples go (:class:`rundir.stable_offsets.StableOffsetsWriter`)."""

    def write(self, samples: Sequence[StableOffsetSample]) -> None: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class StableOffsetSampling:
    """The monitor's second observation, in runs with transactions: each transactional
    partition's last stable offset next to its high watermark, every interval, under the
    same deadline as the metadata and in a thread of its own (a slow answer delays
    neither). ``clock`` gives nanoseconds since the run started on the history's clock;
    ``writer`` appends the samples (``rundir.stable_offsets``)."""

    source_factory: Callable[[], StableOffsetSource]
    writer: SampleWriter
    clock: Callable[[], int]


class _Track:
    """One kind of observation: its current client and its counters."""

    def __init__(self, name: str, factory: Callable[[], Any]) -> None:
        self.name = name
        self.factory = factory
        self.source: Any = None
        self.observations = 0
        self.failures = 0
        self.late = 0
        self.late_ms: list[float] = []
        self.abandoned_running = 0


class Monitor:
    """Background observer; ``start()`` / ``stop()`` (idempotent)."""

    #: At most this many abandoned observations (of each kind) may still be running; past
    #: it the monitor waits for one to end before it starts another (each holds a client
    #: and a thread).
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
        stable_offsets: StableOffsetSampling | None = None,
    ) -> None:
        self.topics = tuple(topics)
        self.sink = sink
        self.interval = interval
        self.deadline = deadline if deadline is not None else max(1.5, 4 * interval)
        self.metrics_urls = dict(metrics_urls or {})
        self.metrics_path = metrics_path
        self.metrics_interval = metrics_interval
        self.stable_offsets = stable_offsets
        self._min_insync_every = max(1, min_insync_every)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._metadata = _Track("metadata", source_factory)
        self._lso = _Track(
            "stable offsets", stable_offsets.source_factory if stable_offsets else _none
        )
        #: partitions left out of a stable-offset observation that answered otherwise
        self.lso_missing = 0
        self.scrapes = 0

    # the metadata observation's counters
    @property
    def observations(self) -> int:
        return self._metadata.observations

    @property
    def failures(self) -> int:
        return self._metadata.failures

    @property
    def late(self) -> int:
        return self._metadata.late

    @property
    def late_ms(self) -> list[float]:
        return self._metadata.late_ms

    # the stable-offset observation's counters
    @property
    def lso_observations(self) -> int:
        return self._lso.observations

    @property
    def lso_failures(self) -> int:
        return self._lso.failures

    @property
    def lso_late(self) -> int:
        return self._lso.late

    def start(self) -> None:
        self._threads = [threading.Thread(target=self._metadata_loop, name="monitor", daemon=True)]
        if self.stable_offsets is not None:
            self._threads.append(
                threading.Thread(target=self._lso_loop, name="monitor-lso", daemon=True)
            )
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
        if self.stable_offsets is not None:
            self.stable_offsets.writer.close()

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
        min_insync: dict[str, int] = {}
        topics = self.topics
        tick = 0
        while not self._stop.is_set():
            started = time.monotonic()
            want_min_insync = tick % self._min_insync_every == 0 or not min_insync

            def observe(source: MetadataSource, want: bool = want_min_insync) -> Any:
                found = dict(source.min_insync(topics)) if want else {}
                return found, source.describe(topics)

            got = self._observe(self._metadata, observe)
            if got is not None:
                (found, states), took_ms = got
                min_insync.update(found)
                self._write(states, min_insync, took_ms)
                self._metadata.observations += 1
            tick += 1
            self._stop.wait(max(0.0, self.interval - (time.monotonic() - started)))
        _close_now(self._metadata)

    def _lso_loop(self) -> None:
        sampling = self.stable_offsets
        assert sampling is not None
        while not self._stop.is_set():
            started = time.monotonic()
            got = self._observe(self._lso, lambda source: source.stable_offsets())
            if got is not None:
                (answered, missing), took_ms = got
                now = sampling.clock()
                try:
                    sampling.writer.write(
                        [
                            StableOffsetSample(
                                now, a.topic, a.partition, a.high_watermark,
                                a.last_stable_offset, took_ms,
                            )
                            for a in answered
                        ]
                    )  # fmt: skip
                except Exception:  # the samples are context: losing them must not stop the run
                    log.exception("monitor: writing stable offsets failed; sampling stops")
                    break
                self._lso.observations += 1
                self.lso_missing += len(missing)
            self._stop.wait(max(0.0, self.interval - (time.monotonic() - started)))
        _close_now(self._lso)

    def _observe(self, track: _Track, work: Callable[[Any], Any]) -> tuple[Any, float] | None:
        """Run ``work(client)`` in a thread of its own and wait at most the deadline for it;
        (its result, how long it took in ms), or None when it failed, was abandoned or
        could not start (too many abandoned ones still running)."""
        with self._lock:
            if track.abandoned_running >= self.MAX_ABANDONED:
                return None
        attempt = _Attempt(self, track, work)
        attempt.thread.start()
        attempt.done.wait(self.deadline)
        with self._lock:
            finished = attempt.done.is_set()
            if not finished:
                attempt.abandoned = True
                track.abandoned_running += 1
        if not finished:
            # the attempt keeps its client and closes it when it ends
            track.late += 1
            track.source = None
            log.info("monitor: %s observation abandoned after %.1f s", track.name, self.deadline)
            return None
        if attempt.error is not None:
            track.failures += 1
            log.info("monitor: %s observation failed: %r", track.name, attempt.error)
            # A client whose request went to a paused broker keeps sending there: drop it
            # (closed aside, a close can wait on the same broker).
            if attempt.source is not None:
                _close_aside(attempt.source)
            track.source = None
            return None
        track.source = attempt.source
        return attempt.result, attempt.took_ms

    def _attempt_ended(self, attempt: _Attempt) -> bool:
        """Called by an attempt when it ends; True when the monitor had abandoned it."""
        with self._lock:
            if attempt.abandoned:
                attempt.track.abandoned_running -= 1
                attempt.track.late_ms.append(round(attempt.took_ms, 1))
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

    def __init__(self, monitor: Monitor, track: _Track, work: Callable[[Any], Any]) -> None:
        self.monitor = monitor
        self.track = track
        self.source: Any = track.source
        self.work = work
        self.result: Any = None
        self.error: BaseException | None = None
        self.took_ms = 0.0
        self.abandoned = False
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, name="monitor-observe", daemon=True)

    def _run(self) -> None:
        started = time.monotonic()
        try:
            if self.source is None:
                self.source = self.track.factory()
            self.result = self.work(self.source)
        except Exception as exc:  # noqa: BLE001 - reported by the monitor loop
            self.error = exc
        self.took_ms = (time.monotonic() - started) * 1000
        if self.monitor._attempt_ended(self) and self.source is not None:
            _close_aside(self.source)


def _none() -> Any:
    raise RuntimeError("no stable-offset sampling configured")


def _close_now(track: _Track) -> None:
    if track.source is not None:
        close_quietly(track.source, log, "monitor: close", logging.DEBUG)
        track.source = None


def _close_aside(source: Any) -> None:
    # a client that will not close is harmless: a debug line only
    args = (source, log, "monitor: close", logging.DEBUG)
    threading.Thread(target=close_quietly, args=args, name="monitor-close", daemon=True).start()


def health_samples(text: str) -> dict[str, float]:
    """The replication-health and log-flush samples of one Prometheus exposition."""
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
