"""observe_run with Debian's prometheus for real and a cluster without brokers: the
harness's series reach prometheus.json, run.json's record says so, nothing is left running."""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from kchaos.harness.run import prometheus as run_prometheus
from kchaos.harness.run.record import RunRecord
from kchaos.harness.rundir.rundir import RunDir


@pytest.fixture(autouse=True)
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KCHAOS_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("KCHAOS_METRICS_PORT", raising=False)


def test_a_run_with_a_server_stores_the_harness_series(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    rec = RunRecord(run_dir / "run.json", {})
    cluster = SimpleNamespace(run_id="r9", brokers=[])
    with run_prometheus.observe_run(cluster, RunDir(run_dir), rec, server=True) as metrics:
        assert metrics is not None
        url = rec.data["prometheus"]["url"]
        time.sleep(1.5)
        metrics.fault_started("pause", ["kafka-2"])
        time.sleep(3.5)  # a few scrapes, also on a loaded machine
        metrics.fault_stopped("pause", ["kafka-2"])
        time.sleep(1.5)
    stored = json.loads((run_dir / "prometheus.json").read_text())
    active = [s for s in stored["series"] if s["name"] == "active_faults"]
    assert [s["labels"] for s in active] == [{"fault": "pause"}]
    values = [v for _, v in active[0]["points"]]
    assert 1.0 in values and values[-1] == 0.0  # on, then off again
    assert stored["errors"] == []
    summary = rec.data["prometheus"]  # in memory until the run's final write
    assert summary["url"] == url and summary["file"] == "prometheus.json"
    assert "job_name: kchaos" in (run_dir / "prometheus.yml").read_text()
    # the server is stopped and the harness's /metrics no longer served
    import requests

    with pytest.raises(requests.ConnectionError):
        requests.get(f"{url}/-/ready", timeout=2)
    with pytest.raises(requests.ConnectionError):
        requests.get(summary["harness_metrics"], timeout=2)


def test_without_a_server_or_a_port_there_are_no_metrics(tmp_path: Path) -> None:
    rec = RunRecord(tmp_path / "run.json", {})
    cluster = SimpleNamespace(run_id="r10", brokers=[])
    with run_prometheus.observe_run(cluster, RunDir(tmp_path), rec, server=False) as metrics:
        assert metrics is None
    assert not (tmp_path / "prometheus.yml").exists() and "prometheus" not in rec.data
