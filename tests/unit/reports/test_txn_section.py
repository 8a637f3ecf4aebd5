"""The run page's transactions section, from a hand-written format 1.2 history."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from pathlib import Path

from rich.console import Console

from kchaos.harness.checker import check_run
from kchaos.harness.rundir.names import HISTORY_JSONL
from kchaos.reports.build import write_run_reports
from kchaos.reports.console import print_run
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


def test_the_run_summary_counts_transactions(tmp_path: Path) -> None:
    """A transactional run's sends are inside its transactions: summary.json, the run
    page's facts and the console line count the transactions by outcome (a new user saw
    "sends ok 0" and nothing else for txn-smoke)."""
    shutil.copy(FIXTURES / "many.jsonl", tmp_path / HISTORY_JSONL)
    check_run(tmp_path)
    lines = [json.loads(ln) for ln in (tmp_path / HISTORY_JSONL).read_text().splitlines()]
    want = Counter(e["type"] for e in lines if e["f"] == "txn" and e["type"] != "invoke")
    reports = write_run_reports(tmp_path)
    summary = json.loads(Path(reports.paths["summary"]).read_text())
    assert summary["transactions"] == {k: want[k] for k in ("ok", "fail", "info")}
    assert want["ok"] and want["fail"]
    page = Path(reports.paths["html"]).read_text()
    assert f"{want['ok']} ok, {want['fail']} fail, {want['info']} info" in page
    # the fixture has plain sends too: both send plots are there
    assert any(e["f"] == "send" for e in lines)
    assert 'id="throughput"' in page and "No plain sends in this run" not in page
    console = Console(width=400, record=True)
    print_run(summary, {}, console)
    text = console.export_text()
    assert re.search(rf"transactions ok {want['ok']} / fail {want['fail']} / info", text)


def test_a_run_of_transactions_only_has_no_empty_send_plots(tmp_path: Path) -> None:
    text = (FIXTURES / "many.jsonl").read_text().splitlines(keepends=True)
    kept = [ln for ln in text if json.loads(ln)["f"] != "send"]
    assert len(kept) < len(text)
    (tmp_path / HISTORY_JSONL).write_text("".join(kept))
    page = Path(write_run_reports(tmp_path).paths["html"]).read_text()
    assert 'id="throughput"' not in page and 'id="latency"' not in page
    assert "No plain sends in this run" in page and "<h2>Transactions</h2>" in page


def test_a_plain_run_has_no_transactions_section(tmp_path: Path) -> None:
    from sample_runs import VALID, make_run

    make_run(tmp_path, results=VALID)
    reports = write_run_reports(tmp_path)
    page = Path(reports.paths["html"]).read_text()
    assert "<h2>Transactions</h2>" not in page and "<td>transactions</td>" not in page
    assert "transactions" not in json.loads(Path(reports.paths["summary"]).read_text())
