"""The console end of a batch of runs (suite, SRE validation, matrix, soak)."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from kchaos.reports.build import write_run_reports
from kchaos.reports.console import make_console, print_batch, print_suite
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


def test_a_console_that_is_not_a_terminal_prints_tables_and_lines_whole() -> None:
    long_name = "a-scenario-name-long-enough-that-eighty-columns-would-cut-it-" * 2
    rows = [{"scenario": long_name, "verdict": "invalid", "expected": False, "run_id": "r-1"}]
    piped = make_console(file=io.StringIO(), color_system=None)
    print_suite(rows, piped, "kchaos suite")
    piped.rule("[1/1] " + long_name)
    text = piped.file.getvalue()  # type: ignore[attr-defined]
    assert long_name in text and "r-1" in text
    rule = next(line for line in text.splitlines() if "[1/1]" in line)
    assert long_name in rule and len(rule) < len(long_name) + 20  # not 100 000 wide
    # the same table on a plain 80-column console is cut: the test above can fail
    narrow = Console(file=io.StringIO(), width=80, color_system=None)
    print_suite(rows, narrow, "kchaos suite")
    assert long_name not in narrow.file.getvalue()  # type: ignore[attr-defined]


def test_kchaos_scenarios_in_a_pipe_prints_each_summary_and_ticket_whole() -> None:
    from click.testing import CliRunner

    from kchaos.cli.scenario import scenarios_cmd
    from kchaos.harness.scenario import library

    result = CliRunner().invoke(scenarios_cmd, ["--tag", "known-bug"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    scenarios = library.load_all(library.names_with_tag("known-bug"))
    longest = max(scenarios, key=lambda sc: len(sc.summary))
    assert len(longest.summary) > 80  # a summary a cut at 80 or 100 columns would lose
    for sc in scenarios:
        assert sc.ticket is not None
        line = next(x for x in lines if x.startswith(sc.name + " "))
        assert line.endswith(sc.summary)
        # both sides are expected of a ticket's scenario: no "negative control" label
        assert "  known bug  " in line and "negative control" not in line
        assert any(f"{sc.ticket.id}: affects" in x and sc.ticket.title in x for x in lines)
