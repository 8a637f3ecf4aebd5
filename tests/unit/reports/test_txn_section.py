"""The run page's transactions section, from a hand-written format 1.2 history."""

from __future__ import annotations

import shutil
from pathlib import Path

from kchaos.harness.checker import check_run
from kchaos.harness.rundir.names import HISTORY_JSONL
from kchaos.reports.build import write_run_reports
from kchaos.reports.rundata import load_run_data

FIXTURES = Path(__file__).parents[1] / "fixtures" / "txn"


def test_outcomes_per_transactional_id_and_the_drains_stable_offsets(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "many.jsonl", tmp_path / HISTORY_JSONL)
    check_run(tmp_path)
    data = load_run_data(tmp_path)
    # every completed transaction lands under the id its invoke (or txn-init) named
    assert data.txn_outcomes and "?" not in data.txn_outcomes
    total = sum(len(v) for v in data.txn_outcomes.values())
    lines = (tmp_path / HISTORY_JSONL).read_text().splitlines()
    completions = [ln for ln in lines if '"f":"txn"' in ln and '"type":"invoke"' not in ln]
    assert total == len(completions)
    page = Path(write_run_reports(tmp_path).paths["html"]).read_text()
    assert "<h2>Transactions</h2>" in page and 'id="txns"' in page
    for tid in data.txn_outcomes:
        assert f"<td>{tid}</td>" in page
    # a partition whose stable offset stayed behind is shown with its gap, in red
    stuck = [p for p, (hwm, lso) in data.drain_lso.items() if lso < hwm]
    assert stuck, "the fixture has a hanging transaction"
    assert f"<tr class='bad'><td>{stuck[0]}</td>" in page


def test_a_plain_run_has_no_transactions_section(tmp_path: Path) -> None:
    from kchaos.reports.sample import VALID, make_run

    make_run(tmp_path, results=VALID)
    page = Path(write_run_reports(tmp_path).paths["html"]).read_text()
    assert "<h2>Transactions</h2>" not in page
