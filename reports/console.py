"""The console summary printed at the end of a run and by ``kchaos report``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table


def print_run(summary: Mapping[str, Any], paths: Mapping[str, str], console: Console) -> None:
    style = "green" if summary["expected"] else "red"
    console.print(
        f"[bold]{summary['scenario']}[/] run {summary['run_id']}: verdict "
        f"[bold]{summary['verdict']}[/], [{style}]"
        f"{'as expected' if summary['expected'] else 'NOT as expected'}[/]"
    )
    for reason in summary["reasons"]:
        console.print(f"  - {reason}")
    sends = summary["sends"]
    console.print(
        f"  sends ok {sends['ok']} / fail {sends['fail']} / info {sends['info']}; "
        f"faults {summary['faults']}; offline windows {summary['offline_windows']}; "
        f"{summary['duration_s']:.1f} s of history"
    )
    if summary["anomalies"]:
        found = ", ".join(f"{k} {v}" for k, v in summary["anomalies"].items())
        console.print(f"  anomalies: {found}")
    for name, ok in summary["slo"].items():
        console.print(f"  SLO {name}: {'pass' if ok else '[red]FAIL[/]'}")
    for kind, path in paths.items():
        console.print(f"  {kind}: {path}")


def print_suite(rows: Sequence[Mapping[str, Any]], console: Console, title: str) -> None:
    table = Table(title=title)
    for col in ("scenario", "verdict", "anomalies", "outcome", "run"):
        table.add_column(col)
    for row in rows:
        found = ", ".join(f"{k} {v}" for k, v in (row.get("anomalies") or {}).items()) or "-"
        outcome = "[green]pass[/]" if row.get("expected") else "[red]FAIL[/]"
        table.add_row(
            row["scenario"], row.get("verdict", "?"), found, outcome, str(row.get("run_id", ""))
        )
    console.print(table)
