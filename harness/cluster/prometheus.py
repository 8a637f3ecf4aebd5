"""A Prometheus server for one run: Debian's ``prometheus`` as a process on the host.

It runs on the host because the host reaches every broker's JMX exporter (``IP:7071``)
directly and the harness serves its own ``/metrics`` there. Its files (configuration,
TSDB, log and pid file) live under the run's state directory,
``<state root>/runs/RUN_ID/prometheus/``, which is how ``kchaos cleanup`` finds a server
a killed harness left running (:func:`stop_leftover`). The configuration is
``compose/prometheus.yml`` filled in by :func:`render_config`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from string import Template
from typing import Any

import requests

from kchaos.harness.cluster.procfs import stat_fields
from kchaos.harness.cluster.topology import run_dir
from kchaos.harness.cluster.wait import Until, http_answers
from kchaos.harness.errors import ClusterError, SetupError, WaitTimeout
from kchaos.harness.paths import COMPOSE_DIR
from kchaos.harness.rundir.names import PROMETHEUS_YML

TEMPLATE = COMPOSE_DIR / PROMETHEUS_YML
BINARY = "prometheus"
PID_FILE = "prometheus.pid"
EXPORTER_PORT = 7071  # the brokers' JMX exporter (compose/kafka/config/jmx-exporter.yaml)


def render_config(
    run_id: str,
    brokers: Mapping[int, str],
    harness: Sequence[str],
    scrape_interval_s: float = 1.0,
) -> str:
    """compose/prometheus.yml for this run: ``brokers`` maps node id to its IP,
    ``harness`` lists ``HOST:PORT`` of the harness's /metrics (may be empty)."""
    entries = [
        f'      - targets: ["{ip}:{EXPORTER_PORT}"]\n'
        f'        labels: {{node: "{node}", run: "{run_id}"}}'
        for node, ip in sorted(brokers.items())
    ]
    interval = _duration(scrape_interval_s)
    return Template(TEMPLATE.read_text(encoding="utf-8")).substitute(
        run_id=run_id,
        scrape_interval=interval,
        scrape_timeout=interval,
        broker_targets="\n".join(entries) if entries else "      - targets: []",
        harness_targets=json.dumps(list(harness)),
    )


def _duration(seconds: float) -> str:
    ms = max(1, round(seconds * 1000))
    return f"{ms // 1000}s" if ms % 1000 == 0 else f"{ms}ms"


def home_of(run_id: str) -> Path:
    """Where a run's Prometheus keeps its files (under the run's state directory)."""
    return run_dir(run_id) / "prometheus"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PrometheusServer:
    """Start with :meth:`start`, query with :meth:`query` / :meth:`query_range`, end with
    :meth:`stop` (idempotent; also on every error path of the caller)."""

    def __init__(self, run_id: str, binary: str = BINARY) -> None:
        self.run_id = run_id
        self.binary = binary
        self.home = home_of(run_id)
        self.url = ""
        self.started_unix = 0.0
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self, config: str, timeout_s: float = 30.0) -> str:
        """Write the configuration, start the server, wait until it is ready; its URL."""
        exe = shutil.which(self.binary)
        if exe is None:
            raise SetupError(
                f"{self.binary} not found: install Debian's prometheus package (make setup)"
            )
        self.home.mkdir(parents=True, exist_ok=True)
        config_path = self.home / PROMETHEUS_YML
        config_path.write_text(config, encoding="utf-8")
        port = _free_port()
        self.url = f"http://127.0.0.1:{port}"
        log_path = self.home / "prometheus.log"
        with open(log_path, "ab") as log_file:
            self._proc = subprocess.Popen(
                [
                    exe,
                    f"--config.file={config_path}",
                    f"--storage.tsdb.path={self.home / 'data'}",
                    f"--web.listen-address=127.0.0.1:{port}",
                    "--storage.tsdb.retention.time=1d",
                ],
                stdout=subprocess.DEVNULL,
                stderr=log_file,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # a Ctrl-C of the harness is not also the server's
            )
        (self.home / PID_FILE).write_text(f"{self._proc.pid}\n", encoding="utf-8")
        self.started_unix = time.time()
        proc, answers = self._proc, http_answers(f"{self.url}/-/ready")

        def ready() -> str | None:
            if proc.poll() is not None:
                tail = log_path.read_text(errors="replace").splitlines()[-5:]
                self.stop()
                raise ClusterError(f"prometheus exited at start: {' / '.join(tail)}")
            return answers()

        try:
            Until("prometheus ready", ready, timeout=timeout_s, interval=0.2).wait_until_ready()
        except WaitTimeout:
            self.stop()
            raise ClusterError(
                f"prometheus not ready within {timeout_s:.0f} s (log: {log_path})"
            ) from None
        return self.url

    def wait_scraping(self, jobs: Sequence[str], timeout_s: float = 30.0) -> float:
        """Wait until every job in ``jobs`` has been scraped once (its ``up`` series
        exists: Prometheus applies its targets a few seconds after it starts); the
        seconds waited. A target that does not answer still counts (``up`` 0)."""
        began = time.monotonic()

        def scraped() -> str | None:
            seen = {r["metric"].get("job") for r in self.query("up")}
            missing = sorted(set(jobs) - seen)
            return f"not scraped: {', '.join(missing)}" if missing else None

        wait = Until(
            "prometheus scraping",
            scraped,
            timeout=timeout_s,
            interval=0.2,
            transient=(requests.RequestException, ClusterError, ValueError),
        )
        try:
            wait.wait_until_ready()
        except WaitTimeout:
            raise ClusterError(
                f"prometheus scraped no {'/'.join(jobs)} within {timeout_s} s"
            ) from None
        return time.monotonic() - began

    def _api(self, path: str, params: Mapping[str, Any]) -> Any:
        resp = requests.get(f"{self.url}/api/v1/{path}", params=dict(params), timeout=10)
        body = resp.json()
        if body.get("status") != "success":
            raise ClusterError(f"prometheus {path}: {body.get('error') or resp.status_code}")
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """The instant vector of ``expr`` now: ``[{"metric": {...}, "value": [t, "v"]}]``."""
        return list(self._api("query", {"query": expr})["result"])

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[dict[str, Any]]:
        """``[{"metric": {...}, "values": [[t, "v"], ...]}]`` between two unix times."""
        params = {"query": expr, "start": start, "end": end, "step": step}
        return list(self._api("query_range", params)["result"])

    def stop(self, timeout_s: float = 10.0) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout_s)
        with contextlib.suppress(FileNotFoundError):
            (self.home / PID_FILE).unlink()


def stop_leftover(home: Path) -> str | None:
    """Kill the server a run left (pid file under ``home``), if it is still that server;
    a line saying what was done, or None when nothing was running."""
    pid_path = home / PID_FILE
    try:
        pid = int(pid_path.read_text().strip())
    except (OSError, ValueError):
        return None
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        cmdline = []
    # the pid may have been reused since: only a prometheus with this run's config counts
    mine = f"--config.file={home / PROMETHEUS_YML}".encode()
    if mine not in cmdline:
        pid_path.unlink(missing_ok=True)
        return None
    os.kill(pid, signal.SIGTERM)
    try:
        Until(
            f"prometheus {pid} gone",
            lambda: "still running" if _alive(pid) else None,
            timeout=5.0,
            interval=0.1,
        ).wait_until_ready()
    except WaitTimeout:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    pid_path.unlink(missing_ok=True)
    return f"stopped prometheus (pid {pid})"


def _alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    fields = stat_fields(pid)
    return fields is not None and fields[:1] != ["Z"]
