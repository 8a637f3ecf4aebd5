"""The runner's exit paths, with the cluster and the drive phase replaced by fakes."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from sample_runs import make_run

from kchaos.faults.leadership import rotated
from kchaos.harness.errors import ClusterError, ConfigError
from kchaos.harness.run import orchestrate, record
from kchaos.harness.run.context import RunContext
from kchaos.harness.scenario import library


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
    assert run["status"] == "completed" and run["end"]
    assert run["image"] == {"kafka": "kchaos/kafka:4.4.0", "toxiproxy": "kchaos/toxiproxy:2.12.0"}
    # each fact once: the scenario holds the seed and the configured sections
    assert run["scenario"]["seed"] == 1 and "seed" not in run
    assert run["scenario"]["workload"]["producers"]["acks"] == "all"
    assert run["scenario"]["checks"]["max_offline_seconds"] == 20.0
    assert not {"cluster", "topics", "producer", "consumer", "checks", "expect"} & set(run)
    assert run["scenario"]["name"] == "smoke"
    assert (tmp_path / "run" / "results.json").is_file()  # the real checker ran
    assert (tmp_path / "run" / "report.html").is_file()
    # The sample history has a partition offline for 2 s and recovers: valid, as expected.
    assert result.summary["verdict"] == "valid"
    assert result.exit_code == 0


def test_run_json_records_the_runs_share_of_the_host(fakes, monkeypatch, tmp_path: Path):
    """run.json ``host``: the CPUs, how many runs the batch ran at once, and the load
    average at the start and the end; the run page says it on one line."""
    monkeypatch.setattr(orchestrate, "_drive", writes_history())
    loads = iter([(0.5, 0.4, 0.3), (3.25, 1.0, 0.5)])
    monkeypatch.setattr(record.os, "getloadavg", lambda: next(loads))
    monkeypatch.setattr(record.os, "cpu_count", lambda: 2)
    orchestrate.run_scenario(library.load("smoke"), out=tmp_path / "run", quiet=True, parallel=2)
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["host"] == {
        "cpus": 2,
        "parallel": 2,
        "cpus_per_run": 1.0,
        "load_avg_start": [0.5, 0.4, 0.3],
        "load_avg_end": [3.25, 1.0, 0.5],
    }
    page = (tmp_path / "run" / "report.html").read_text()
    assert "2 CPUs, 2 runs at once (1 CPU each), load 0.5 at start, 3.25 at end" in page


def test_a_lone_run_records_parallel_1(fakes, monkeypatch, tmp_path: Path):
    monkeypatch.setattr(orchestrate, "_drive", writes_history())
    orchestrate.run_scenario(library.load("smoke"), out=tmp_path / "run", quiet=True)
    host = json.loads((tmp_path / "run" / "run.json").read_text())["host"]
    assert host["parallel"] == 1 and host["cpus"] >= 1
    assert record.host_at_end(None) is None


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


def _history_rows(run_dir: Path) -> list[tuple[Any, ...]]:
    import duckdb

    from kchaos.harness.rundir import RunDir

    copy = RunDir(run_dir).history_parquet
    return duckdb.sql(f"SELECT index, f, type FROM read_parquet('{copy}/*.parquet')").fetchall()


def test_a_run_ends_with_its_history_in_parquet(fakes, monkeypatch, tmp_path: Path):
    monkeypatch.setattr(orchestrate, "_drive", writes_history())
    orchestrate.run_scenario(library.load("smoke"), out=tmp_path / "run", quiet=True)
    lines = [json.loads(x) for x in (tmp_path / "run" / "history.jsonl").read_text().splitlines()]
    assert _history_rows(tmp_path / "run") == [(e["index"], e["f"], e["type"]) for e in lines]
    assert not list((tmp_path / "run").glob("*.tmp"))


def _drive_torn(ctx: RunContext) -> None:
    run_dir = ctx.run_dir.path
    sample = make_run(run_dir.parent / "sample", results=None, torn=True)
    (run_dir / "history.jsonl").write_bytes((sample / "history.jsonl").read_bytes())


def test_a_torn_history_gets_no_parquet_and_the_run_stands(fakes, monkeypatch, tmp_path: Path):
    monkeypatch.setattr(orchestrate, "_drive", _drive_torn)
    result = orchestrate.run_scenario(library.load("smoke"), out=tmp_path / "run", quiet=True)
    assert result.summary["verdict"] == "valid" and result.exit_code == 0
    assert sorted(p.name for p in (tmp_path / "run").glob("history.*")) == ["history.jsonl"]
    assert not list((tmp_path / "run").glob("*.tmp"))


def test_a_failing_parquet_copy_neither_fails_the_run_nor_hides_its_verdict(
    fakes, monkeypatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    from kchaos.harness.rundir.rundir import RunDir

    def broken(self: RunDir, threads: int = 2) -> bool:
        raise OSError("no space left on device")

    monkeypatch.setattr(orchestrate, "_drive", writes_history())
    monkeypatch.setattr(RunDir, "write_history_parquet", broken)
    with caplog.at_level("WARNING", logger=orchestrate.__name__):
        result = orchestrate.run_scenario(library.load("smoke"), out=tmp_path / "run", quiet=True)
    assert result.summary["verdict"] == "valid" and result.exit_code == 0
    assert (tmp_path / "run" / "results.json").is_file()
    assert "no space left on device" in caplog.text
    assert not (tmp_path / "run" / "history.parquet").exists()
