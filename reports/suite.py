"""One page, one junit.xml and one summary.json over all runs of a suite.

With ``--broker-config`` the page is an SRE's pass/fail matrix: one row per scenario,
one column per check (anomaly families found or required, SLO thresholds, the outcome).
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

import orjson
import plotly.graph_objects as go

from reports import html, junit
from reports.build import RunReport


@dataclass(frozen=True)
class SuiteFailure:
    """A scenario that did not produce a run directory (the cluster failed, bad input...)."""

    scenario: str
    error: str
    run_dir: str | None = None


def _cell(ok: bool | None, text: str) -> tuple[str, str]:
    if ok is None:
        return text, ""
    return text, "ok" if ok else "bad"


def matrix(reports: Sequence[RunReport], failures: Sequence[SuiteFailure], out_dir: Path) -> str:
    kinds = sorted(
        {k for r in reports for k in r.summary["anomalies"]}
        | {k for r in reports for k in r.data.expect.get("anomalies") or ()}
    )
    slos = sorted({k for r in reports for k in r.summary["slo"]})
    headers = ["scenario", "outcome", "verdict", *kinds, *(f"SLO {s}" for s in slos), "report"]
    rows = []
    for r in reports:
        s = r.summary
        required = set(r.data.expect.get("anomalies") or ())
        allowed = set(r.data.expect.get("allowed") or ()) | {"offline"}
        cells = [
            (escape(s["scenario"]), ""),
            _cell(s["expected"], "PASS" if s["expected"] else "FAIL"),
            (escape(s["verdict"]), ""),
        ]
        for kind in kinds:
            n = s["anomalies"].get(kind, 0)
            if kind in required:
                cells.append(_cell(n > 0, f"{n} (required)"))
            elif (
                n and kind not in allowed and r.data.expect.get("valid", True) not in (None, "any")
            ):
                cells.append(_cell(False, str(n)))
            else:
                cells.append(_cell(None if n else True, str(n)))
        for name in slos:
            passed = s["slo"].get(name)
            cells.append(_cell(passed, "-" if passed is None else ("pass" if passed else "FAIL")))
        rel = os.path.relpath(r.paths["html"], out_dir)
        cells.append((f"<a href='{escape(rel)}'>{escape(s['run_id'])}</a>", ""))
        rows.append(cells)
    for f in failures:
        blanks = [("", "")] * (len(headers) - 3)
        rows.append([(escape(f.scenario), ""), ("ERROR", "bad"), (escape(f.error), "bad"), *blanks])
    body = []
    for cells in rows:
        tds = "".join(f"<td class='{c}'>{t}</td>" if c else f"<td>{t}</td>" for t, c in cells)
        body.append(f"<tr>{tds}</tr>")
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def counts_figure(reports: Sequence[RunReport]) -> go.Figure:
    kinds = sorted({k for r in reports for k in r.summary["anomalies"]})
    names = [r.summary["scenario"] for r in reports]
    fig = go.Figure()
    for kind in kinds:
        fig.add_trace(
            go.Bar(name=kind, x=names, y=[r.summary["anomalies"].get(kind, 0) for r in reports])
        )
    fig.update_layout(
        barmode="group",
        title={"text": "Anomalies per scenario", "x": 0.01},
        height=360,
        template="plotly_white",
        yaxis={"title": "count"},
    )
    return fig


def write_suite_reports(
    out_dir: Path,
    reports: Sequence[RunReport],
    failures: Sequence[SuiteFailure] = (),
    *,
    title: str = "kchaos suite",
    broker_config: str | None = None,
) -> dict[str, str]:
    out_dir.mkdir(parents=True, exist_ok=True)
    passed = sum(1 for r in reports if r.outcome.expected)
    total = len(reports) + len(failures)
    heading = f"{title}: {passed}/{total} scenarios ended as expected"
    parts = [f"<h1>{escape(heading)}</h1>"]
    if broker_config:
        parts.append(
            f"<p>SRE config validation: every scenario ran with the broker config "
            f"<code>{escape(broker_config)}</code> merged over its own server properties, and "
            "PASS means the run was valid (no acknowledged write lost, no invalid read, SLOs "
            "met) under that configuration; negative controls included.</p>"
        )
    cls = "ok" if passed == total else "bad"
    parts.append(f"<div class='banner {cls}'>{escape(heading)}</div>")
    parts.append(matrix(reports, failures, out_dir))
    if reports:
        parts.append(html.figure_div(counts_figure(reports), "suite-anomalies"))
    for r in reports:
        if r.outcome.reasons:
            reasons = "; ".join(r.outcome.reasons)
            parts.append(f"<p><b>{escape(r.summary['scenario'])}</b>: {escape(reasons)}</p>")
    paths = {
        "html": out_dir / "report.html",
        "junit": out_dir / "junit.xml",
        "summary": out_dir / "summary.json",
    }
    paths["html"].write_text(html.page(title, "\n".join(parts)), encoding="utf-8")
    suites = [junit.run_suite(r.data, r.outcome) for r in reports]
    for f in failures:
        s = ET.Element(
            "testsuite", name=f"kchaos.{f.scenario}", tests="1", failures="0", errors="1", time="0"
        )
        case = ET.SubElement(s, "testcase", classname=f"kchaos.{f.scenario}", name="run")
        ET.SubElement(case, "error", message=f.error, type="kchaos").text = f.error
        suites.append(s)
    paths["junit"].write_bytes(junit.document(suites, name=title))
    summary: dict[str, Any] = {
        "title": title,
        "broker_config": broker_config,
        "passed": passed,
        "total": total,
        "runs": [{**r.summary, "report": r.paths["html"]} for r in reports],
        "failures": [
            {"scenario": f.scenario, "error": f.error, "run_dir": f.run_dir} for f in failures
        ],
    }
    paths["summary"].write_bytes(orjson.dumps(summary, option=orjson.OPT_INDENT_2))
    return {k: str(v) for k, v in paths.items()}
