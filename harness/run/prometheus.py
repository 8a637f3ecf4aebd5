"""Prometheus during a run: the harness's /metrics, a server scraping it and every broker,
and the series the report plots, stored in the run directory at the end.

``--prometheus`` (``kchaos run`` and the batch commands: one server per run) starts the
server (:mod:`kchaos.harness.cluster.prometheus`);
``KCHAOS_METRICS_PORT`` alone serves the harness's metrics on that port for a server of
your own. Either way ``RUN_DIR/prometheus.yml`` is the filled-in configuration for the run.
After the workload (before teardown) the server is asked for the series in
:data:`SERIES` over the run, and they go to ``RUN_DIR/prometheus.json``
(:mod:`kchaos.reports.prometheus` reads and plots them); run.json ``prometheus`` says
where the server listened and what was stored, or why not.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterator
from typing import Any

from kchaos.harness.cluster.api import Topology
from kchaos.harness.cluster.prometheus import PrometheusServer, render_config
from kchaos.harness.run.record import RunRecord, record_step
from kchaos.harness.rundir import prometheus as prometheus_json
from kchaos.harness.rundir.names import PROMETHEUS_JSON
from kchaos.harness.rundir.rundir import RunDir
from kchaos.workloads.metrics import HarnessMetrics

log = logging.getLogger(__name__)

SCRAPE_INTERVAL_S = 1.0
# A broker's exporter runs in the broker's JVM: while the broker is paused it is not scraped,
# and a rate needs two samples inside its window. A paused leader shrinks its ISR the moment
# it resumes (its followers stopped fetching from it), so with a window narrower than the
# pause that shrink falls between two samples no window holds, and the rate shows nothing
# (the make test of 2026-11-26: smoke's 7 s pause, a 5 s window, broker 3's counter rose and
# its rate stayed 0). 20 s spans the pauses in the library's schedules; a longer pause still
# leaves the rise uncounted (docs/workloads.md says so).
RATE_WINDOW = "20s"

# name, title, unit, PromQL (evaluated every scrape interval over the run)
SERIES: tuple[tuple[str, str, str, str], ...] = (
    (
        "under_replicated",
        "Under-replicated partitions (brokers' JMX)",
        "partitions",
        "sum by (node) (kafka_server_replicamanager_underreplicatedpartitions)",
    ),
    (
        "isr_shrinks",
        "ISR shrinks per second (brokers' JMX)",
        "shrinks/s",
        f"sum by (node) (rate(kafka_server_replicamanager_isrshrinks_total[{RATE_WINDOW}]))",
    ),
    (
        "isr_expands",
        "ISR expands per second (brokers' JMX)",
        "expands/s",
        f"sum by (node) (rate(kafka_server_replicamanager_isrexpands_total[{RATE_WINDOW}]))",
    ),
    (
        "active_faults",
        "Active faults (harness)",
        "faults",
        "sum by (fault) (kchaos_fault_active)",
    ),
)


@contextlib.contextmanager
def observe_run(
    cluster: Topology, run_dir: RunDir, rec: RunRecord, *, server: bool
) -> Iterator[HarnessMetrics | None]:
    """The run's HarnessMetrics (None when neither ``server`` nor KCHAOS_METRICS_PORT asks
    for metrics), served on /metrics; with ``server``, a Prometheus scraping it and the
    brokers, queried into prometheus.json when the block ends."""
    env_port = os.environ.get("KCHAOS_METRICS_PORT")
    if not server and not env_port:
        yield None
        return
    metrics = HarnessMetrics(cluster.run_id)
    # a port chosen by the user is for a server of theirs, maybe elsewhere: every address;
    # otherwise only our own server on this host scrapes it
    port = metrics.serve(int(env_port), "0.0.0.0") if env_port else metrics.serve(0, "127.0.0.1")
    brokers = {n.node_id: n.ip for n in cluster.brokers}
    config = render_config(cluster.run_id, brokers, [f"127.0.0.1:{port}"], SCRAPE_INTERVAL_S)
    run_dir.write_prometheus_config(config)
    info: dict[str, Any] = {"harness_metrics": f"http://127.0.0.1:{port}/metrics"}
    prom: PrometheusServer | None = None
    running = False  # the run went on with the server scraping
    try:
        if server:
            prom = PrometheusServer(cluster.run_id)
            info["url"] = prom.start(config)
            info["home"] = str(prom.home)
            # the run starts only once both jobs are scraped: nothing early is missed
            jobs = ["kchaos", "kafka"] if brokers else ["kchaos"]
            info["first_scrape_s"] = round(prom.wait_scraping(jobs), 1)
        rec.update(prometheus=info)
        running = True
        yield metrics
    finally:
        try:
            if prom is not None and running:
                started, srv = prom.started_unix, prom
                record_step(
                    rec,
                    "prometheus",
                    "storing the Prometheus series",
                    lambda: {**info, **store_series(srv, run_dir, started, rec.data)},
                )
        finally:
            if prom is not None:
                prom.stop()
            metrics.stop_serving()


def store_series(
    prom: PrometheusServer, run_dir: RunDir, start_unix: float, run: dict[str, Any]
) -> dict[str, Any]:
    """Query every series in SERIES from ``start_unix`` to now into prometheus.json;
    a summary for run.json."""
    # one more scrape, so the last seconds of the run are in
    time.sleep(SCRAPE_INTERVAL_S * 1.5)
    end = time.time()
    t0_ns = run.get("history_start_unix_ns")
    time0 = t0_ns / 1e9 if isinstance(t0_ns, int | float) else start_unix
    series: list[dict[str, Any]] = []
    errors: list[str] = []
    for name, title, unit, expr in SERIES:
        try:
            result = prom.query_range(expr, start_unix, end, SCRAPE_INTERVAL_S)
        except Exception as exc:  # noqa: BLE001 - one failed query leaves the others
            errors.append(f"{name}: {type(exc).__name__}: {exc}")
            continue
        for item in result:
            points = [[round(float(t) - time0, 3), float(v)] for t, v in item.get("values", ())]
            series.append(
                {
                    "name": name,
                    "title": title,
                    "unit": unit,
                    "query": expr,
                    "labels": dict(item.get("metric") or {}),
                    "points": points,
                }
            )
    doc = prometheus_json.document(
        url=prom.url,
        start_unix=start_unix,
        end_unix=end,
        time0_unix=time0,
        step_s=SCRAPE_INTERVAL_S,
        series=series,
        errors=errors,
    )
    run_dir.write_prometheus(doc)
    return {"file": PROMETHEUS_JSON, "series": len(series), "errors": errors}
