"""Several runs in one job: each run's outputs hold that run's results, and no other's.

The job reads every run as one dataset and writes every run's windows in one write
partitioned by run; these tests would catch rows landing under the wrong run on either
side. The runs are built to be told apart: they reuse the same values, topic and
partition (a join or grouping that forgot the run key would mix them), and differ in
their anomaly counts and in how many fault windows they have.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from kchaos.harness.analysis.job import RunSummary, run_job
from kchaos.harness.analysis.outputs import RUN_KEY, WINDOW_COLUMNS, write_run_outputs
from kchaos.harness.analysis.runs import RunInput
from kchaos.harness.checker import check_history
from kchaos.harness.rundir.rundir import RunDir

from corpus import data_counts  # isort: skip
from hist import History, every_kind, near_misses  # isort: skip

pytestmark = pytest.mark.spark


def _two_faults_two_lost() -> History:
    """Values v1..v3 acknowledged at offsets 0..2 of partition 0 (every_kind's names and
    positions), two pauses, and a drain holding v1 only: two lost writes, five windows."""
    h = History()
    h.send("v1", 0, 0)
    h.fault("start", fid="f-1")
    h.send("v2", 0, 1)
    h.fault("stop", fid="f-1")
    h.fault("start", fid="f-2")
    h.send("v3", 0, 2)
    h.fault("stop", fid="f-2")
    h.drain((0, 0, "v1"))
    h.drain_end(0, hwm=3)
    return h


@pytest.fixture(scope="module")
def many(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("many") / "runs"
    kind_history, _ = every_kind()
    dirs = {
        "a-every-kind": kind_history.write(root / "a-every-kind"),
        "b-near-misses": near_misses().write(root / "b-near-misses"),
        "c-two-lost": _two_faults_two_lost().write(root / "c-two-lost"),
    }
    result = run_job([root], spark=spark, trend=False)
    return {"dirs": dirs, "result": result}


def _windows_parquet(run_dir: Path) -> list[dict[str, Any]]:
    table = pq.read_table(str(RunDir(run_dir).analysis_windows_parquet))
    return sorted(table.to_pylist(), key=lambda r: r["w"])


def test_each_run_summary_has_the_checkers_counts_for_that_run(many: dict[str, Any]) -> None:
    got = {}
    want = {}
    for name, run_dir in many["dirs"].items():
        summary = json.loads(RunDir(run_dir).analysis_summary.read_text())
        got[name] = data_counts(summary["anomalies"])
        want[name] = data_counts(check_history(RunDir(run_dir).history).anomalies)
    assert got == want
    # the three runs differ, so equal counts cannot come from one run copied to all
    assert got["c-two-lost"] == {"lost-write": 2}
    assert got["b-near-misses"] == {}
    assert got["a-every-kind"]["lost-write"] == 1


def test_each_runs_windows_parquet_holds_its_own_windows_only(many: dict[str, Any]) -> None:
    names = [name for name, _ in WINDOW_COLUMNS]
    sizes = {}
    for name, run_dir in many["dirs"].items():
        rd = RunDir(run_dir)
        rows = _windows_parquet(run_dir)
        assert list(rows[0]) == names  # one run's table: no run column
        from_json = json.loads(rd.analysis_windows_json.read_text())
        assert from_json["run"] == name
        assert [r["start_ns"] for r in rows] == [w["start_ns"] for w in from_json["windows"]]
        assert [r["lost"] for r in rows] == [w["lost"] for w in from_json["windows"]]
        summary = json.loads(rd.analysis_summary.read_text())
        lost = summary["anomalies"].get("lost-write", {}).get("count", 0)
        assert sum(r["lost"] for r in rows) == lost
        sizes[name] = len(rows)
    assert sizes == {"a-every-kind": 3, "b-near-misses": 1, "c-two-lost": 5}


def test_no_staging_folder_is_left_behind(many: dict[str, Any]) -> None:
    for run_dir in many["dirs"].values():
        left = sorted(p.name for p in RunDir(run_dir).analysis_dir.iterdir())
        assert left == ["summary.json", "windows.json", "windows.parquet"]


def _window(w: int, start: int, lost: int) -> dict[str, Any]:
    base = {name: None for name, _ in WINDOW_COLUMNS}
    return {**base, "w": w, "start_ns": start, "end_ns": start + 10, "label": "x", "lost": lost}


def test_the_one_write_puts_each_runs_rows_under_that_run(spark: Any, tmp_path: Path) -> None:
    """write_run_outputs alone, on made-up windows whose every row names its run (start_ns
    is 1000 times the run key, lost the run key): a row under another run fails."""
    results = []
    for key, n in [(0, 2), (1, 0), (2, 3), (3, 1)]:
        rd = RunDir(tmp_path / f"run-{key}")
        rd.path.mkdir()
        windows = [{"rk": key, **_window(i, 1000 * key + i, key)} for i in range(n)]
        results.append(RunSummary(RunInput(key, rd, "jsonl"), {"valid": True}, windows))
    # an older output is replaced, not merged with
    stale = results[2].run.rundir.analysis_windows_parquet
    stale.mkdir(parents=True)
    (stale / "part-old.parquet").write_bytes(b"not parquet")
    write_run_outputs(spark, results)
    for rs in results:
        key = rs.run.key
        table = pq.read_table(str(rs.run.rundir.analysis_windows_parquet))
        assert table.column_names == [name for name, _ in WINDOW_COLUMNS]
        assert RUN_KEY not in table.column_names
        rows = sorted(table.to_pylist(), key=lambda r: r["w"])
        assert [r["start_ns"] for r in rows] == [1000 * key + w["w"] for w in rs.windows]
        assert {r["lost"] for r in rows} <= {key}
        assert len(rows) == len(rs.windows)
    assert not (stale / "part-old.parquet").exists()
    assert sorted(p.name for p in results[0].run.rundir.analysis_dir.iterdir()) == [
        "summary.json",
        "windows.json",
        "windows.parquet",
    ]
