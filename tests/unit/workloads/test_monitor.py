from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import orjson
import pytest

from kchaos.harness.rundir.history_writer import ListSink
from kchaos.workloads.monitor import (
    AdminMetadataSource,
    Monitor,
    health_samples,
    metadata_states,
    scrape,
)

EXPOSITION = """# HELP kafka_server_replicamanager_underreplicatedpartitions x
# TYPE kafka_server_replicamanager_underreplicatedpartitions gauge
kafka_server_replicamanager_underreplicatedpartitions 2.0
# TYPE kafka_server_replicamanager_isrshrinks_total counter
kafka_server_replicamanager_isrshrinks_total 5.0
# TYPE kafka_controller_kafkacontroller_offlinepartitionscount gauge
kafka_controller_kafkacontroller_offlinepartitionscount 0.0
# TYPE kafka_log_logflushstats_logflushrateandtimems_99thpercentile gauge
kafka_log_logflushstats_logflushrateandtimems_99thpercentile 16012.5
# TYPE jvm_memory_bytes_used gauge
jvm_memory_bytes_used{area="heap"} 1.0e6
"""


class FakeSource:
    def __init__(self) -> None:
        self.calls = 0
        self.fail_next = 0

    def describe(self, topics: Sequence[str]) -> list[dict[str, Any]]:
        self.calls += 1
        if self.fail_next:
            self.fail_next -= 1
            raise RuntimeError("no broker")
        return [
            {
                "topic": "t",
                "partition": 1,
                "leader": -1,
                "isr": [],
                "replicas": [1, 2, 3],
                "elr": [2],
            },
            {"topic": "t", "partition": 0, "leader": 1, "isr": [1, 3], "replicas": [1, 2, 3]},
        ]

    def min_insync(self, topics: Sequence[str]) -> dict[str, int]:
        return {"t": 2}

    def close(self) -> None:
        return None


def test_metadata_lines_follow_the_format(eventually: Callable[..., None]) -> None:
    sink = ListSink()
    source = FakeSource()
    source.fail_next = 1
    monitor = Monitor(lambda: source, ["t"], sink, interval=0.02)
    monitor.start()
    eventually(lambda: monitor.observations >= 3, "three observations")
    monitor.stop()
    assert monitor.failures == 1 and monitor.observations >= 3
    lines = sink.events
    assert lines[0] == {
        "index": 0,
        "time": lines[0]["time"],
        "process": "monitor",
        "type": "ok",
        "f": "metadata",
        "topic": "t",
        "partition": 0,
        "leader": 1,
        "isr": [1, 3],
        "replicas": [1, 2, 3],
        "min_insync": 2,
        "observe_ms": lines[0]["observe_ms"],
    }
    assert isinstance(lines[0]["observe_ms"], float) and lines[0]["observe_ms"] >= 0
    assert lines[1]["leader"] == -1 and lines[1]["elr"] == [2]
    assert len(lines) == 2 * monitor.observations


def test_a_failed_observation_gets_a_new_client(eventually: Callable[..., None]) -> None:
    """A client stuck on a paused broker would fail every observation of the pause."""
    made: list[FakeSource] = []

    def factory() -> FakeSource:
        source = FakeSource()
        source.fail_next = 10**6 if not made else 0  # the first client never answers
        made.append(source)
        return source

    monitor = Monitor(factory, ["t"], ListSink(), interval=0.02)
    monitor.start()
    eventually(lambda: monitor.observations >= 3, "three observations")
    monitor.stop()
    assert monitor.failures == 1 and monitor.observations >= 3
    assert len(made) == 2 and made[0].calls == 1


class HangingSource(FakeSource):
    """A client whose request went to a paused broker: it answers only when released."""

    def __init__(self, release: threading.Event) -> None:
        super().__init__()
        self.release = release
        self.closed = threading.Event()

    def describe(self, topics: Sequence[str]) -> list[dict[str, Any]]:
        self.release.wait(30)
        out = super().describe(topics)
        for state in out:
            state["leader"] = 99  # what a stale answer would say; it must never be written
        return out

    def close(self) -> None:
        self.closed.set()


def test_a_stuck_observation_is_abandoned_and_the_next_one_uses_a_fresh_client(
    eventually: Callable[..., None],
) -> None:
    """A paused broker costs one late sample, not a silence: the monitor goes on."""
    release = threading.Event()
    made: list[FakeSource] = []

    def factory() -> FakeSource:
        source = HangingSource(release) if not made else FakeSource()
        made.append(source)
        return source

    sink = ListSink()
    # a deadline long enough that only the stuck observation can miss it on a loaded machine
    monitor = Monitor(factory, ["t"], sink, interval=0.01, deadline=1.0)
    monitor.start()
    try:
        eventually(lambda: monitor.observations >= 3, "three observations after the stuck one")
        assert monitor.late >= 1 and monitor.late_ms == [], "abandoned, and not ended yet"
    finally:
        release.set()
    stuck = made[0]
    assert isinstance(stuck, HangingSource) and stuck.closed.wait(10), "its client is closed"
    eventually(lambda: len(monitor.late_ms) >= 1, "how long the abandoned observation took")
    monitor.stop()
    assert all(e["leader"] != 99 for e in sink.events), "an abandoned answer is never written"
    assert len(made) == 1 + monitor.late, "each abandoned client replaced by a fresh one"


def test_abandoned_observations_are_bounded(eventually: Callable[..., None]) -> None:
    """Every client stuck: at most MAX_ABANDONED observations are left running."""
    release = threading.Event()
    made: list[HangingSource] = []

    def factory() -> HangingSource:
        made.append(HangingSource(release))
        return made[-1]

    monitor = Monitor(factory, ["t"], ListSink(), interval=0.001, deadline=0.005)
    monitor.start()
    try:
        eventually(lambda: monitor.late >= Monitor.MAX_ABANDONED, "the bound reached")
        threading.Event().wait(0.2)  # the loop keeps ticking; nothing more may start
        assert monitor.late == Monitor.MAX_ABANDONED and len(made) == Monitor.MAX_ABANDONED
        assert monitor.observations == 0
    finally:
        release.set()
        monitor.stop()


def test_health_samples_keep_only_replication_health_and_flush_times() -> None:
    found = health_samples(EXPOSITION)
    assert found == {
        "kafka_server_replicamanager_underreplicatedpartitions": 2.0,
        "kafka_server_replicamanager_isrshrinks_total": 5.0,
        "kafka_controller_kafkacontroller_offlinepartitionscount": 0.0,
        "kafka_log_logflushstats_logflushrateandtimems_99thpercentile": 16012.5,
    }


class _Broker(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = EXPOSITION.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        return None


@pytest.fixture
def broker_url() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _Broker)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/metrics"
    server.shutdown()
    server.server_close()


def test_scrapes_go_to_the_run_directory(
    broker_url: str, tmp_path: Path, eventually: Callable[..., None]
) -> None:
    out = tmp_path / "broker-metrics.jsonl"
    monitor = Monitor(
        FakeSource, ["t"], ListSink(), interval=0.05,
        metrics_urls={1: broker_url, 2: "http://127.0.0.1:9/metrics"},
        metrics_path=out, metrics_interval=0.05,
    )  # fmt: skip
    monitor.start()
    eventually(lambda: monitor.scrapes >= 1, "one round of scrapes")  # counted once written
    monitor.stop()
    rows = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert {r["node"] for r in rows} == {1, 2}
    good = [r for r in rows if r["node"] == 1]
    assert good[0]["metrics"]["kafka_server_replicamanager_underreplicatedpartitions"] == 2.0
    assert all("error" in r for r in rows if r["node"] == 2)
    assert scrape(1, broker_url)["metrics"]


KP3 = [  # kafka-python 3: the protocol's field names
    {
        "error_code": 0,
        "name": "t",
        "partitions": [
            {
                "error_code": 0,
                "partition_index": 0,
                "leader_id": 2,
                "isr_nodes": [3, 2],
                "replica_nodes": [2, 3, 1],
            },
            {
                "error_code": 5,
                "partition_index": 1,
                "leader_id": -1,
                "isr_nodes": [1],
                "replica_nodes": [1, 2, 3],
            },
        ],
    }
]
KP2 = [  # kafka-python 2
    {
        "error_code": 0,
        "topic": "t",
        "partitions": [
            {"error_code": 0, "partition": 0, "leader": 2, "isr": [3, 2], "replicas": [2, 3, 1]},
            {"error_code": 5, "partition": 1, "leader": -1, "isr": [1], "replicas": [1, 2, 3]},
        ],
    }
]


@pytest.mark.parametrize("described", [KP3, KP2], ids=["kafka-python-3", "kafka-python-2"])
def test_metadata_states_read_both_kafka_python_shapes(described: Any) -> None:
    assert metadata_states(described) == [
        {"topic": "t", "partition": 0, "leader": 2, "isr": [2, 3], "replicas": [2, 3, 1]},
        {"topic": "t", "partition": 1, "leader": -1, "isr": [1], "replicas": [1, 2, 3]},
    ]


def test_a_broker_without_describe_topic_partitions_falls_back_to_metadata() -> None:
    """Before 3.7 kafka-python refuses the request itself (IncompatibleBrokerVersion):
    the source must use Metadata from then on, not fail every observation."""
    from kafka.errors import IncompatibleBrokerVersion

    class Admin:
        calls: list[str] = []

        def describe_topic_partitions(self, topics: list[str]) -> Any:
            self.calls.append("dtp")
            raise IncompatibleBrokerVersion("no DescribeTopicPartitionsRequest")

        def describe_topics(self, topics: list[str]) -> Any:
            self.calls.append("metadata")
            return KP3

    src = AdminMetadataSource.__new__(AdminMetadataSource)
    src._admin = Admin()  # type: ignore[assignment]
    src._with_elr = True
    assert src.describe(["t"])[0]["isr"] == [2, 3]
    assert src.describe(["t"])[1]["leader"] == -1
    assert Admin.calls == ["dtp", "metadata", "metadata"]


def test_other_errors_are_not_taken_for_an_old_broker() -> None:
    class Admin:
        def describe_topic_partitions(self, topics: list[str]) -> Any:
            raise TimeoutError("request timed out")

    src = AdminMetadataSource.__new__(AdminMetadataSource)
    src._admin = Admin()  # type: ignore[assignment]
    src._with_elr = True
    with pytest.raises(TimeoutError):
        src.describe(["t"])
    assert src._with_elr
