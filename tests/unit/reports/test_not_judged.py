"""A run whose expectation names a kind that was not judged: every report says "not
judged", JUnit fails it, and it is never "as expected" (docs/checker.md, "Evidence")."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from rich.console import Console
from sample_runs import make_run

from kchaos.harness.checker import check_run
from kchaos.harness.rundir import RunDir
from kchaos.harness.rundir.expect import EXIT_EXPECTED, EXIT_NOT_JUDGED
from kchaos.reports.build import write_run_reports
from kchaos.reports.console import print_run
from kchaos.reports.suite import version_grid, write_suite_reports

STALL = "broker-stalled"
# the fixed side of kafka-15046-fsync-under-log-lock
FIXED = {"valid": True, "forbid": [STALL]}


def _checked(run_dir: Path, expect: dict[str, Any]) -> Path:
    """A hand-made run (history with samples, no controller.jsonl), checked."""
    make_run(run_dir, results=None, expect=expect)
    check_run(run_dir)
    return run_dir


def _cases(path: Path) -> dict[str, ET.Element]:
    return {c.get("name", ""): c for c in ET.parse(path).getroot().iter("testcase")}


def test_every_report_of_a_run_not_judged_says_so(tmp_path: Path) -> None:
    rep = write_run_reports(_checked(tmp_path / "r", FIXED))
    assert rep.outcome.label == "not judged" and rep.outcome.exit_code == EXIT_NOT_JUDGED
    summary = json.loads(RunDir(tmp_path / "r").summary_json.read_text())
    assert summary["outcome"] == "not judged" and summary["expected"] is False
    assert summary["exit_code"] == EXIT_NOT_JUDGED
    assert STALL in summary["unjudged"]
    cases = _cases(Path(rep.paths["junit"]))
    failure = cases[f"anomaly {STALL}"].find("failure")
    assert failure is not None and failure.get("message", "").startswith("not judged:")
    expectation = cases["expectation"].find("failure")
    assert expectation is not None and expectation.get("message", "").startswith("not judged:")
    page = Path(rep.paths["html"]).read_text()
    assert "Run ended not judged" in page and f"not judged: {STALL} (" in page
    console = Console(record=True, width=200)
    print_run(rep.summary, rep.paths, console)
    text = console.export_text()
    assert "not judged" in text and f"not judged: {STALL}" in text


def test_the_same_run_without_the_kind_in_its_expectation_is_as_expected(tmp_path: Path) -> None:
    rep = write_run_reports(_checked(tmp_path / "r", {"valid": True}))
    assert rep.outcome.expected and rep.outcome.exit_code == EXIT_EXPECTED
    assert rep.summary["outcome"] == "as expected"
    case = _cases(Path(rep.paths["junit"]))[f"anomaly {STALL}"]
    assert case.find("failure") is None  # unjudged, and the expectation does not need it
    out = case.find("system-out")
    assert out is not None and (out.text or "").startswith("not judged:")


def test_a_suite_counts_a_run_not_judged_apart(tmp_path: Path) -> None:
    blind = write_run_reports(_checked(tmp_path / "blind", FIXED))
    fine = write_run_reports(_checked(tmp_path / "fine", {"valid": True}))
    paths = write_suite_reports(tmp_path / "suite", [blind, fine])
    page = Path(paths["html"]).read_text()
    assert "1/2 scenarios ended as expected (1 not judged" in page
    assert "NOT JUDGED" in page
    root = ET.parse(paths["junit"]).getroot()
    assert root.get("failures") == str(
        sum(1 for c in root.iter("testcase") if c.find("failure") is not None)
    )
    failed = [c for c in root.iter("testcase") if c.find("failure") is not None]
    assert {c.get("name") for c in failed} == {f"anomaly {STALL}", "expectation"}


def test_the_version_grid_shows_a_run_not_judged_in_amber(tmp_path: Path) -> None:
    blind_dir = _checked(tmp_path / "blind", FIXED)
    run = json.loads(RunDir(blind_dir).run_json.read_text())
    RunDir(blind_dir).write_run({**run, "seed": 4})  # a cell of its own
    blind = write_run_reports(blind_dir)
    fine = write_run_reports(_checked(tmp_path / "fine", {"valid": True}))
    grid = version_grid([blind, fine], [], tmp_path)
    cells = grid.split("<td")[1:]
    assert sum("NOT JUDGED" in c and c.startswith(" class='warn'") for c in cells) == 1
    assert sum("PASS" in c and c.startswith(" class='ok'") for c in cells) == 1
