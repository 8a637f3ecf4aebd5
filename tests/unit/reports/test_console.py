"""The console end of a batch of runs (suite, SRE validation, matrix, soak)."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from kchaos.reports.build import write_run_reports
from kchaos.reports.console import print_batch
from kchaos.reports.suite import SuiteFailure


def test_a_batch_prints_a_row_per_report_and_an_error_row_per_failure(lost_run: Path) -> None:
    report = write_run_reports(lost_run)  # scenario handmade, Kafka 4.4.0, seed 3, invalid
    failure = SuiteFailure("broken", "cluster did not start", kafka_version="3.5.2", seed=2)
    console = Console(file=io.StringIO(), width=200, color_system=None, record=True)
    print_batch(
        console,
        "kchaos matrix handmade+broken",
        [report],
        [failure],
        {"html": "OUT/report.html", "junit": "OUT/junit.xml"},
        page="matrix report",
        label=lambda s: f"{s['scenario']} {s.get('kafka_version')} seed {s.get('seed')}",
        notes=["a note under the table"],
    )
    text = console.export_text()
    rows = [line.split("│")[1:-1] for line in text.splitlines()]
    cells = [[c.strip() for c in row] for row in rows if row]
    assert cells == [  # the table's body (its head is drawn with other lines)
        [
            "handmade 4.4.0 seed 3",
            "invalid",
            "duplicate 1, lost-write 1, offline 1",
            "FAIL",
            "run-lost",
        ],
        ["broken 3.5.2 seed 2", "error", "-", "FAIL", ""],
    ]
    assert text.splitlines()[-3:] == [
        "a note under the table",
        "matrix report: OUT/report.html",
        "junit: OUT/junit.xml",
    ]


def test_a_plain_suite_names_rows_by_scenario(lost_run: Path) -> None:
    console = Console(file=io.StringIO(), width=200, color_system=None, record=True)
    paths = {"html": "OUT/report.html", "junit": "OUT/junit.xml"}
    print_batch(console, "kchaos suite s", [write_run_reports(lost_run)], [], paths)
    text = console.export_text()
    assert "│ handmade │ invalid" in text
    assert text.splitlines()[-2:] == ["suite report: OUT/report.html", "junit: OUT/junit.xml"]
