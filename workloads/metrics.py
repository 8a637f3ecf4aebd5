"""Harness metrics (prometheus-client): what the clients and the nemesis are doing.

One :class:`HarnessMetrics` per run, on its own registry (so tests and parallel runs do
not collide). Workers call ``send_done`` / ``poll_done``; fault starts and stops and the
monitor's ISR samples reach it through :class:`MetricsSink`, which watches the history
lines the nemesis and the monitor write (so neither needs to know about metrics).
``serve(port)`` exposes ``/metrics`` during a run; ``push(gateway)`` sends the final
values to a Pushgateway (CI).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, push_to_gateway
from prometheus_client.exposition import start_http_server

log = logging.getLogger(__name__)

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
        self.fault_starts = Counter(
            "kchaos_fault_starts",
            "Faults started, by kind and target (one count per target).",
            ["fault", "target"],
            registry=self.registry,
        )
        self.fault_stops = Counter(
            "kchaos_fault_stops",
            "Faults stopped (healed), by kind and target.",
            ["fault", "target"],
            registry=self.registry,
        )
        self.active_faults = Gauge(
            "kchaos_fault_active",
            "Faults currently active, by kind and target.",
            ["fault", "target"],
            registry=self.registry,
        )
        self.isr_size = Gauge(
            "kchaos_isr_size",
            "Replicas in the ISR of each partition, as the monitor last saw it.",
            ["topic", "partition"],
            registry=self.registry,
        )
        self._server: Any = None
        self._lock = threading.Lock()
        self._active_ids: set[str] = set()  # fault ids started and not yet stopped
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

    def fault_started(self, fault: str, targets: list[str]) -> None:
        for target in targets or ["-"]:
            self.fault_starts.labels(fault, target).inc()
            self.active_faults.labels(fault, target).inc()

    def fault_stopped(self, fault: str, targets: list[str]) -> None:
        for target in targets or ["-"]:
            self.fault_stops.labels(fault, target).inc()
            self.active_faults.labels(fault, target).dec()

    def isr_seen(self, topic: str, partition: int, size: int) -> None:
        self.isr_size.labels(topic, str(partition)).set(size)

    def observe(self, event: Mapping[str, Any]) -> None:
        """Update the fault and ISR metrics from one history line (others are ignored).

        A fault that failed to start writes a start line with ``error`` and at once a stop
        line; neither counts. The final heal (fault ``heal``) is no fault.
        """
        kind = event.get("f")
        if kind == "fault" and event.get("fault") != "heal":
            fid = str(event.get("id"))
            targets = [str(t) for t in event.get("targets") or ()]
            fault = str(event.get("fault"))
            with self._lock:
                if event.get("phase") == "start":
                    if event.get("error") is not None:
                        return  # its stop line finds no active id either
                    self._active_ids.add(fid)
                elif fid in self._active_ids:
                    self._active_ids.discard(fid)
                else:
                    return
            if event.get("phase") == "start":
                self.fault_started(fault, targets)
            else:
                self.fault_stopped(fault, targets)
        elif kind == "metadata" and event.get("type") == "ok":
            isr = event.get("isr")
            if isinstance(isr, list) and "topic" in event and "partition" in event:
                self.isr_seen(str(event["topic"]), int(event["partition"]), len(isr))

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


class MetricsSink:
    """A history sink that also feeds :meth:`HarnessMetrics.observe`.

    Every line goes to the wrapped sink first (the history is what counts); anything else
    (``recorder``, ``elapsed_ns``, ...) is the wrapped sink's own. A metrics error never
    reaches the writer of the line.
    """

    def __init__(self, sink: Any, metrics: HarnessMetrics) -> None:
        self._sink = sink
        self._metrics = metrics

    def append(self, event: dict[str, Any]) -> object:
        result = self._sink.append(event)
        if event.get("f") in ("fault", "metadata"):
            try:
                self._metrics.observe(event)
            except Exception:  # noqa: BLE001 - metrics must never fail a run
                log.debug("metrics: could not observe %r", event, exc_info=True)
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sink, name)
