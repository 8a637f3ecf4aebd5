"""Across runs: one row per run (scenario, Kafka version, key configs, verdicts, counts).

Written to OUT/runs.parquet, OUT/runs.csv, OUT/windows.parquet (every run's windows) and
OUT/trend.html (a self-contained plotly page). OUT defaults to ``_analysis`` next to the
runs (a directory without a history is never taken for a run).
"""

from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kchaos.harness.analysis.outputs import WINDOW_DDL, window_rows
from kchaos.harness.analysis.runs import KEY_CONFIGS, run_facts
from kchaos.harness.rundir.anomalies import DATA_KINDS
from kchaos.harness.rundir.results import load_results
from kchaos.harness.rundir.rundir import TrendDir

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from kchaos.harness.analysis.job import RunSummary

# Kinds only `kchaos check` reports; the table takes their counts from results.json.
CHECK_ONLY = (
    "nonmonotonic-poll",
    "poll-skip",
    "acked-below-min-isr",
    "unclean-election",
    "offline",
)


def col(name: str) -> str:
    """A column name from a Kafka setting or anomaly kind (dots and dashes to _)."""
    return name.replace(".", "_").replace("-", "_")


COLUMNS: list[tuple[str, str]] = [
    ("run", "string"),
    ("path", "string"),
    ("scenario", "string"),
    ("kafka_version", "string"),
    ("seed", "string"),
    ("started", "string"),
    *[(col(k), "string") for k in KEY_CONFIGS],
    ("verdict", "string"),
    ("analysis_valid", "string"),
    ("agrees_with_check", "boolean"),
    *[(col(k), "long") for k in DATA_KINDS],
    *[(col(k), "long") for k in CHECK_ONLY],
    ("sends_ok", "long"),
    ("sends_fail", "long"),
    ("sends_info", "long"),
    ("faults", "long"),
]


def _count(anomalies: dict[str, Any], kind: str) -> int:
    entry = anomalies.get(kind)
    return int(entry.get("count", 0)) if isinstance(entry, dict) else 0


def trend_row(rs: RunSummary) -> dict[str, Any]:
    facts = run_facts(rs.run.path)
    judged = load_results(rs.run.path)
    results = None if judged is None else judged.raw
    found = rs.summary["anomalies"]
    row: dict[str, Any] = {
        "run": facts["run_id"],
        "path": str(rs.run.path),
        "scenario": facts["scenario"],
        "kafka_version": facts["kafka_version"],
        "seed": facts["seed"],
        "started": facts["started"],
        "analysis_valid": str(rs.summary["valid"]).lower(),
        "verdict": None,
        "agrees_with_check": None,
    }
    for key in KEY_CONFIGS:
        row[col(key)] = facts[key]
    for kind in DATA_KINDS:
        row[col(kind)] = _count(found, kind)
    for kind in CHECK_ONLY:
        row[col(kind)] = None
    if results is not None:
        checked = results.get("anomalies") or {}
        row["verdict"] = str(results.get("valid")).lower()
        row["agrees_with_check"] = all(_count(checked, k) == _count(found, k) for k in DATA_KINDS)
        for kind in CHECK_ONLY:
            row[col(kind)] = _count(checked, kind)
    sends = rs.summary["stats"].get("sends", {})
    row["sends_ok"] = sends.get("ok", 0)
    row["sends_fail"] = sends.get("fail", 0)
    row["sends_info"] = sends.get("info", 0)
    row["faults"] = rs.summary["stats"].get("faults", 0)
    return row


def default_out(results: list[RunSummary]) -> Path:
    parents = [str(rs.run.path.parent) for rs in results]
    return Path(os.path.commonpath(parents)) / "_analysis"


def write_plot(rows: list[dict[str, Any]], path: Path) -> None:
    """Anomaly counts per run, stacked by kind, with each run's facts on hover."""
    import plotly.graph_objects as go

    ordered = sorted(rows, key=lambda r: (r["started"] or "", r["run"]))
    runs = [r["run"] for r in ordered]
    hover = [
        f"scenario {r['scenario']}<br>Kafka {r['kafka_version']}<br>acks {r['acks']}"
        f"<br>min.insync {r['min_insync_replicas']}<br>verdict {r['verdict']}"
        f" / analysis {r['analysis_valid']}"
        for r in ordered
    ]
    fig = go.Figure()
    for kind in (*DATA_KINDS, *CHECK_ONLY):
        counts = [r[col(kind)] or 0 for r in ordered]
        if any(counts):
            fig.add_bar(name=kind, x=runs, y=counts, hovertext=hover)
    if not fig.data:
        fig.add_bar(name="no anomaly", x=runs, y=[0] * len(runs), hovertext=hover)
    fig.update_layout(
        barmode="stack",
        title="kchaos: anomalies per run",
        xaxis_title="run",
        yaxis_title="count",
    )
    fig.write_html(str(path), include_plotlyjs=True, full_html=True)


def write_trend(spark: SparkSession, results: list[RunSummary], out: Path | None) -> Path:
    """Write the cross-run table, every window, and the plot; return the directory."""
    target = out or default_out(results)
    target.mkdir(parents=True, exist_ok=True)
    rows = [trend_row(rs) for rs in results]
    names = [name for name, _ in COLUMNS]
    ddl = ", ".join(f"{name} {kind}" for name, kind in COLUMNS)
    table = spark.createDataFrame([[r[n] for n in names] for r in rows], ddl)
    files = TrendDir(target)
    table.coalesce(1).write.mode("overwrite").parquet(str(files.runs_parquet))
    with files.runs_csv.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=names)
        writer.writeheader()
        writer.writerows(rows)
    wrows: list[list[Any]] = []
    for rs, row in zip(results, rows, strict=True):
        wrows.extend([row["run"], *values] for values in window_rows(rs.windows))
    wddl = "run string, " + WINDOW_DDL
    windows = spark.createDataFrame(wrows, wddl) if wrows else None
    if windows is not None:
        windows.coalesce(1).write.mode("overwrite").parquet(str(files.windows_parquet))
    write_plot(rows, files.html)
    return target
