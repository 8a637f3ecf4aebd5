"""``kchaos bench produce``, the measuring: the recording producer against Kafka's perf-test.

On one 3-broker cluster, for each record size, side by side:

* ``perf-test``: ``kafka-producer-perf-test.sh`` in a container from the Kafka image, on
  the run's network, against the same bootstrap servers (acks=all, idempotent, linger 5);
* ``recording``: one :class:`kchaos.workloads.producer.ProducerWorker` writing the history;
* ``bare``: the same worker with recording off (a sink that drops events);

for each client library. Prints recording / perf-test (goal >= 0.8) and recording / bare
(goal >= 0.9). Each case uses a fresh topic (3 partitions, RF 3, min.insync.replicas 2).

``--transactional`` runs :mod:`kchaos.bench.produce_txn` instead: the transactional
producer, recording and bare, against the plain idempotent recording producer.
"""

from __future__ import annotations

import contextlib
import math
import re
import statistics
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kchaos.harness.errors import ConfigError, WorkloadError
from kchaos.harness.labels import labels_for
from kchaos.harness.rundir.history_writer import HistorySink, HistoryWriter, NullSink
from kchaos.workloads.clients import QUIET_LOG_LEVEL, ProducerClient, SendCallback
from kchaos.workloads.producer import ProducerWorker, producer_factory
from kchaos.workloads.spec import CLIENT_LIBS, ProducerConfig, client_lib
from kchaos.workloads.topics import delete_topics, ensure_topics

if TYPE_CHECKING:
    from kchaos.harness.cluster.api import ToolHost

PERF_TEST = "/opt/kafka/bin/kafka-producer-perf-test.sh"
_PERF_LINE = re.compile(r"(\d+) records sent, ([\d.]+) records/sec")
TOPIC_CONFIGS = {"min.insync.replicas": "2"}
BENCH_SERVER_PROPERTIES = {
    "file.delete.delay.ms": "1000",
    "log.segment.delete.delay.ms": "1000",
    "replica.lag.time.max.ms": "10000",
}


# The worker's cap on unacknowledged sends would otherwise bound the rate by cap / latency
# and the bench would time Kafka's latency, not the producer; librdkafka queues 100,000.
BENCH_IN_FLIGHT = 100_000


@dataclass(frozen=True)
class Case:
    kind: str  # perf-test | recording | bare; produce_txn: idempotent | txn-recording | txn-bare
    client: str  # java | confluent-kafka | kafka-python
    size: int
    records: int
    seconds: float
    round: int = 0

    @property
    def rate(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else 0.0


def disk_mb(sizes: list[int], records: dict[int, int]) -> int:
    """Per-broker disk for the bench: two cases' topics at once (one being deleted),
    each a full replica of its records plus ~100 B of batch overhead per record."""
    biggest = max(records[s] * (s + 100) for s in sizes)
    return max(2048, math.ceil(2 * biggest / 2**20) + 512)


def parse_perf_output(output: str) -> tuple[int, float]:
    """(records sent, records/s) from perf-test's final summary line."""
    found = _PERF_LINE.findall(output)
    if not found:
        raise WorkloadError(f"no summary in perf-test output:\n{output[-2000:]}")
    sent, rate = found[-1]
    return int(sent), float(rate)


def run_perf_test(
    cluster: ToolHost, topic: str, size: int, records: int, extra_props: tuple[str, ...] = ()
) -> Case:
    """kafka-producer-perf-test in a labelled container on the cluster's network."""
    from kchaos.harness.cluster.topology import network_name

    command = [
        "--topic", topic, "--num-records", str(records), "--record-size", str(size),
        "--throughput", "-1", "--producer-props", f"bootstrap.servers={cluster.bootstrap_servers}",
        "acks=all", "enable.idempotence=true", "linger.ms=5", *extra_props,
    ]  # fmt: skip
    container = cluster.client.containers.run(
        cluster.kafka_image,
        command=command,
        entrypoint=[PERF_TEST],
        network=network_name(cluster.run_id),
        labels=labels_for(cluster.run_id, "tool"),
        environment={"KAFKA_HEAP_OPTS": "-Xmx512m"},
        detach=True,
    )
    try:
        result = container.wait(timeout=600)
        output = container.logs().decode("utf-8", "replace")
    finally:
        container.remove(force=True)
    if result.get("StatusCode") != 0:
        raise WorkloadError(f"perf-test exited {result.get('StatusCode')}:\n{output[-2000:]}")
    sent, rate = parse_perf_output(output)
    return Case("perf-test", "java", size, sent, sent / rate if rate else 0.0)


def run_recording(
    bootstrap: str,
    lib: str,
    topic: str,
    size: int,
    records: int,
    sink: HistorySink,
    round_: int = 0,
) -> Case:
    """One producer worker sending ``records``; timed from a warmed-up client (connections,
    metadata and producer id in place, as perf-test has them before it counts) to the
    last acknowledgement."""
    quiet = {"log_level": QUIET_LOG_LEVEL} if lib == "confluent-kafka" else {}
    spec = ProducerConfig(
        count=1, rate=0, keys=0, message_size=size, max_in_flight=BENCH_IN_FLIGHT,
        configs={"linger.ms": "5", "delivery.timeout.ms": "120000", **quiet},
    )  # fmt: skip
    build = producer_factory(lib, bootstrap, spec, "kchaos-bench")
    started: list[float] = []

    def warmed(on_done: SendCallback) -> ProducerClient:
        client = build(on_done)
        client.send(topic, None, b"warm-up", "warm-up")  # not a worker value: ignored
        client.flush(60)
        started.append(time.monotonic())
        return client

    worker = ProducerWorker(1, [topic], spec, sink, warmed, limit=records)
    worker.start()
    worker.join()
    worker.stop(close_timeout=300)
    if worker.error is not None:
        raise WorkloadError(f"{lib} producer failed: {worker.error!r}")
    seconds = time.monotonic() - started[0]
    if worker.counts["ok"] != records:
        raise WorkloadError(f"{lib}: only {worker.counts['ok']} of {records} sends acknowledged")
    kind = "recording" if isinstance(sink, HistoryWriter) else "bare"
    return Case(kind, lib, size, records, seconds, round_)


def run_bench(
    cluster: ToolHost,
    sizes: list[int],
    libs: list[str],
    records: dict[int, int],
    repeat: int,
    log: Any,
    perf_props: tuple[str, ...] = (),
) -> list[Case]:
    """A warm-up round (not counted), then ``repeat`` rounds per size: perf-test, and per
    client the recording and bare producer, in alternating order (pairs within a round
    share the cluster's state). Each case has a fresh topic, deleted after it."""
    cases: list[Case] = []
    tmp = Path(tempfile.mkdtemp(prefix="kchaos-bench-"))
    counter = 0
    bootstrap = cluster.bootstrap_servers

    def fresh_topic(size: int) -> str:
        nonlocal counter
        counter += 1
        topic = f"bench-{size}-{counter}"
        ensure_topics(bootstrap, [topic], configs=TOPIC_CONFIGS)
        return topic

    def case(kind: str, lib: str, size: int, n: int, round_: int) -> Case:
        topic = fresh_topic(size)
        try:
            if kind == "perf-test":
                return replace(run_perf_test(cluster, topic, size, n, perf_props), round=round_)
            if kind == "bare":
                return run_recording(bootstrap, lib, topic, size, n, NullSink(), round_)
            path = tmp / f"history-{topic}.jsonl"
            with HistoryWriter(path) as writer:
                result = run_recording(bootstrap, lib, topic, size, n, writer, round_)
            path.unlink()
            return result
        finally:
            delete_topics(bootstrap, [topic])

    for size in sizes:
        for lib in libs:  # warm-up: JIT, page cache, connections
            case("bare", lib, size, max(10_000, records[size] // 5), -1)
        for round_ in range(repeat):
            cases.append(case("perf-test", "java", size, records[size], round_))
            log(cases[-1])
            for lib in libs:
                order = ("recording", "bare") if round_ % 2 == 0 else ("bare", "recording")
                for kind in order:
                    cases.append(case(kind, lib, size, records[size], round_))
                    log(cases[-1])
    return cases


def _rates(
    cases: list[Case], kind: str, size: int, client: str | None = None, round_: int | None = None
) -> list[float]:
    """The rates of the cases of one kind and size (and client and round, when given)."""
    return [c.rate for c in cases if c.kind == kind and c.size == size
            and (client is None or c.client == client)
            and (round_ is None or c.round == round_)]  # fmt: skip


def _paired(num: list[float], den: list[float]) -> float | None:
    """One round's ratio of two cases' rates; None when either case is missing or zero."""
    return num[0] / den[0] if num and den and den[0] else None


def ratios(cases: list[Case]) -> list[dict[str, Any]]:
    """Per (client, size): median rates, and the medians of each round's two ratios."""

    def rate(kind: str, client: str | None, size: int, round_: int | None = None) -> list[float]:
        return _rates(cases, kind, size, client, round_)

    rows = []
    for size in sorted({c.size for c in cases}):
        rounds = sorted({c.round for c in cases if c.size == size})
        for lib in sorted({c.client for c in cases if c.client != "java"}):
            vs_perf = [_paired(rate("recording", lib, size, r), rate("perf-test", None, size, r))
                       for r in rounds]  # fmt: skip
            vs_bare = [_paired(rate("recording", lib, size, r), rate("bare", lib, size, r))
                       for r in rounds]  # fmt: skip
            rows.append(
                {
                    "client": lib,
                    "size": size,
                    "rounds": len(rounds),
                    "perf_test_rps": round(_median(rate("perf-test", None, size))),
                    "recording_rps": round(_median(rate("recording", lib, size))),
                    "bare_rps": round(_median(rate("bare", lib, size))),
                    "recording_vs_perf_test": _ratio(vs_perf),
                    "recording_vs_bare": _ratio(vs_bare),
                    "recording_vs_bare_per_round": [r and round(r, 3) for r in vs_bare],
                }
            )
    return rows


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def _ratio(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(statistics.median(known), 3) if known else None


@dataclass(frozen=True)
class ProduceArgs:
    """``kchaos bench produce``'s options, checked."""

    sizes: tuple[int, ...]
    libs: tuple[str, ...]
    records: dict[int, int]
    perf_props: tuple[str, ...]
    transactional: bool = False
    max_sends: int = 50


def parse_produce_args(
    sizes: str,
    clients: str | None,
    records: int | None,
    perf_props: str = "",
    transactional: bool = False,
    max_sends: int = 50,
) -> ProduceArgs:
    """The options as values; bad ones are a ConfigError naming the option (exit 3)."""
    try:
        size_list = tuple(int(s) for s in sizes.split(",") if s.strip())
    except ValueError:
        message = f"comma-separated byte counts expected, got {sizes!r}"
        raise ConfigError(message, field="--sizes") from None
    if not size_list or min(size_list) < 1:
        raise ConfigError("at least one positive size is needed", field="--sizes")
    if clients is None:
        clients = "confluent-kafka" if transactional else "confluent-kafka,kafka-python"
    # ``confluent``, the option's old spelling of confluent-kafka, still reads
    libs = tuple(client_lib(c.strip()) for c in clients.split(",") if c.strip())
    unknown = [c for c in libs if c not in CLIENT_LIBS]
    if unknown or not libs:
        raise ConfigError(
            f"clients are {', '.join(CLIENT_LIBS)}; got {clients!r}", field="--clients"
        )
    if records is not None and records < 1:
        raise ConfigError("must be at least 1", field="--records")
    props = tuple(p.strip() for p in perf_props.split(",") if p.strip())
    if transactional:
        if libs not in (("confluent-kafka",), ("java",)):
            raise ConfigError(
                "the transactional producer runs on one client, confluent-kafka or java (Kafka's "
                f"Java producer); got {clients!r}",
                field="--clients",
            )
        if props:
            raise ConfigError("no perf-test runs with --transactional", field="--perf-props")
        if max_sends < 1:
            raise ConfigError("must be at least 1", field="--max-sends")
    per_size = {s: records or (200_000 if s <= 200 else 60_000) for s in size_list}
    return ProduceArgs(size_list, libs, per_size, props, transactional, max_sends)


@contextlib.contextmanager
def bench_cluster(args: ProduceArgs) -> Iterator[Any]:
    """The bench's own 3-broker cluster, disks sized for the records asked for."""
    from kchaos.harness.cluster import Cluster, ClusterSpec
    from kchaos.harness.images import ensure_images

    images = ensure_images()
    spec = ClusterSpec(
        brokers=3, images=images, heap="512m",
        disk_size_mb=disk_mb(list(args.sizes), args.records),
        server_properties=BENCH_SERVER_PROPERTIES,
    )  # fmt: skip
    with Cluster(spec) as cluster:
        yield cluster


def case_line(case: Case) -> str:
    """One case as the bench prints it while it runs."""
    return (
        f"  {case.kind:13} {case.client:15} {case.size:5} B  {case.records:7} records"
        f"  {case.seconds:7.2f} s  {case.rate:10.0f} records/s"
    )
