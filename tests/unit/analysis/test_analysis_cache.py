"""A job run in a session that goes on (the tests' one session, or a caller's) leaves
Spark's cache as it found it, whether it ends well or on bad input.

Found on 2026-11-26: events parsed by Spark's JSON reader stayed cached after every job
(the job unpersisted a frame derived from them, not the cached one), and a job stopped
by a bad line kept everything it had cached; the analysis tests' shared 1 GB session
then ran out of heap. ``_jsc.getPersistentRDDs`` is the only count of cached frames
PySpark exposes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kchaos.harness.analysis.export import export_parquet
from kchaos.harness.analysis.job import run_job
from kchaos.harness.errors import HistoryError

from hist import every_kind, near_misses  # isort: skip

pytestmark = pytest.mark.spark


def _cached(spark: Any) -> int:
    return int(spark.sparkContext._jsc.getPersistentRDDs().size())


def test_a_job_read_by_sparks_json_reader_leaves_nothing_cached(spark: Any, tmp_path: Path) -> None:
    before = _cached(spark)
    # a torn last line: DuckDB refuses the file, so Spark's own JSON reader parses it and
    # the job caches what it parsed
    torn = near_misses().write(tmp_path / "torn", tail=b'{"index":99,"time":9')
    h, _ = every_kind()
    good = h.write(tmp_path / "good")
    result = run_job([torn, good], spark=spark, write=False)
    by_name = {r.run.path.name: r.summary for r in result.runs}
    assert by_name["torn"]["stats"]["torn_last_line"], "the torn line went unseen"
    assert by_name["good"]["valid"] is False  # every kind: the job did its work
    assert _cached(spark) == before


def test_a_job_stopped_by_a_bad_line_leaves_nothing_cached(spark: Any, tmp_path: Path) -> None:
    before = _cached(spark)
    bad = near_misses().write(tmp_path / "bad", tail=b'{"index":1,"time":5,"process":1}\n')
    torn = near_misses().write(tmp_path / "torn", tail=b'{"index":99,"time":9')
    with pytest.raises(HistoryError):
        run_job([bad, torn], spark=spark, write=False)
    assert _cached(spark) == before


def test_export_leaves_nothing_cached(spark: Any, tmp_path: Path) -> None:
    before = _cached(spark)
    torn = near_misses().write(tmp_path / "torn", tail=b'{"index":99,"time":9')
    assert export_parquet([torn], spark=spark)
    assert _cached(spark) == before
