"""Writing one run's outputs: analysis/summary.json, windows.json and windows.parquet."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from kchaos.harness.analysis.job import RunSummary

WINDOW_COLUMNS: list[tuple[str, str]] = [
    ("w", "int"),
    ("start_ns", "long"),
    ("end_ns", "long"),
    ("duration_s", "double"),
    ("label", "string"),
    ("faults", "string"),
    ("fault_ids", "string"),
    ("invoked", "long"),
    ("in_flight", "long"),
    ("ok", "long"),
    ("fail", "long"),
    ("info", "long"),
    ("lost", "long"),
    ("latency_p50_ms", "double"),
    ("latency_p95_ms", "double"),
    ("latency_p99_ms", "double"),
    ("latency_max_ms", "double"),
    ("throughput_ok_per_s", "double"),
]
WINDOW_DDL = ", ".join(f"{name} {kind}" for name, kind in WINDOW_COLUMNS)


def window_rows(windows: list[dict[str, Any]]) -> list[list[Any]]:
    """The windows as rows in WINDOW_COLUMNS order (ints as floats where the type says so)."""
    rows = []
    for w in windows:
        row = []
        for name, kind in WINDOW_COLUMNS:
            value = w.get(name)
            if value is not None and kind == "double":
                value = float(value)
            row.append(value)
        rows.append(row)
    return rows


def write_run_outputs(spark: SparkSession, results: list[RunSummary]) -> None:
    """summary.json, windows.json and windows.parquet under each RUN_DIR/analysis/."""
    for rs in results:
        rd = rs.run.rundir
        rd.write_analysis_json(rd.analysis_summary, rs.summary)
        windows = [{k: v for k, v in w.items() if k != "rk"} for w in rs.windows]
        rd.write_analysis_json(rd.analysis_windows_json, {"run": rs.run.name, "windows": windows})
        df = spark.createDataFrame(window_rows(windows), WINDOW_DDL)
        df.coalesce(1).write.mode("overwrite").parquet(str(rd.analysis_windows_parquet))
