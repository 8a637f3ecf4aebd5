"""What the job writes: summary.json, windows, the Parquet copy, the cross-run table."""

from __future__ import annotations

import csv
import json
from typing import Any

import pytest

from kchaos.harness.analysis.export import export_parquet
from kchaos.harness.analysis.job import run_job
from kchaos.harness.checker import check_run

from hist import every_kind, near_misses  # isort: skip

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def written(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("outputs")
    h, expected = every_kind()
    bad = h.write(root / "runs" / "r-bad")
    (bad / "run.json").write_text(
        json.dumps(
            {
                "run_id": "r-bad",
                "scenario": "whole-cluster-power-loss",
                "kafka_version": "4.4.0",
                "producer": {"acks": "all"},
                "topics": [{"name": "t", "configs": {"min.insync.replicas": "2"}}],
            }
        )
    )
    check_run(bad)  # results.json from the checker, for the verdict column
    good = near_misses().write(root / "runs" / "r-good")
    parquet = export_parquet([good], spark=spark)
    result = run_job([root / "runs"], spark=spark, out=root / "trend")
    return {"root": root, "bad": bad, "good": good, "parquet": parquet, "result": result,
            "expected": expected}  # fmt: skip


def test_summary_json_has_the_results_json_shape(written: dict[str, Any]) -> None:
    summary = json.loads((written["bad"] / "analysis" / "summary.json").read_text())
    assert set(summary) == {"valid", "anomalies", "stats"}
    assert summary["valid"] is False
    counts = {k: v["count"] for k, v in summary["anomalies"].items()}
    assert counts == written["expected"]
    assert all(v["examples"] for v in summary["anomalies"].values())
    good = json.loads((written["good"] / "analysis" / "summary.json").read_text())
    assert good["valid"] is True and good["anomalies"] == {}


def test_export_writes_parquet_partitioned_by_f_and_analyze_reads_it(
    written: dict[str, Any],
) -> None:
    copy = written["parquet"][0]
    assert copy == written["good"] / "history.parquet"
    parts = {p.name for p in copy.iterdir() if p.is_dir()}
    assert {"f=send", "f=poll", "f=drain", "f=drain-end"} <= parts
    good = [rs for rs in written["result"].runs if rs.run.path == written["good"].resolve()][0]
    assert good.run.fmt == "parquet"
    assert good.summary["stats"]["input"] == "parquet"
    assert good.summary["stats"]["sends"]["ok"] == 2


def test_windows_are_written_as_json_and_parquet(spark: Any, written: dict[str, Any]) -> None:
    out = written["bad"] / "analysis"
    windows = json.loads((out / "windows.json").read_text())["windows"]
    assert [w["label"] for w in windows] == ["no-fault", "pause", "no-fault"]
    table = spark.read.parquet(str(out / "windows.parquet"))
    rows = sorted(table.collect(), key=lambda r: r["w"])
    assert [r["lost"] for r in rows] == [0, 1, 0]
    assert [r["ok"] for r in rows] == [w["ok"] for w in windows]


def test_cross_run_table_as_parquet_csv_and_plot(spark: Any, written: dict[str, Any]) -> None:
    trend = written["root"] / "trend"
    assert written["result"].trend_dir == trend
    with (trend / "runs.csv").open() as fh:
        rows = {r["run"]: r for r in csv.DictReader(fh)}
    assert set(rows) == {"r-bad", "r-good"}
    bad = rows["r-bad"]
    assert bad["scenario"] == "whole-cluster-power-loss" and bad["kafka_version"] == "4.4.0"
    assert bad["acks"] == "all" and bad["min_insync_replicas"] == "2"
    assert bad["verdict"] == "false" and bad["analysis_valid"] == "false"
    assert bad["agrees_with_check"] == "True"
    assert bad["lost_write"] == "1" and bad["unseen"] == "1"
    assert rows["r-good"]["verdict"] == "" and rows["r-good"]["analysis_valid"] == "true"
    table = spark.read.parquet(str(trend / "runs.parquet"))
    assert table.count() == 2
    assert {r["run"] for r in spark.read.parquet(str(trend / "windows.parquet")).collect()} == {
        "r-bad",
        "r-good",
    }
    html = (trend / "trend.html").read_text()
    assert "plotly" in html.lower() and "lost-write" in html


def test_window_measures_on_the_driver_equal_sparks_aggregation(spark: Any) -> None:
    """The driver's numpy measures (exact percentiles below EXACT_BELOW ok latencies,
    percentile_approx above) equal one Spark aggregation of every window, percentiles by
    percentile_approx, as the windows were always measured."""
    import random

    from kchaos.harness.analysis.windows import EXACT_BELOW, FaultLine, window_stats

    rng = random.Random(36)
    sends = []
    for _ in range(EXACT_BELOW + 600):  # window 0 (no fault) is measured by Spark
        t = rng.randrange(0, 500_000)
        sends.append((1, t, t + rng.randrange(1, 500_000), "ok"))
    for i in range(300):  # windows 1 and 2, and run 2: exact, ties in the latencies
        t = rng.randrange(1_000_000, 3_000_000)
        outcome = rng.choice(["ok", "ok", "ok", "fail", "info", None])
        done = None if outcome is None else t + 1000 * rng.randrange(1, 50)
        sends.append((1 + i % 2, t, done, outcome))
    sends.append((1, -5, 10, "ok"))  # invoked before time 0: its completion counts
    df = spark.createDataFrame(sends, "rk int, t_invoke long, t_done long, outcome string")
    lost = spark.createDataFrame(
        [(1, "lost-write", 1_500_000), (1, "unseen", 1_500_000)], "rk int, kind string, time long"
    )
    faults = {1: [FaultLine(1_000_000, 1, "start", "f", "pause")]}
    faults[1].append(FaultLine(2_000_000, 2, "stop", "f", "pause"))
    ends = {1: 3_500_000, 2: 3_500_000}
    driver = window_stats(spark, df, lost, faults, ends, n_sends=len(sends))
    in_spark = window_stats(spark, df, lost, faults, ends, n_sends=10**9)
    assert [w["label"] for w in driver] == ["no-fault", "pause", "no-fault", "no-fault"]
    assert driver == in_spark
    assert [list(w) for w in driver] == [list(w) for w in in_spark]  # the JSON's key order
    assert driver[0]["ok"] >= EXACT_BELOW and driver[1]["lost"] == 1


def test_the_validation_pass_finds_the_fault_lines(spark: Any, tmp_path: Any) -> None:
    """The windows' fault lines come from the validation pass (no scan of their own):
    the same lines, for every run, as reading them from the events, on JSON lines and
    on a run-end Parquet copy."""
    from kchaos.harness.analysis.load import load_events
    from kchaos.harness.analysis.runs import resolve_runs
    from kchaos.harness.analysis.windows import fault_lines, faults_from_rows
    from kchaos.harness.histgen import generate_run
    from kchaos.harness.rundir import RunDir

    generate_run(tmp_path / "a", events=3000, seed=3)
    generate_run(tmp_path / "b", events=2000, seed=5)
    assert RunDir(tmp_path / "b").write_history_parquet()
    runs = resolve_runs([tmp_path / "a", tmp_path / "b"])
    assert {r.fmt for r in runs} == {"jsonl", "parquet"}
    loaded = load_events(spark, runs)
    try:
        found = faults_from_rows(loaded.faults)
        read = fault_lines(loaded.events)
        assert set(found) == {r.key for r in runs} == set(read)
        for key in read:
            assert sorted(found[key], key=lambda f: f.index) == sorted(
                read[key], key=lambda f: f.index
            )
            assert len(read[key]) > 0
    finally:
        loaded.release()
