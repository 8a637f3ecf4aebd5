"""The report's Prometheus section: series scraped during the run (RUN_DIR/prometheus.json).

The file's format and reader are :mod:`kchaos.harness.rundir.prometheus`'s (written by
:mod:`kchaos.harness.run.prometheus` when the run had a Prometheus server). One figure
per series ``name``, one line per label set.
"""

from __future__ import annotations

from html import escape
from typing import Any

import plotly.graph_objects as go

from kchaos.harness.rundir.names import PROMETHEUS_JSON
from kchaos.harness.rundir.rundir import RunDir
from kchaos.reports import plots
from kchaos.reports.rundata import RunData


def load(run_dir: RunDir) -> dict[str, Any] | None:
    """prometheus.json of a run (:meth:`RunDir.load_prometheus`)."""
    return run_dir.load_prometheus()


def _label(labels: dict[str, Any]) -> str:
    if "node" in labels:
        return f"broker {labels['node']}"
    if len(labels) == 1:
        return str(next(iter(labels.values())))
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or "all"


def figures(doc: dict[str, Any], data: RunData) -> list[tuple[str, go.Figure]]:
    """(name, figure) per series name, in the file's order."""
    by_name: dict[str, list[dict[str, Any]]] = {}
    for s in doc.get("series") or ():
        if isinstance(s, dict) and s.get("name"):
            by_name.setdefault(str(s["name"]), []).append(s)
    out = []
    for name, group in by_name.items():
        fig = go.Figure()
        lines = [(_label(s.get("labels") or {}), s.get("points") or []) for s in group]
        plots.step_lines(fig, sorted(lines, key=lambda line: line[0]))
        plots.shade_faults(fig, data)
        first = group[0]
        out.append(
            (name, plots._layout(fig, str(first.get("title", name)), str(first.get("unit", "")),
                                data.end))
        )  # fmt: skip
    return out


def section(data: RunData, figure_div: Any) -> str:
    """The HTML section ('' when the run had no Prometheus server)."""
    doc = load(data.run_dir)
    if doc is None:
        return ""
    parts = [
        "<h2>Prometheus (scraped during the run)</h2>",
        f"<p class='muted'>From the run's Prometheus server, stored in "
        f"<a href='{PROMETHEUS_JSON}'>{PROMETHEUS_JSON}</a>.</p>",
    ]
    for name, fig in figures(doc, data):
        parts.append(figure_div(fig, f"prometheus-{name}"))
    if not doc.get("series"):
        parts.append("<p class='muted'>No series came back from the server.</p>")
    for err in doc.get("errors") or ():
        parts.append(f"<p class='muted'>query failed: {escape(str(err))}</p>")
    return "\n".join(parts)
