from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
import requests

from kchaos.harness.rundir.history_writer import ListSink
from kchaos.workloads.metrics import HarnessMetrics, MetricsSink


def test_counters_histograms_and_fault_gauge() -> None:
    metrics = HarnessMetrics("r1")
    metrics.send_done("ok", 0.003)
    metrics.send_done("ok", 0.2)
    metrics.send_done("info", 5.0)
    metrics.poll_done("ok", 7, 0.01)
    metrics.fault_started("pause", ["b1"])
    metrics.fault_started("pause", ["b1", "b2"])
    metrics.fault_stopped("pause", ["b1"])
    assert metrics.value("kchaos_sends_total", {"outcome": "ok"}) == 2
    assert metrics.value("kchaos_sends_total", {"outcome": "fail"}) == 0
    assert metrics.value("kchaos_send_latency_seconds_count", {"outcome": "ok"}) == 2
    assert (
        metrics.value("kchaos_send_latency_seconds_bucket", {"outcome": "ok", "le": "0.005"}) == 1
    )
    assert metrics.value("kchaos_records_read_total") == 7
    assert metrics.value("kchaos_fault_active", {"fault": "pause", "target": "b1"}) == 1
    assert metrics.value("kchaos_fault_active", {"fault": "pause", "target": "b2"}) == 1
    assert metrics.value("kchaos_fault_starts_total", {"fault": "pause", "target": "b1"}) == 2
    assert metrics.value("kchaos_fault_stops_total", {"fault": "pause", "target": "b1"}) == 1


def _fault(phase: str, fid: str, fault: str, targets: list[str], **extra: object) -> dict:
    return {"process": "nemesis", "type": "info", "f": "fault", "phase": phase, "id": fid,
            "fault": fault, "targets": targets, **extra}  # fmt: skip


def test_the_sink_feeds_faults_and_isr_from_history_lines() -> None:
    metrics = HarnessMetrics("r1")
    history = ListSink()
    sink = MetricsSink(history, metrics)
    sink.append(_fault("start", "f1", "pause", ["kafka-1"]))
    sink.append({"process": "monitor", "type": "ok", "f": "metadata", "topic": "t",
                 "partition": 2, "leader": 1, "isr": [1, 3], "replicas": [1, 2, 3]})  # fmt: skip
    active = {"fault": "pause", "target": "kafka-1"}
    assert metrics.value("kchaos_fault_active", active) == 1
    assert metrics.value("kchaos_fault_starts_total", active) == 1
    assert metrics.value("kchaos_isr_size", {"topic": "t", "partition": "2"}) == 2
    sink.append(_fault("stop", "f1", "pause", ["kafka-1"]))
    assert metrics.value("kchaos_fault_active", active) == 0
    assert metrics.value("kchaos_fault_stops_total", active) == 1
    # a fault that failed to start: its start (with error) and stop lines count nothing
    sink.append(_fault("start", "f2", "kill", ["kafka-2"], error="boom"))
    sink.append(_fault("stop", "f2", "kill", ["kafka-2"]))
    failed = {"fault": "kill", "target": "kafka-2"}
    assert metrics.value("kchaos_fault_starts_total", failed) == 0
    assert metrics.value("kchaos_fault_active", failed) == 0
    # the final heal is no fault
    sink.append(_fault("start", "heal", "heal", ["kafka-1"]))
    assert metrics.value("kchaos_fault_starts_total", {"fault": "heal", "target": "kafka-1"}) == 0
    # every line reached the history, and the history's own methods are the sink's
    assert len(history.events) == 6
    assert sink.elapsed_ns() > 0


def test_a_broken_metric_never_reaches_the_writer() -> None:
    sink = MetricsSink(ListSink(), HarnessMetrics())
    # a metadata line with a partition that is no number: ignored by the metrics
    sink.append({"process": "monitor", "type": "ok", "f": "metadata", "topic": "t",
                 "partition": "x", "isr": [1]})  # fmt: skip


def test_serve_exposes_metrics_over_http() -> None:
    metrics = HarnessMetrics()
    metrics.send_done("fail", 0.1)
    port = metrics.serve(0, addr="127.0.0.1")
    try:
        body = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    finally:
        metrics.stop_serving()
    assert 'kchaos_sends_total{outcome="fail"} 1.0' in body


class _Gateway(BaseHTTPRequestHandler):
    received: list[tuple[str, str, bytes]] = []

    def do_PUT(self) -> None:  # push_to_gateway uses PUT
        length = int(self.headers.get("Content-Length", 0))
        self.received.append(("PUT", self.path, self.rfile.read(length)))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        return None


@pytest.fixture
def gateway() -> Iterator[str]:
    _Gateway.received = []
    server = HTTPServer(("127.0.0.1", 0), _Gateway)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


def test_push_sends_the_registry_to_the_gateway(gateway: str) -> None:
    metrics = HarnessMetrics("run-42")
    metrics.send_done("ok", 0.01)
    metrics.push(gateway, job="kchaos-ci")
    assert len(_Gateway.received) == 1
    method, path, body = _Gateway.received[0]
    assert path == "/metrics/job/kchaos-ci/run/run-42"
    assert b'kchaos_sends_total{outcome="ok"} 1.0' in body
