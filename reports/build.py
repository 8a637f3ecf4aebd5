"""Write every report of a run directory (and of a suite): the one entry point."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kchaos.harness.rundir.expect import EXIT_NOT_JUDGED, EXIT_UNEXPECTED, Outcome, evaluate
from kchaos.harness.rundir.files import write_bytes
from kchaos.harness.rundir.rundir import RunDir
from kchaos.reports import html, junit
from kchaos.reports.rundata import RunData, load_run_data
from kchaos.reports.summary import summarize


@dataclass(frozen=True)
class RunReport:
    data: RunData
    outcome: Outcome
    summary: dict[str, Any]
    paths: dict[str, str]


def with_fault_errors(outcome: Outcome, data: RunData) -> Outcome:
    """A fault that never started means the scenario did not test what it says; so does a
    step whose state trigger never held (run.json ``nemesis_errors``, phase ``trigger``:
    such a step writes no history line)."""
    failed = [f"fault {w.id} ({w.fault}) did not start: {w.error}" for w in data.faults if w.error]
    for e in data.run.nemesis_errors:
        if e.get("phase") == "trigger":
            failed.append(f"fault {e.get('id')} ({e.get('fault')}) did not start: {e.get('error')}")
    if not failed:
        return outcome
    # a definite failure: it wins over "not judged" as in evaluate()
    code = outcome.exit_code
    code = EXIT_UNEXPECTED if code == EXIT_NOT_JUDGED else max(code, EXIT_UNEXPECTED)
    return replace(
        outcome,
        expected=False,
        exit_code=code,
        reasons=(*outcome.reasons, *failed),
    )


def read_run_report(run_dir: RunDir | str | Path) -> RunReport:
    """A run's outcome and summary, its reports' paths, nothing written (a batch page
    over runs whose reports exist: ``kchaos merge``)."""
    data = load_run_data(run_dir)
    outcome = with_fault_errors(evaluate(data.expect, data.results), data)
    out = data.run_dir
    paths = {"html": out.report_html, "junit": out.junit_xml, "summary": out.summary_json}
    return RunReport(data, outcome, summarize(data, outcome), {k: str(v) for k, v in paths.items()})


def write_run_reports(run_dir: RunDir | str | Path) -> RunReport:
    """report.html, junit.xml and summary.json into ``run_dir``."""
    report = read_run_report(run_dir)
    paths = report.paths
    write_bytes(paths["html"], html.render_run(report.data, report.outcome).encode("utf-8"))
    write_bytes(paths["junit"], junit.document([junit.run_suite(report.data, report.outcome)]))
    report.data.run_dir.write_summary(report.summary)
    return report
