"""The attempts section of `kchaos shrink`'s page (placed above the suite table by
:func:`kchaos.reports.suite.write_suite_reports`): the original and the shrunk schedule,
then one row per run with its phase, schedule, verdict and link."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from html import escape
from pathlib import Path
from typing import Any


def _schedule(steps: Sequence[str], describe: Callable[[str], str]) -> str:
    return "<br>".join(escape(describe(s)) for s in steps) or "(none)"


def attempts_section(
    attempts: Sequence[Any],
    original: Sequence[str],
    shrunk: Sequence[str],
    kinds: Sequence[str],
    out_dir: Path,
    describe: Callable[[str], str],
    repeats: int = 1,
) -> str:
    """HTML: the schedules before and after, and every attempt (kchaos.harness.run.shrink
    Attempt: number, phase, steps, reproduced, kinds, run_dir, error, report)."""
    parts = [
        f"<p>Target: an anomaly of kind <b>{escape(', '.join(kinds))}</b>. A run that shows "
        "one reproduces the failure (PASS in the table below means reproduced); a candidate "
        f"counts as not reproducing only after {repeats} clean run(s) (--repeat).</p>",
        "<table><tr><th>original schedule</th><th>shrunk schedule</th></tr>"
        f"<tr><td>{_schedule(original, describe)}</td>"
        f"<td class='ok'>{_schedule(shrunk, describe)}</td></tr></table>",
        "<h2>Attempts</h2>",
    ]
    head = "".join(
        f"<th>{h}</th>" for h in ("#", "phase", "schedule", "reproduced", "anomalies", "run")
    )
    rows = []
    for a in attempts:
        if a.reproduced is None:
            verdict, cls = f"error: {a.error or 'no verdict'}", "bad"
        else:
            verdict, cls = ("yes", "ok") if a.reproduced else ("no", "")
        found = ", ".join(f"{k} {n}" for k, n in sorted(a.kinds.items()) if n) or "-"
        link = "-"
        if a.report is not None:
            rel = os.path.relpath(a.report.paths["html"], out_dir)
            link = f"<a href='{escape(rel)}'>{escape(Path(a.run_dir or '').name)}</a>"
        elif a.run_dir:
            link = escape(os.path.relpath(a.run_dir, out_dir))
        cells = [
            f"<td>{a.number}</td>",
            f"<td>{escape(a.phase)}</td>",
            f"<td>{_schedule(a.steps, describe)}</td>",
            f"<td class='{cls}'>{escape(verdict)}</td>" if cls else f"<td>{escape(verdict)}</td>",
            f"<td>{escape(found)}</td>",
            f"<td>{link}</td>",
        ]
        rows.append(f"<tr>{''.join(cells)}</tr>")
    parts.append(f"<table><tr>{head}</tr>{''.join(rows)}</table>")
    return "\n".join(parts)
