from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
import requests

from kchaos.workloads.metrics import HarnessMetrics


def test_counters_histograms_and_fault_gauge() -> None:
    metrics = HarnessMetrics("r1")
    metrics.send_done("ok", 0.003)
    metrics.send_done("ok", 0.2)
    metrics.send_done("info", 5.0)
    metrics.poll_done("ok", 7, 0.01)
    metrics.fault_started("pause")
    metrics.fault_started("pause")
    metrics.fault_stopped("pause")
    assert metrics.value("kchaos_sends_total", {"outcome": "ok"}) == 2
    assert metrics.value("kchaos_sends_total", {"outcome": "fail"}) == 0
    assert metrics.value("kchaos_send_latency_seconds_count", {"outcome": "ok"}) == 2
    assert (
        metrics.value("kchaos_send_latency_seconds_bucket", {"outcome": "ok", "le": "0.005"}) == 1
    )
    assert metrics.value("kchaos_records_read_total") == 7
    assert metrics.value("kchaos_active_faults", {"fault": "pause"}) == 1


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
