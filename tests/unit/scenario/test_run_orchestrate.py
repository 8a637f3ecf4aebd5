"""The runner's exit paths, with the cluster and the drive phase replaced by fakes."""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from fake_workload import FakeWorkload
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
        self.started = self.stopped = self.cleaned = False
        FakeCluster.instances.append(self)

    # what the real _drive asks of a cluster once its own steps are faked
    bootstrap_servers = "localhost:9"

    @property
    def run_id(self) -> str:
        return str(self.spec.run_id)

    def start(self) -> FakeCluster:
        self.started = True
        return self

    def stop(self, timeout: float = 20.0) -> None:
        self.stopped = True

    def cleanup(self) -> list[str]:
        self.cleaned = True
        return []

    def wait_ready(self, timeout: float) -> None:
        pass

    def wait_isr_full(self, topics: Any = None, timeout: float = 60.0) -> None:
        pass


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
    # the evidence is collected before the teardown: no controlled shutdown then
    assert fakes[0].started and fakes[0].cleaned and not fakes[0].stopped
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
    assert fakes[0].cleaned
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
    assert fakes[0].cleaned
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


# -- run.json: written once the run has started and once at its end, nothing between --


@pytest.fixture
def run_json_writes(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """run.json as it stood after each write of it, in order. Every JSON file of a run
    goes through ``rundir.files.atomic_write``; counting there sees any writer of
    run.json (the runner's record, ``RunDir.write_run``, a bare ``write_json``)."""
    from kchaos.harness.rundir import files

    seen: list[dict[str, Any]] = []
    real = files.atomic_write

    @contextlib.contextmanager
    def counted(path: Any) -> Iterator[Any]:
        with real(path) as fh:
            yield fh
        if Path(path).name == "run.json":
            seen.append(json.loads(Path(path).read_text()))

    monkeypatch.setattr(files, "atomic_write", counted)
    return seen


@pytest.fixture
def driven(fakes, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The real _drive and run_scenario around it, with the cluster, topics, features,
    workload, nemesis, heal and after-run collection faked; ``_judge`` replaced by a
    stand-in that keeps the run.json it finds on disk (what the checker would read)."""
    import kchaos.faults.heal
    import kchaos.faults.nemesis
    import kchaos.reports.console
    import kchaos.workloads.features
    from kchaos.harness.run.progress import RunProgress
    from kchaos.harness.run.record import record_step
    from kchaos.workloads.workload import Workload

    seen: dict[str, Any] = {}

    class FakeNemesis:
        heal_actions: list[str] = []

        def __init__(self, cluster: Any, schedule: Any, sink: Any, **kw: Any) -> None:
            self.schedule = schedule

        def start(self) -> None:
            # the run is defined by now: its first write is on disk
            seen["run_json_at_nemesis_start"] = json.loads(
                (Path(seen["run_dir"]) / "run.json").read_text()
            )

        def stop(self) -> None:
            pass

        def errors(self) -> list[Any]:
            return [{"fault": "f-1", "error": "never healed"}]

    def collect(ctx: RunContext) -> None:
        def broken() -> dict[str, Any]:
            raise OSError("docker gone")

        record_step(ctx.record, "after_run", "controller log", broken)
        record_step(ctx.record, "replicas", "replica logs", lambda: {"files": 2})

    def judge(run_dir: Any, progress: Any, console: Any) -> Any:
        seen["run_json_at_check"] = json.loads(run_dir.run_json.read_text())
        return SimpleNamespace(summary={}, paths={}, outcome=SimpleNamespace(exit_code=0))

    def for_cluster(spec: Any, cluster: Any, history: Any, **kw: Any) -> FakeWorkload:
        seen["run_dir"] = kw["run_dir"].path
        return FakeWorkload(stopped={"sent": 10}, drained={"partitions": 1})

    monkeypatch.delenv("KCHAOS_METRICS_PORT", raising=False)
    monkeypatch.setattr(orchestrate, "create_topics", lambda *a: None)
    monkeypatch.setattr(
        kchaos.workloads.features, "read_features", lambda servers: {"transaction.version": 2}
    )
    monkeypatch.setattr(Workload, "for_cluster", staticmethod(for_cluster))
    monkeypatch.setattr(kchaos.faults.nemesis, "Nemesis", FakeNemesis)
    monkeypatch.setattr(kchaos.faults.heal, "heal_everything", lambda cluster: [])
    monkeypatch.setattr(RunProgress, "workload", lambda self, *a: None)
    monkeypatch.setattr(
        orchestrate.reread,
        "collect",
        lambda cluster, run_dir, rec, drain, committed: record_step(rec, "reread", "re-read", dict),
    )
    monkeypatch.setattr(orchestrate, "_collect", collect)
    monkeypatch.setattr(orchestrate, "_judge", judge)
    monkeypatch.setattr(kchaos.reports.console, "print_run", lambda *a: None)
    return seen


def test_run_json_is_written_when_the_run_starts_and_when_it_ends(
    driven, run_json_writes, tmp_path: Path
):
    orchestrate.run_scenario(library.load("smoke"), out=tmp_path / "run", quiet=True)
    assert [w["status"] for w in run_json_writes] == ["running", "completed"]
    first, final = run_json_writes
    # the first write: everything the run is defined by, learned while it started
    assert driven["run_json_at_nemesis_start"] == first
    assert first["scenario"]["name"] == "smoke" and first["kafka_version"] == "4.4.0"
    assert first["image"]["kafka"] == "kchaos/kafka:4.4.0"
    assert first["features"] == {"transaction.version": 2}
    assert isinstance(first["history_start_unix_ns"], int)
    assert first["schedule"] and first["cluster_spec"]
    assert first["end"] is None
    assert not {"workload_stats", "drain", "reread", "after_run", "nemesis_errors"} & set(first)
    # the final write: the first one's facts and what came after, errors of steps too
    # (the host's load average is taken again at the end)
    changed = ("status", "end", "host")
    assert {k: v for k, v in final.items() if k in first and k not in changed} == {
        k: v for k, v in first.items() if k not in changed
    }
    assert final["host"]["load_avg_start"] == first["host"]["load_avg_start"]
    assert first["host"]["load_avg_end"] is None and final["host"]["load_avg_end"]
    assert final["end"] and final["wall_seconds"] >= 0 and "error" not in final
    assert final["workload_stats"] == {"sent": 10} and final["drain"] == {"partitions": 1}
    assert final["reread"] == {} and final["replicas"] == {"files": 2}
    assert final["after_run"] == {"error": "OSError: docker gone"}
    assert final["nemesis_errors"] == [{"fault": "f-1", "error": "never healed"}]
    # the checker and the reports read the final run.json
    assert driven["run_json_at_check"] == final


def test_a_run_failing_after_it_started_writes_its_error_at_the_end(
    driven, run_json_writes, monkeypatch, tmp_path: Path
):
    from kchaos.workloads.workload import Workload

    real = Workload.for_cluster

    def failing_drain(*args: Any, **kw: Any) -> Any:
        workload = real(*args, **kw)
        workload.drain = lambda: (_ for _ in ()).throw(ClusterError("drain lost"))
        return workload

    monkeypatch.setattr(Workload, "for_cluster", staticmethod(failing_drain))
    with pytest.raises(ClusterError, match="drain lost"):
        orchestrate.run_scenario(library.load("smoke"), out=tmp_path / "run", quiet=True)
    assert [w["status"] for w in run_json_writes] == ["running", "error"]
    final = run_json_writes[-1]
    assert final["error"] == "ClusterError: drain lost" and final["end"]
    assert final["nemesis_errors"] and final["workload_stats"] == {"sent": 10}


def test_a_run_failing_before_it_started_writes_run_json_once(
    fakes, run_json_writes, monkeypatch, tmp_path: Path
):
    import kchaos.harness.cluster

    class NoCluster(FakeCluster):
        def start(self) -> FakeCluster:
            raise ClusterError("no Docker daemon")

    monkeypatch.setattr(kchaos.harness.cluster, "Cluster", NoCluster, raising=False)
    with pytest.raises(ClusterError, match="no Docker daemon"):
        orchestrate.run_scenario(library.load("smoke"), out=tmp_path / "run", quiet=True)
    assert fakes[0].cleaned
    assert len(run_json_writes) == 1
    # readable by the reader every tool uses, saying what was attempted and why it failed
    from kchaos.harness.rundir.runjson import load_run

    run = load_run(tmp_path / "run")
    assert run.status == "error" and run.end and run.scenario_name == "smoke"
    assert run.get("error") == "ClusterError: no Docker daemon"
    assert run.kafka_image == "kchaos/kafka:4.4.0"
    assert run.history_start_unix_ns is None and run.schedule is None
    assert run_json_writes[0] == run.raw


def test_run_record_writes_only_when_told(tmp_path: Path, monkeypatch):
    rec = record.RunRecord(tmp_path / "run.json", {"format": 1})
    rec.update(a=(1, 2))
    assert not rec.path.exists() and rec.writes == 0
    assert rec.data["a"] == [1, 2]  # taken as plain data when recorded
    rec.started()
    assert json.loads(rec.path.read_text()) == {"format": 1, "a": [1, 2], "status": "running"}
    rec.update(b=1)
    assert json.loads(rec.path.read_text())["status"] == "running" and rec.writes == 1
    monkeypatch.setattr(record, "write_run", lambda *a: (_ for _ in ()).throw(OSError("full")))
    rec.finished("completed", end="now")  # logged, not raised
    assert rec.writes == 1 and rec.data["status"] == "completed"
