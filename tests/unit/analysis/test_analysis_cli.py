"""Bad input through the real command line: a clear message, exit 3, never a JVM trace."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kchaos.harness.analysis.job import run_job
from kchaos.harness.checker import check_history
from kchaos.harness.errors import HistoryError

from hist import near_misses  # isort: skip

KCHAOS = [sys.executable, "-m", "kchaos.cli"]
TRACE_MARKS = ("Traceback", "\tat org.apache", "at java.", "Py4JJavaError", "Exception in thread")
JVM_NOISE = ("WARNING: Using incubator modules", "WARN NativeCodeLoader", "log4j")


def kchaos(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    return subprocess.run(
        [*KCHAOS, *args], capture_output=True, text=True, timeout=900, env=env, check=False
    )


def assert_clean_error(proc: subprocess.CompletedProcess[str], *words: str) -> None:
    assert proc.returncode == 3, proc.stderr
    for word in words:
        assert word in proc.stderr
    for mark in TRACE_MARKS + JVM_NOISE:
        assert mark not in proc.stderr and mark not in proc.stdout


def test_no_such_directory(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    assert_clean_error(kchaos("analyze", str(missing)), str(missing), "no such directory")


def test_empty_history(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "history.jsonl").write_bytes(b"")
    assert_clean_error(kchaos("analyze", str(run)), "history.jsonl", "empty history")


@pytest.mark.spark
def test_mistyped_field_names_file_line_and_field(tmp_path: Path) -> None:
    lines = near_misses().lines().splitlines(keepends=True)
    lines[2] = lines[2].replace(b'"index":2', b'"index":"two"')
    run = tmp_path / "run"
    run.mkdir()
    (run / "history.jsonl").write_bytes(b"".join(lines))
    proc = kchaos("analyze", str(run))
    assert_clean_error(proc, "history.jsonl:3", "index")


@pytest.mark.spark
@pytest.mark.parametrize(
    ("tail", "where"),
    [
        (b'{"index":1,"ti\n', "not JSON"),  # torn line, but with its newline: not the tail
        (b'{"time":5,"process":1,"type":"ok","f":"send"}\n', "index: missing"),
        (b'{"index":1,"time":5,"process":1,"type":"perhaps","f":"send"}\n', "type"),
    ],
)
def test_bad_lines_in_process(spark: Any, tmp_path: Path, tail: bytes, where: str) -> None:
    h = near_misses()
    run = tmp_path / "run"
    run.mkdir()
    lines = h.lines()
    (run / "history.jsonl").write_bytes(lines + tail + lines[:60])
    with pytest.raises(HistoryError) as err:
        run_job([run], spark=spark, write=False)
    assert f"history.jsonl:{len(h.events) + 1}" in str(err.value)
    assert where in str(err.value)


@pytest.mark.spark
def test_a_last_line_that_is_not_an_event_is_not_torn(spark: Any, tmp_path: Path) -> None:
    # as `kchaos check` has it (rundir.history.is_torn): only a last line that begins as an
    # event does and lacks its newline was cut short; "garbage" there is a bad line
    h = near_misses()
    run = tmp_path / "run"
    run.mkdir()
    (run / "history.jsonl").write_bytes(h.lines() + b"garbage")
    with pytest.raises(HistoryError) as err:
        run_job([run], spark=spark, write=False)
    assert f"history.jsonl:{len(h.events) + 1}" in str(err.value)
    with pytest.raises(HistoryError):
        check_history(run / "history.jsonl")


@pytest.mark.spark
def test_parquet_copy_with_a_wrong_column_type_names_file_and_column(tmp_path: Path) -> None:
    import duckdb

    run = tmp_path / "run"
    (run / "history.parquet").mkdir(parents=True)
    (run / "history.jsonl").write_bytes(near_misses().lines())
    part = run / "history.parquet" / "part-0.parquet"
    duckdb.sql(f"COPY (SELECT 'two' AS index, 5 AS time) TO '{part}' (FORMAT parquet)")
    proc = kchaos("analyze", str(run), "--input", "parquet")
    assert_clean_error(proc, "history.parquet", "index", "type string")


@pytest.mark.spark
def test_parquet_ints_narrower_than_the_schema_are_read(spark: Any, tmp_path: Path) -> None:
    import duckdb

    run = tmp_path / "run"
    (run / "history.parquet").mkdir(parents=True)
    (run / "history.jsonl").write_bytes(b"")
    part = run / "history.parquet" / "part-0.parquet"
    duckdb.sql(
        "COPY (SELECT 0::INTEGER AS index, 5::INTEGER AS time, '1' AS process,"
        f" 'invoke' AS type, 'send' AS f, 't' AS topic, '1-0' AS value) TO '{part}'"
        " (FORMAT parquet)"
    )
    result = run_job([run], spark=spark, write=False, prefer="parquet")
    assert result.runs[0].summary["stats"]["sends"]["invoke"] == 1


@pytest.mark.spark
def test_a_failed_query_leaves_spark_s_report_in_the_log_not_on_the_console(
    spark: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    from pyspark.sql import functions as F

    from kchaos.harness.analysis.session import log_path, spark_errors
    from kchaos.harness.errors import AnalysisError

    with pytest.raises(AnalysisError, match="Spark log"), spark_errors("the test query"):
        spark.range(1).select(F.col("no_such_column")).collect()
    out, err = capfd.readouterr()
    assert "no_such_column" not in out + err
    assert "no_such_column" in log_path().read_text()
