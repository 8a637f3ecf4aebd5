"""The transaction timeout ``hanging-transaction`` is judged by is the one the producers
ran with (history format 1.3): the scenario's ``workload.transactions`` as the runner
writes it into run.json, not a producer key the runner never writes."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from txn_hist import TH

from kchaos.harness.analysis.runs import txn_timeout_ms
from kchaos.harness.checker import RunSettings, check_run
from kchaos.harness.errors import HistoryError
from kchaos.harness.run.record import initial
from kchaos.harness.scenario.library import load as load_library
from kchaos.harness.scenario.plan import build as build_plan


def run_json_of(name: str, **txn_changes: object) -> dict:
    """run.json as the runner writes it at start for library scenario ``name``."""
    sc = load_library(name)
    if txn_changes:
        tx = replace(sc.workload.transactions, **txn_changes)
        sc = replace(sc, workload=replace(sc.workload, transactions=tx))
    return json.loads(json.dumps(initial(sc, "r1", "4.4.0", None)))


def stuck(h: TH, wait_s: float) -> None:
    """A committed pair, then a drain whose t/0 stable offset stays below its high
    watermark ``wait_s`` seconds after the producers finished."""
    h.init(1, "tid-a")
    h.begin(1, "t4-1", "tid-a", ("t", "a-0"), ("u", "a-1"))
    h.end(1, "t4-1", "ok", ("t", 0, 0, "a-0"), ("u", 0, 0, "a-1"))
    h.wait(wait_s)
    h.drain_tp("t", 0, [(0, "a-0")], 3, stable=1)
    h.drain_tp("u", 0, [(0, "a-1")], 2)


def test_the_library_txn_scenario_is_judged_by_its_own_10_s_timeout() -> None:
    data = run_json_of("txn-smoke")
    seconds = data["scenario"]["workload"]["transactions"]["timeout"]
    settings = RunSettings.from_run_json(data)
    assert settings.transaction_timeout_ms == round(seconds * 1000) == 10_000


@pytest.mark.parametrize(("wait_s", "hangs"), [(12, True), (8, False)])
def test_a_drain_stuck_past_the_producers_timeout_hangs_and_one_within_it_does_not(
    tmp_path: Path, wait_s: float, hangs: bool
) -> None:
    h = TH()
    stuck(h, wait_s)
    h.write(tmp_path / "history.jsonl")
    (tmp_path / "run.json").write_text(json.dumps(run_json_of("txn-smoke")))
    r = check_run(tmp_path, write=False)
    assert r.stats["transactions"]["transaction_timeout_ms"] == 10_000
    assert ("hanging-transaction" in r.anomalies) is hangs
    # the Spark job reads the same number
    assert txn_timeout_ms(tmp_path) == 10_000


def test_a_raw_producer_config_wins_over_timeout_in_the_workers_and_the_checker() -> None:
    configs = {"transaction.timeout.ms": "25000"}
    data = run_json_of("txn-smoke", configs=configs)
    assert RunSettings.from_run_json(data).transaction_timeout_ms == 25_000
    sc = load_library("txn-smoke")
    tx = replace(sc.workload.transactions, configs=configs)
    sc = replace(sc, workload=replace(sc.workload, transactions=tx))
    assert build_plan(sc).workload.transactions.timeout_ms == 25_000


def test_runs_before_the_scenario_section_keep_their_top_level_transactions() -> None:
    old = {"transactions": {"timeout": 7.5}}
    assert RunSettings.from_run_json(old).transaction_timeout_ms == 7_500


def test_a_timeout_that_is_not_a_positive_number_is_bad_input() -> None:
    with pytest.raises(HistoryError) as err:
        RunSettings.from_run_json({"scenario": {"workload": {"transactions": {"timeout": "x"}}}})
    assert err.value.exit_code == 3 and err.value.field == "scenario.workload.transactions.timeout"
