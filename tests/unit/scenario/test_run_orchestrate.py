"""The runner's exit paths, with the cluster and the drive phase replaced by fakes."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from kchaos.faults.leadership import rotated
from kchaos.harness.errors import ClusterError, ConfigError
from kchaos.harness.run import orchestrate, record
from kchaos.harness.run.context import RunContext
from kchaos.harness.scenario import library
from kchaos.reports.sample import make_run


class FakeCluster:
    instances: list[FakeCluster] = []

    def __init__(self, spec: Any) -> None:
        self.spec = spec
        self.started = self.stopped = False
        FakeCluster.instances.append(self)

    def start(self) -> FakeCluster:
        self.started = True
        return self

    def stop(self) -> None:
        self.stopped = True


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch) -> list[FakeCluster]:
    import kchaos.harness.cluster

    FakeCluster.instances = []
    monkeypatch.setattr(kchaos.harness.cluster, "Cluster", FakeCluster, raising=False)
    monkeypatch.setattr(
        orchestrate,
        "ensure_images",
        lambda sc, v: orchestrate._Tags(f"kchaos/kafka:{v}", "kchaos/toxiproxy:2.12.0", v),
    )
    return FakeCluster.instances


def writes_history(results: dict | None = None, fail: BaseException | None = None) -> Any:
    """A _drive stand-in: writes a small history (as the workload would), maybe fails."""

    def drive(ctx: RunContext) -> None:
        run_dir = ctx.run_dir.path
        sample = make_run(run_dir.parent / (run_dir.name + "-sample"), results=None)
        (run_dir / "history.jsonl").write_bytes((sample / "history.jsonl").read_bytes())
        if fail is not None:
            raise fail

    return drive


def test_completed_run_writes_everything(fakes, monkeypatch, tmp_path: Path):
    monkeypatch.setattr(orchestrate, "_drive", writes_history())
    sc = library.load("smoke")
    result = orchestrate.run_scenario(sc, out=tmp_path / "run", quiet=True)
    assert fakes[0].started and fakes[0].stopped
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["status"] == "completed" and run["end"] and run["seed"] == 1
    assert run["image"] == {"kafka": "kchaos/kafka:4.4.0", "toxiproxy": "kchaos/toxiproxy:2.12.0"}
    assert run["producer"]["acks"] == "all"
    assert run["checks"]["max_offline_seconds"] == 20.0
    assert run["scenario"]["name"] == "smoke"
    assert (tmp_path / "run" / "results.json").is_file()  # the real checker ran
    assert (tmp_path / "run" / "report.html").is_file()
    # The sample history has a partition offline for 2 s and recovers: valid, as expected.
    assert result.summary["verdict"] == "valid"
    assert result.exit_code == 0


def test_a_failing_run_still_tears_down_and_reports(fakes, monkeypatch, tmp_path: Path):
    monkeypatch.setattr(orchestrate, "_drive", writes_history(fail=ClusterError("boom")))
    with pytest.raises(ClusterError, match="boom"):
        orchestrate.run_scenario(library.load("smoke"), out=tmp_path / "run", quiet=True)
    assert fakes[0].stopped
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["status"] == "error" and run["end"]
    assert (tmp_path / "run" / "report.html").is_file()


def test_sigterm_tears_down(fakes, monkeypatch, tmp_path: Path):
    def drive(*args: Any) -> None:
        writes_history()(*args)
        os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(orchestrate, "_drive", drive)
    with pytest.raises(orchestrate.RunInterrupted):
        orchestrate.run_scenario(library.load("smoke"), out=tmp_path / "run", quiet=True)
    assert fakes[0].stopped
    assert json.loads((tmp_path / "run" / "run.json").read_text())["status"] == "interrupted"
    assert signal.getsignal(signal.SIGTERM) is not None


def test_out_dir_must_be_empty(tmp_path: Path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "file").write_text("")
    with pytest.raises(ConfigError, match="not empty"):
        orchestrate.resolve_run_dir(tmp_path / "x", "id")
    assert orchestrate.resolve_run_dir(tmp_path / "y", "id").is_dir()


def test_jsonable_and_rotation():
    assert record.jsonable({("t", 0): (1, 2), 3: {4}}) == {"t/0": [1, 2], "3": [4]}
    assert rotated([1, 2, 3]) == [2, 3, 1] and rotated([5]) == [5]
