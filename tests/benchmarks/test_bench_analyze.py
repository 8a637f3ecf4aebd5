"""`kchaos bench analyze` at a small size: it runs, and the three loss counts agree.

The timing ratio is printed, never asserted (speed goals are reported, not tested).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kchaos.harness.analysis.bench import run_bench

pytestmark = [pytest.mark.benchmark, pytest.mark.spark, pytest.mark.slow]


def test_bench_analyze_small(tmp_path: Path) -> None:
    report = run_bench(100_000, tmp_path, "local[2]", threads=2)
    lost = report["lost_write"]
    assert lost["analyze"] == lost["spark_query"] == lost["spark_via_parquet"] == 1
    assert lost["duckdb"] == 1
    assert report["expected_lost_write"] == 1
    assert report["duckdb_loss_query_s"] > 0 and report["spark_startup_s"] > 0
    print(
        f"\nanalyze/duckdb {report['ratio_analyze_to_duckdb']}, "
        f"loss query spark/duckdb {report['ratio_loss_query_to_duckdb']}"
    )
