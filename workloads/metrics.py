"""Harness metrics (prometheus-client): what the clients and the nemesis are doing.

One :class:`HarnessMetrics` per run, on its own registry (so tests and parallel runs do
not collide). Workers call ``send_done`` / ``poll_done``; the nemesis calls
``fault_started`` / ``fault_stopped``. ``serve(port)`` exposes ``/metrics`` during a run;
``push(gateway)`` sends the final values to a Pushgateway (CI).
"""

from __future__ import annotations

import threading
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, push_to_gateway
from prometheus_client.exposition import start_http_server

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


class HarnessMetrics:
    def __init__(self, run_id: str = "dev") -> None:
        self.run_id = run_id
        self.registry = CollectorRegistry()
        self.sends = Counter(
            "kchaos_sends",
            "Completed sends by outcome (ok, fail, info).",
            ["outcome"],
            registry=self.registry,
        )
        self.send_latency = Histogram(
            "kchaos_send_latency_seconds",
            "Time from invoke to completion of a send.",
            ["outcome"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.polls = Counter(
            "kchaos_polls",
            "Completed consumer polls by outcome.",
            ["outcome"],
            registry=self.registry,
        )
        self.records_read = Counter(
            "kchaos_records_read",
            "Records returned by polls and the drain.",
            registry=self.registry,
        )
        self.poll_latency = Histogram(
            "kchaos_poll_latency_seconds",
            "Duration of a consumer poll.",
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.active_faults = Gauge(
            "kchaos_active_faults",
            "Faults currently active, by kind.",
            ["fault"],
            registry=self.registry,
        )
        self._server: Any = None
        self._lock = threading.Lock()
        # pre-create the label sets so the series exist (as 0) from the start
        for outcome in ("ok", "fail", "info"):
            self.sends.labels(outcome)
            self.send_latency.labels(outcome)
        for outcome in ("ok", "fail"):
            self.polls.labels(outcome)
        self._send_counters = {o: self.sends.labels(o) for o in ("ok", "fail", "info")}
        self._send_hist = {o: self.send_latency.labels(o) for o in ("ok", "fail", "info")}

    # -- recording ---------------------------------------------------------------------
    def send_done(self, outcome: str, latency_s: float) -> None:
        self._send_counters[outcome].inc()
        self._send_hist[outcome].observe(latency_s)

    def poll_done(self, outcome: str, records: int, latency_s: float) -> None:
        self.polls.labels(outcome).inc()
        if records:
            self.records_read.inc(records)
        self.poll_latency.observe(latency_s)

    def fault_started(self, fault: str) -> None:
        self.active_faults.labels(fault).inc()

    def fault_stopped(self, fault: str) -> None:
        self.active_faults.labels(fault).dec()

    def value(self, name: str, labels: dict[str, str] | None = None) -> float:
        """The current value of one sample (tests, reports); 0.0 when absent."""
        got = self.registry.get_sample_value(name, labels or {})
        return 0.0 if got is None else float(got)

    # -- exposure ----------------------------------------------------------------------
    def serve(self, port: int = 0, addr: str = "0.0.0.0") -> int:
        """Serve /metrics on ``port`` (0: any free port) until ``stop_serving``; the port."""
        with self._lock:
            if self._server is None:
                server, _thread = start_http_server(port, addr=addr, registry=self.registry)
                self._server = server
            return int(self._server.server_port)

    @property
    def port(self) -> int | None:
        """The port /metrics is served on, or None."""
        with self._lock:
            return None if self._server is None else int(self._server.server_port)

    def stop_serving(self) -> None:
        with self._lock:
            if self._server is not None:
                self._server.shutdown()
                self._server.server_close()
                self._server = None

    def push(self, gateway: str, job: str = "kchaos") -> None:
        """Push every metric to a Pushgateway, grouped by run id."""
        push_to_gateway(gateway, job=job, registry=self.registry, grouping_key={"run": self.run_id})
