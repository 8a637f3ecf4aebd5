"""``kchaos export``: a Parquet copy of a run's history, partitioned by ``f``.

The copy holds the columns of the analysis schema only (validated like the JSON lines,
torn last line dropped); ``kchaos analyze`` reads it instead of history.jsonl when it is
at least as new. Partitioning by ``f`` lets every query read only the kinds of line it
needs (sends, reads, drain ends, faults).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kchaos.harness.analysis.load import load_events
from kchaos.harness.analysis.runs import resolve_runs
from kchaos.harness.analysis.session import spark_errors, start_session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def export_parquet(
    run_dirs: list[Path], *, master: str | None = None, spark: SparkSession | None = None
) -> list[Path]:
    """Write RUN_DIR/history.parquet for every run; return the paths written."""
    runs = resolve_runs(run_dirs, prefer="jsonl")
    session = spark if spark is not None else start_session(master, app_name="kchaos-export")
    written: list[Path] = []
    try:
        loaded = load_events(session, runs)
        try:
            with spark_errors("writing Parquet"):
                from pyspark.sql import functions as F

                for run in runs:
                    target = run.rundir.history_parquet
                    (
                        loaded.events.filter(F.col("rk") == run.key)
                        .drop("rk")
                        .repartition("f")
                        .write.mode("overwrite")
                        .partitionBy("f")
                        .parquet(str(target))
                    )
                    written.append(target)
        finally:
            loaded.release()
    finally:
        if spark is None:
            session.stop()
    return written
