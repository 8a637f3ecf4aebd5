"""The console summary printed at the end of a run and by ``kchaos report``, and the
console every command prints to (:func:`make_console`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rich.align import AlignMethod
from rich.console import Console
from rich.markup import escape
from rich.rule import Rule
from rich.style import Style
from rich.table import Table
from rich.text import Text

from kchaos.harness.rundir.anomalies import anomaly_text

if TYPE_CHECKING:  # the console stays cheap to import: no report builder, no plotly
    from kchaos.reports.build import RunReport
    from kchaos.reports.suite import SuiteFailure


# Output that is not a terminal (a CI log, a pipe) is read as text: a width no table or
# line reaches, so rich neither cuts nor wraps anything; a rule stays about as long as
# on a terminal.
TEXT_WIDTH = 100_000
RULE_WIDTH = 100


class _TextConsole(Console):
    """A console for a log: lines and tables whole; a rule :data:`RULE_WIDTH` long."""

    def rule(
        self,
        title: str | Text = "",
        *,
        characters: str = "\u2500",
        style: str | Style = "rule.line",
        align: AlignMethod = "center",
    ) -> None:
        rule = Rule(title, characters=characters, style=style, align=align)
        # a title longer than the rule widens it rather than being cut
        self.print(
            rule,
            width=max(
                RULE_WIDTH,
                (Text.from_markup(title) if isinstance(title, str) else title).cell_len + 6,
            ),
        )


def make_console(**kwargs: Any) -> Console:
    """The rich console a command prints to (``kwargs`` as :class:`Console` takes them).
    On a terminal, rich's own; otherwise (a pipe, a CI log, click's test runner) one
    whose tables and lines are never cut to 80 columns nor wrapped."""
    console = Console(**kwargs)
    if console.is_terminal or "width" in kwargs:
        return console
    return _TextConsole(width=TEXT_WIDTH, **kwargs)


#: How the console colours an outcome label (any other: red).
STYLES = {"as expected": "green", "not judged": "yellow", "not exercised": "yellow"}


def outcome_label(summary: Mapping[str, Any]) -> str:
    """The outcome of a run's summary ("as expected", "NOT as expected", "not judged",
    "not exercised"); a summary from before the labels existed says only whether it was expected."""
    label = summary.get("outcome")
    if isinstance(label, str):
        return label
    return "as expected" if summary.get("expected") else "NOT as expected"


def print_run(summary: Mapping[str, Any], paths: Mapping[str, str], console: Console) -> None:
    label = outcome_label(summary)
    style = STYLES.get(label, "red")
    console.print(
        f"[bold]{summary['scenario']}[/] run {summary['run_id']}: verdict "
        f"[bold]{summary['verdict']}[/], [{style}]{label}[/]"
    )
    for reason in summary["reasons"]:
        console.print(f"  - {escape(reason)}")
    sends, txns = summary["sends"], summary.get("transactions")
    done = f"  sends ok {sends['ok']} / fail {sends['fail']} / info {sends['info']}; "
    if txns:  # the sends of a transaction are counted with it, not as sends
        done += f"transactions ok {txns['ok']} / fail {txns['fail']} / info {txns['info']}; "
    console.print(
        f"{done}faults {summary['faults']}; offline windows {summary['offline_windows']}; "
        f"{summary['duration_s']:.1f} s of history"
    )
    if summary["anomalies"]:
        found = anomaly_text(summary["anomalies"], summary.get("causes"))
        console.print(f"  anomalies: {escape(found)}")
    for name, ok in summary["slo"].items():
        console.print(f"  SLO {name}: {'pass' if ok else '[red]FAIL[/]'}")
    for kind, why in (summary.get("unjudged") or {}).items():
        console.print(f"  not judged: {escape(kind)} ({escape(str(why))})")
    for kind, path in paths.items():
        console.print(f"  {kind}: {path}")


def print_suite(rows: Sequence[Mapping[str, Any]], console: Console, title: str) -> None:
    table = Table(title=title)
    for col in ("scenario", "verdict", "anomalies", "outcome", "run"):
        table.add_column(col)
    for row in rows:
        found = ", ".join(f"{k} {v}" for k, v in (row.get("anomalies") or {}).items()) or "-"
        label = outcome_label(row)
        text = {"as expected": "pass", "NOT as expected": "FAIL"}.get(label, label)
        outcome = f"[{STYLES.get(label, 'red')}]{text}[/]"
        table.add_row(  # a name is text: "smoke [prod]" is not a style tag
            escape(str(row["scenario"])),
            row.get("verdict", "?"),
            found,
            outcome,
            str(row.get("run_id", "")),
        )
    console.print(table)


def scenario_label(fields: Mapping[str, Any]) -> str:
    """A batch row named by its scenario alone (``kchaos suite``)."""
    return str(fields["scenario"])


def print_batch(
    console: Console,
    title: str,
    reports: Sequence[RunReport],
    failures: Sequence[SuiteFailure],
    paths: Mapping[str, str],
    *,
    page: str = "suite report",
    label: Callable[[Mapping[str, Any]], str] = scenario_label,
    notes: Sequence[str] = (),
) -> None:
    """The end of a batch of runs (suite, SRE validation, matrix, soak) on the console.

    :func:`print_suite`'s table: a row per run report (its summary, the scenario column
    ``label(summary)``), then an ``error`` row per run that left no report
    (``label(failure.label_fields())``: the same keys, so one function names both);
    then each of ``notes`` on a line; then ``page`` with the page's path and junit.xml's
    (``paths`` as :func:`kchaos.reports.suite.write_suite_reports` returns them).
    """
    rows = [{**r.summary, "scenario": label(r.summary)} for r in reports]
    rows += [
        {"scenario": label(f.label_fields()), "verdict": "error", "expected": False, "run_id": ""}
        for f in failures
    ]
    print_suite(rows, console, title)
    for note in notes:
        console.print(note)
    console.print(f"{page}: {paths['html']}\njunit: {paths['junit']}")
