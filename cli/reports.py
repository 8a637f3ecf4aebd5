"""``kchaos report RUN_DIR...``: (re)write the reports of stored runs."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console

from kchaos.harness.errors import HistoryError
from kchaos.harness.rundir.names import RESULTS_JSON
from kchaos.harness.rundir.rundir import RunDir
from kchaos.reports.build import RunReport, write_run_reports
from kchaos.reports.console import make_console, print_batch, print_run
from kchaos.reports.suite import write_suite_reports


def ensure_results(rd: RunDir, console: Console) -> None:
    """Judge the history first when results.json is missing."""
    if rd.results.is_file() or not rd.history.is_file():
        return
    from kchaos.harness.checker import check_run

    console.print(f"{rd}: no {RESULTS_JSON} yet, running the checker")
    check_run(rd)


@click.command("report")
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    help="Also write one combined page over all RUN_DIRS into this directory.",
)
@click.option("--title", default="kchaos runs", show_default=True, help="Combined page title.")
def report_cmd(run_dirs: tuple[Path, ...], out: Path | None, title: str) -> int:
    """Write report.html, junit.xml and summary.json of each RUN_DIR.

    Exit code: 0 when every run ended as its scenario expects, 1 when one did not,
    2 when a verdict is unknown where a definite one was expected, 3 on unreadable input,
    5 when a kind the expectation needs was not judged (the highest of the runs' codes).
    6 when a fault listed in `expect.effects` did not show its effect (not exercised).
    """
    console = make_console(stderr=False)
    reports: list[RunReport] = []
    for run_dir in run_dirs:
        if not run_dir.is_dir():
            raise HistoryError(
                "not a directory" if run_dir.exists() else "no such run directory",
                file=str(run_dir),
            )
        rd = RunDir(run_dir)  # the one this command hands down
        ensure_results(rd, console)
        rep = write_run_reports(rd)
        print_run(rep.summary, rep.paths, console)
        reports.append(rep)
    if out is not None:
        paths = write_suite_reports(out, reports, title=title)
        print_batch(console, title, reports, [], paths, page="combined report")
    return max(r.outcome.exit_code for r in reports)
