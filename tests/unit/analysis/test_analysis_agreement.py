"""Agreement: the Spark job's data anomaly counts equal the checker's, on every history.

All cases are analysed by the test session's ONE run_job call (conftest.py ``one_job``: one
session, all runs unioned), as the CLI does with many run directories; each test then
looks at its runs.
"""

from __future__ import annotations

from typing import Any

import pytest

from kchaos.harness.analysis.job import run_job
from kchaos.harness.checker import check_history
from kchaos.harness.errors import HistoryError

from corpus import (  # isort: skip
    data_counts,
)
from hist import near_misses  # isort: skip

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def analysed(one_job: Any) -> dict[str, Any]:
    cases = one_job.cases
    return {"cases": cases, "runs": {c.name: one_job.of(c.run_dir) for c in cases}}


def _spark_counts(analysed: dict[str, Any], name: str) -> dict[str, int]:
    return data_counts(analysed["runs"][name].summary["anomalies"])


def test_each_case_gets_the_counts_it_was_built_with(analysed: dict[str, Any]) -> None:
    wrong = {}
    for case in analysed["cases"]:
        if case.expected is None:
            continue
        got = _spark_counts(analysed, case.name)
        if got != case.expected:
            wrong[case.name] = (got, case.expected)
        summary = analysed["runs"][case.name].summary
        if case.expected_valid is not None and summary["valid"] != case.expected_valid:
            wrong[case.name + ":valid"] = (summary["valid"], case.expected_valid)
    assert not wrong


def test_spark_counts_equal_the_checkers_on_every_history(analysed: dict[str, Any]) -> None:
    compared = 0
    wrong = {}
    for case in analysed["cases"]:
        try:
            results = check_history(case.run_dir / "history.jsonl")
        except HistoryError:
            continue  # bad-input histories of the checker tests: not comparable
        compared += 1
        checker = data_counts(results.anomalies)
        got = _spark_counts(analysed, case.name)
        if got != checker:
            wrong[case.name] = {"spark": got, "checker": checker}
    assert compared >= 20
    assert not wrong


def test_checker_test_histories_were_captured(analysed: dict[str, Any]) -> None:
    captured = [c for c in analysed["cases"] if c.name.startswith("checker:")]
    assert len(captured) >= 15
    assert any(c.name.startswith("checker:txn13-") for c in captured)  # format 1.3's
    assert any(c.name == "txn-v13" for c in analysed["cases"])


def test_every_kind_examples_name_value_position_and_line(analysed: dict[str, Any]) -> None:
    summary = analysed["runs"]["hand-every-kind"].summary
    lost = summary["anomalies"]["lost-write"]["examples"][0]
    assert (lost["value"], lost["partition"], lost["offset"]) == ("v6", 0, 2)
    assert lost["ok_index"] == lost["index"] and lost["high_watermark"] == 5
    uncommitted = {e["value"] for e in summary["anomalies"]["uncommitted-read"]["examples"]}
    assert uncommitted == {"v3", "vX"}
    assert summary["anomalies"]["duplicate"]["examples"][0]["value"] == "v1"
    assert summary["anomalies"]["unseen"]["examples"][0]["value"] == "v5"
    stats = summary["stats"]
    assert stats["sends"]["ok"] == 5 and stats["sends"]["in_flight"] == 1
    assert stats["records_polled"] == 5 and stats["records_drained"] == 4
    assert stats["partitions_drained"] == 1 and stats["faults"] == 1


def test_torn_last_line_is_ignored_and_reported(analysed: dict[str, Any]) -> None:
    summary = analysed["runs"]["hand-torn"].summary
    assert summary["stats"]["torn_last_line"] == len(near_misses().events) + 1
    assert summary["valid"] is True


def test_windows_split_sends_by_fault(analysed: dict[str, Any]) -> None:
    windows = analysed["runs"]["hand-every-kind"].windows
    assert [w["label"] for w in windows] == ["no-fault", "pause", "no-fault"]
    before, during, after = windows
    assert (before["ok"], before["fail"], before["info"]) == (2, 0, 0)
    assert (during["ok"], during["fail"], during["info"], during["lost"]) == (2, 1, 1, 1)
    assert (after["ok"], after["in_flight"]) == (1, 1)
    assert during["latency_p50_ms"] == pytest.approx(1.0)
    assert during["throughput_ok_per_s"] > 0


def test_second_stage_is_the_same_without_broadcasts(
    analysed: dict[str, Any], spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second stage broadcasts the few values read outside their acknowledged
    partition (and re-reads theirs) when they are few, and joins without broadcasting
    otherwise: both ways give the same counts and examples of every kind."""
    from kchaos.harness.analysis import anomalies

    monkeypatch.setattr(anomalies, "BROADCAST_ROWS", 0)
    names = ["hand-every-kind", "gen-all-data", "gen-inconsistent-offset", "gen-duplicate"]
    cases = [c for c in analysed["cases"] if c.name in names]
    again = run_job([c.run_dir for c in cases], spark=spark, write=False)
    compared = 0
    for rs in again.runs:
        name = next(c.name for c in cases if c.run_dir.resolve() == rs.run.path)
        before = analysed["runs"][name].summary["anomalies"]
        assert rs.summary["anomalies"] == before
        compared += "duplicate" in before
    assert compared >= 2
