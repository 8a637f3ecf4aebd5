"""A step whose state trigger never held fails the run's expectation (it wrote no line)."""

from __future__ import annotations

import json
from pathlib import Path

from sample_runs import VALID, make_run

from kchaos.reports.build import write_run_reports


def test_a_trigger_that_never_held_makes_the_run_unexpected(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path / "r", results=VALID)
    assert write_run_reports(run_dir).outcome.expected
    run = json.loads((run_dir / "run.json").read_text())
    run["nemesis_errors"] = [
        {
            "id": "f-2",
            "fault": "kill",
            "phase": "trigger",
            "error": "f-2 kill: trigger timed out after 60s waiting for broker 2 in the ISR",
        }
    ]
    (run_dir / "run.json").write_text(json.dumps(run))
    report = write_run_reports(run_dir)
    assert not report.outcome.expected and report.outcome.exit_code >= 1
    assert any(
        "f-2 (kill) did not start: f-2 kill: trigger timed out" in r for r in report.outcome.reasons
    )
