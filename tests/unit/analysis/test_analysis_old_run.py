"""``kchaos analyze`` on a run directory written by main before issues 22 and 23
(tests/fixtures/README.md): the Spark job counts what the checker counts, and what the
old run's own results.json recorded.

The old run's consumer group commits its offsets: an ``ok commit`` line carries
``offsets`` as a list of ``[topic, partition, offset]`` (workloads/consumer.py), where a
txn line has an object. Until 2026-11-26 the analysis read every line's ``offsets`` as
the object, and stopped at the first commit ("history.jsonl:900: offsets: expected
dict"). Both readers are tried: DuckDB's copy (the history as written) and Spark's own
JSON reader (a torn last line makes DuckDB refuse the history).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kchaos.harness.analysis.job import run_job
from kchaos.harness.checker import check_history
from kchaos.harness.rundir.rundir import RunDir

from corpus import data_counts  # isort: skip

pytestmark = pytest.mark.spark

TORN = b'{"index":7728,"time":33146917984,"process":1,"ty'


@pytest.mark.parametrize("reader", ["duckdb", "spark-json"])
def test_analyze_counts_what_check_and_the_old_run_counted(
    spark: Any, old_run: Path, reader: str
) -> None:
    rd = RunDir(old_run)
    recorded = json.loads(rd.results.read_text(encoding="utf-8"))
    history = recorded["stats"]["history"]
    if reader == "spark-json":
        with rd.history.open("ab") as fh:
            fh.write(TORN)
    checked = check_history(rd.history)

    result = run_job([old_run], spark=spark, write=False)

    summary = result.runs[0].summary
    stats = summary["stats"]
    assert stats["input"] == "jsonl"
    assert stats["torn_last_line"] == (history["lines"] + 1 if reader == "spark-json" else None)
    assert stats["events"] == history["lines"]  # the commit lines are events too
    counts = data_counts(summary["anomalies"])
    assert counts == data_counts(checked.anomalies)
    assert counts == data_counts(recorded["anomalies"])
    assert summary["valid"] == recorded["valid"]
    sends = stats["sends"]
    assert (sends["invoke"], sends["ok"], sends["fail"], sends["info"]) == (
        history["send"],
        history["ok"],
        history["fail"],
        history["info"],
    )
    assert (stats["polls"], stats["records_drained"]) == (history["poll"], history["drained"])
