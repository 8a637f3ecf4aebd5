"""``kchaos analyze`` on a run directory written by main before issues 22 and 23
(tests/fixtures/README.md): the Spark job counts what the checker counts, and what the
old run's own results.json recorded.

It fails today, and is marked so: the old run's consumer group commits its offsets, and
an ``ok commit`` line carries ``offsets`` as a list of ``[topic, partition, offset]``
(workloads/consumer.py), where the analysis schema since format 1.2 reads ``offsets`` as
a transaction's object (``{"group": ..., "positions": ...}``). Spark's reader takes the
line for a bad one and the job stops with "history.jsonl:900: offsets: expected dict";
DuckDB's strict read refuses the same lines, so no Parquet copy is made of such a run
either. Strict: once the analysis reads these lines, the mark must go.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kchaos.harness.analysis.job import run_job
from kchaos.harness.checker import check_history
from kchaos.harness.errors import HistoryError
from kchaos.harness.rundir.rundir import RunDir

from corpus import data_counts  # isort: skip

pytestmark = pytest.mark.spark


@pytest.mark.xfail(
    raises=HistoryError,
    strict=True,
    reason="a consumer's `ok commit` line (offsets as a list) is read as a bad txn line",
)
def test_analyze_counts_what_check_and_the_old_run_counted(spark: Any, old_run: Path) -> None:
    rd = RunDir(old_run)
    recorded = json.loads(rd.results.read_text(encoding="utf-8"))
    checked = check_history(rd.history)

    result = run_job([old_run], spark=spark, write=False)

    summary = result.runs[0].summary
    counts = data_counts(summary["anomalies"])
    assert counts == data_counts(checked.anomalies)
    assert counts == data_counts(recorded["anomalies"])
    assert summary["valid"] == recorded["valid"]
    sends = summary["stats"]["sends"]
    history = recorded["stats"]["history"]
    assert (sends["invoke"], sends["ok"], sends["fail"], sends["info"]) == (
        history["send"],
        history["ok"],
        history["fail"],
        history["info"],
    )
