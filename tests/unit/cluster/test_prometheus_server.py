"""The run's Prometheus server: its configuration, Debian's prometheus scraping the
harness's /metrics for real, and cleanup of a server a killed harness left."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from kchaos.harness.cluster import prometheus
from kchaos.harness.cluster.prometheus import PrometheusServer, render_config, stop_leftover
from kchaos.workloads.metrics import HarnessMetrics


@pytest.fixture(autouse=True)
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KCHAOS_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


def test_the_template_fills_in_every_broker_and_the_harness() -> None:
    text = render_config("r1", {2: "10.1.0.12", 1: "10.1.0.11"}, ["127.0.0.1:9100"], 0.5)
    assert "${" not in text
    doc = YAML(typ="safe").load(text)
    assert doc["global"]["scrape_interval"] == "500ms"
    jobs = {job["job_name"]: job["static_configs"] for job in doc["scrape_configs"]}
    assert jobs["kafka"] == [
        {"targets": ["10.1.0.11:7071"], "labels": {"node": "1", "run": "r1"}},
        {"targets": ["10.1.0.12:7071"], "labels": {"node": "2", "run": "r1"}},
    ]
    assert jobs["kchaos"] == [{"targets": ["127.0.0.1:9100"], "labels": {"run": "r1"}}]


def test_a_real_server_scrapes_the_harness_metrics() -> None:
    metrics = HarnessMetrics("r2")
    port = metrics.serve(0, addr="127.0.0.1")
    server = PrometheusServer("r2")
    try:
        server.start(render_config("r2", {}, [f"127.0.0.1:{port}"], 0.2))
        metrics.fault_started("pause", ["kafka-1"])
        deadline = time.monotonic() + 20
        found: list = []
        while not found and time.monotonic() < deadline:
            found = server.query('kchaos_fault_starts_total{fault="pause"} > 0')
            time.sleep(0.2)
        assert found, "prometheus never scraped the fault counter"
        assert found[0]["metric"]["target"] == "kafka-1"
        assert found[0]["metric"]["run"] == "r2"
        assert (server.home / prometheus.PID_FILE).is_file()
    finally:
        server.stop()
        metrics.stop_serving()
    assert not (server.home / prometheus.PID_FILE).exists()


def _stand_in(config: str) -> subprocess.Popen[bytes]:
    """A process standing in for a prometheus a killed harness left: same command-line
    argument. Returned once /proc shows its command line (empty while it execs)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", config])
    deadline = time.monotonic() + 10
    while config.encode() not in Path(f"/proc/{proc.pid}/cmdline").read_bytes():
        assert time.monotonic() < deadline
        time.sleep(0.01)
    return proc


def test_cleanup_stops_only_the_runs_own_server(tmp_path: Path) -> None:
    home = tmp_path / "prometheus"
    home.mkdir()
    config = f"--config.file={home / 'prometheus.yml'}"
    proc = _stand_in(config)
    try:
        (home / prometheus.PID_FILE).write_text(f"{proc.pid}\n")
        assert stop_leftover(home) == f"stopped prometheus (pid {proc.pid})"
        assert proc.wait(5) != 0
        assert not (home / prometheus.PID_FILE).exists()
        # a pid file naming some other process (pid reuse): left alone
        other = subprocess.Popen(["sleep", "60"])
        try:
            (home / prometheus.PID_FILE).write_text(f"{other.pid}\n")
            assert stop_leftover(home) is None
            assert other.poll() is None
        finally:
            other.kill()
            other.wait()
    finally:
        proc.kill()
        proc.wait()


def test_a_missing_binary_is_a_clear_error() -> None:
    from kchaos.harness.errors import SetupError

    with pytest.raises(SetupError, match="install Debian's prometheus package"):
        PrometheusServer("r3", binary="no-such-prometheus").start("")


def test_kchaos_cleanup_stops_a_leftover_server_of_a_run(state_dir: Path) -> None:
    from kchaos.harness.cluster.cleanup import find_runs, remove_run

    home = prometheus.home_of("r4")
    home.mkdir(parents=True)
    config = f"--config.file={home / 'prometheus.yml'}"
    proc = _stand_in(config)
    try:
        (home / prometheus.PID_FILE).write_text(f"{proc.pid}\n")
        assert find_runs(None) == ["r4"]
        done = remove_run(None, "r4")
        assert f"stopped prometheus (pid {proc.pid})" in done
        assert proc.wait(5) != 0 and not home.exists()
    finally:
        proc.kill()
        proc.wait()
