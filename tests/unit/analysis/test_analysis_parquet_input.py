"""history.parquet as the job's input: the run-end copy (one file, written by RunDir) and
``kchaos export``'s (partitioned by f) give the summary the JSON lines give, also when
several runs of each shape are analysed together in ONE job (their run keys must not mix).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from kchaos.harness.analysis.job import run_job
from kchaos.harness.errors import HistoryError
from kchaos.harness.rundir import RunDir

from corpus import PARQUET_HISTORIES, PARQUET_SHAPES  # isort: skip
from hist import near_misses  # isort: skip

pytestmark = pytest.mark.spark

HISTORIES = PARQUET_HISTORIES
SHAPES = PARQUET_SHAPES


def _partitioned(copy: Path) -> bool:
    """kchaos export's shape: ``f=...`` folders."""
    return copy.is_dir() and any(p.is_dir() and p.name.startswith("f=") for p in copy.iterdir())


@pytest.fixture(scope="module")
def analysed(one_job: Any) -> dict[tuple[str, str], Any]:
    """Each history in each shape (corpus.parquet_runs), every one in the test session's
    single run_job call."""
    return {key: one_job.of(path) for key, path in one_job.parquet.items()}


def _comparable(summary: dict[str, Any]) -> dict[str, Any]:
    """The summary without what names the input (its file and format)."""
    stats = {k: v for k, v in summary["stats"].items() if k not in ("history", "input")}
    anomalies = {
        kind: {
            "count": found["count"],
            "examples": sorted(json.dumps(e, sort_keys=True) for e in found["examples"]),
        }
        for kind, found in summary["anomalies"].items()
    }
    return {"valid": summary["valid"], "anomalies": anomalies, "stats": stats}


def test_each_run_read_the_input_its_shape_gives(analysed: dict[tuple[str, str], Any]) -> None:
    for (name, shape), rs in analysed.items():
        want = "jsonl" if shape == "json" else "parquet"
        assert rs.run.fmt == want, (name, shape)
        assert rs.summary["stats"]["input"] == want, (name, shape)
        assert _partitioned(RunDir(rs.run.path).history_parquet) == (shape == "export")


@pytest.mark.parametrize("name", HISTORIES)
@pytest.mark.parametrize("shape", [s for s in SHAPES if s != "json"])
def test_parquet_gives_the_summary_the_json_lines_give(
    analysed: dict[tuple[str, str], Any], name: str, shape: str
) -> None:
    from_json = _comparable(analysed[(name, "json")].summary)
    assert _comparable(analysed[(name, shape)].summary) == from_json


def test_the_histories_differ_so_mixed_up_runs_would_show(
    analysed: dict[tuple[str, str], Any],
) -> None:
    summaries = [_comparable(analysed[(name, "json")].summary) for name in HISTORIES]
    assert summaries[0]["valid"] is False and summaries[1]["valid"] is True
    assert summaries[0] != summaries[2] and summaries[1] != summaries[2]


def test_a_bad_row_in_a_run_end_copy_is_named_by_its_json_line(spark: Any, tmp_path: Path) -> None:
    """A row DuckDB reads but the format forbids (no ``f``) is caught from the copy as
    from the JSON lines, and named by the line it came from."""
    run = RunDir(tmp_path / "run").create()
    lines = near_misses().lines().splitlines(keepends=True)
    lines.insert(2, b'{"index":99,"time":5,"process":1,"type":"ok"}\n')
    run.history.write_bytes(b"".join(lines))
    assert run.write_history_parquet()
    with pytest.raises(HistoryError) as err:
        run_job([run.path], spark=spark, write=False)
    assert err.value.line == 3 and err.value.field == "f"
    assert str(run.history) in str(err.value)
    shutil.rmtree(run.history_parquet)


def _retyped(copy: Path, column: str, to: str) -> None:
    """Rewrite the one file of a run-end copy with ``column`` cast to Arrow type ``to``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    (part,) = sorted(copy.glob("*.parquet"))
    table = pq.read_table(str(part))
    i = table.column_names.index(column)
    table = table.set_column(i, column, table.column(column).cast(getattr(pa, to)()))
    pq.write_table(table, str(part))


@pytest.mark.parametrize("others", ["int32", "string"])
def test_a_wrongly_typed_copy_among_many_is_named(spark: Any, tmp_path: Path, others: str) -> None:
    """All runs' copies have their types checked by one read; a copy whose ``partition``
    is text is still named, whether the other copies disagree with it (the merge of
    their footers fails) or one more is text too (the merge gives text)."""
    runs = []
    for i in range(3):
        run = RunDir(tmp_path / f"run-{i}").create()
        run.history.write_bytes(near_misses().lines())
        assert run.write_history_parquet()
        run.history.unlink()
        runs.append(run)
    _retyped(runs[1].history_parquet, "partition", "string")
    if others == "string":
        _retyped(runs[2].history_parquet, "partition", "string")
    with pytest.raises(HistoryError) as err:
        run_job([r.path for r in runs], spark=spark, write=False)
    assert err.value.field == "partition"
    assert str(runs[1].history_parquet) in str(err.value)
    assert "type string" in str(err.value)


def _copies(tmp_path: Path, n: int) -> list[RunDir]:
    runs = []
    for i in range(n):
        run = RunDir(tmp_path / f"run-{i}").create()
        run.history.write_bytes(near_misses().lines())
        assert run.write_history_parquet()
        runs.append(run)
    return runs


def test_footers_are_checked_on_the_driver_without_a_spark_job(spark: Any, tmp_path: Path) -> None:
    """Good copies, more of them than Spark lists by itself (32): their types are read
    from the footers by pyarrow, and no Spark job runs for it."""
    from kchaos.harness.analysis.load import check_parquet_schemas, footers_fit
    from kchaos.harness.rundir.parquet import part_files

    copies = {
        r.history_parquet: [str(f) for f in part_files(r.history_parquet)]
        for r in _copies(tmp_path, 40)
    }
    assert footers_fit(copies)
    sc = spark.sparkContext
    sc.setJobGroup("kchaos-footers", "footers")
    try:
        check_parquet_schemas(spark, copies)
        assert sc.statusTracker().getJobIdsForGroup("kchaos-footers") == []
    finally:
        sc.setJobGroup("", "")


@pytest.mark.parametrize("how", ["retyped", "not parquet"])
def test_a_footer_the_driver_cannot_vouch_for_goes_to_spark(tmp_path: Path, how: str) -> None:
    """A wrong type, or a file pyarrow cannot read, is no pass: Spark's check then names
    the copy (the test above with a wrongly typed copy)."""
    from kchaos.harness.analysis.load import footers_fit
    from kchaos.harness.rundir.parquet import part_files

    (run,) = _copies(tmp_path, 1)
    (part,) = part_files(run.history_parquet)
    if how == "retyped":
        _retyped(run.history_parquet, "index", "string")
    else:
        part.write_bytes(b"not a parquet file")
    assert not footers_fit({run.history_parquet: [str(part)]})


def test_the_session_lists_many_input_paths_on_the_driver(spark: Any) -> None:
    from kchaos.harness.analysis.session import LIST_ON_DRIVER

    key = "spark.sql.sources.parallelPartitionDiscovery.threshold"
    assert int(spark.conf.get(key)) == LIST_ON_DRIVER >= 10_000
