"""One page, one junit.xml and one summary.json over all runs of a suite.

One row per run, one column per check (anomaly families found or required, SLO
thresholds, the outcome). SRE validation (``kchaos suite --broker-config``) puts its
go/no-go grid of scenarios by configs (:mod:`kchaos.reports.sre`) above the same table.

``kchaos matrix`` (runs of the same scenarios on several Kafka versions and seeds) adds, per
scenario, a grid of versions by seeds (:func:`version_grid`) above the same table, which
then names each run's version and seed; junit.xml names its suites likewise.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

import plotly.graph_objects as go

from kchaos.harness.rundir.files import write_bytes
from kchaos.harness.rundir.rundir import RunDir
from kchaos.harness.rundir.tickets import (
    AFFECTED,
    NOT_AFFECTED,
    NOT_JUDGED,
    OUTSIDE_RANGE,
    Ticket,
)
from kchaos.reports import html, junit
from kchaos.reports.build import RunReport
from kchaos.reports.console import outcome_label


@dataclass(frozen=True)
class SuiteFailure:
    """A scenario that did not produce a run directory (the cluster failed, bad input...)."""

    scenario: str
    error: str
    run_dir: str | None = None
    kafka_version: str | None = None
    seed: int | None = None
    sre_config: str | None = None  # SRE validation: the label of the broker config

    def label_fields(self) -> dict[str, Any]:
        """What names the failed run, under the keys a run's summary uses for the same
        (``scenario``, ``kafka_version``, ``seed``, ``sre_config``)."""
        return {
            "scenario": self.scenario,
            "kafka_version": self.kafka_version,
            "seed": self.seed,
            "sre_config": self.sre_config,
        }


def _cell(ok: bool | None, text: str) -> tuple[str, str]:
    if ok is None:
        return text, ""
    return text, "ok" if ok else "bad"


#: A run's outcome in a suite's cells, by its label (kchaos.harness.rundir.expect).
OUTCOME_CELLS = {
    "as expected": ("PASS", "ok"),
    "NOT as expected": ("FAIL", "bad"),
    "not judged": ("NOT JUDGED", "warn"),
}


def outcome_cell(summary: Mapping[str, Any]) -> tuple[str, str]:
    """PASS, FAIL or NOT JUDGED, and its class, for one run's summary."""
    label = outcome_label(summary)
    return OUTCOME_CELLS.get(label, (label.upper(), "bad"))


def matrix(
    reports: Sequence[RunReport],
    failures: Sequence[SuiteFailure],
    out_dir: Path,
    columns: Sequence[str] = (),
) -> str:
    """The suite's table; ``columns`` ("Kafka", "seed") add the runs' version and seed."""
    kinds = sorted(
        {k for r in reports for k in r.summary["anomalies"]}
        | {k for r in reports for k in r.data.expect.get("anomalies") or ()}
    )
    slos = sorted({k for r in reports for k in r.summary["slo"]})
    varied = list(columns)
    headers = ["scenario", *varied, "outcome", "verdict", *kinds]
    headers += [*(f"SLO {s}" for s in slos), "report"]
    rows = []
    for r in reports:
        s = r.summary
        required = set(r.data.expect.get("anomalies") or ())
        allowed = set(r.data.expect.get("allowed") or ()) | {"offline"}
        cells = [
            (escape(s["scenario"]), ""),
            *((escape(str(s.get(_KEYS[v]))), "") for v in varied),
            outcome_cell(s),
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
        blanks = [("", "")] * (len(headers) - 3 - len(varied))
        extra = [(escape(str(getattr(f, _KEYS[v]))), "") for v in varied]
        rows.append(
            [(escape(f.scenario), ""), *extra, ("ERROR", "bad"), (escape(f.error), "bad"), *blanks]
        )
    body = []
    for cells in rows:
        tds = "".join(f"<td class='{c}'>{t}</td>" if c else f"<td>{t}</td>" for t, c in cells)
        body.append(f"<tr>{tds}</tr>")
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


_KEYS = {"Kafka": "kafka_version", "seed": "seed", "config": "sre_config"}


def run_label(summary: Mapping[str, Any], varied: Sequence[str]) -> str:
    """``scenario``, or ``scenario.kafka-3.5.2.seed-904`` with both columns
    (``scenario.config-prod`` with the SRE validation's config column)."""
    parts = [str(summary["scenario"])]
    if "config" in varied:
        parts.append(f"config-{summary.get('sre_config')}")
    if "Kafka" in varied:
        parts.append(f"kafka-{summary.get('kafka_version')}")
    if "seed" in varied:
        parts.append(f"seed-{summary.get('seed')}")
    return ".".join(parts)


def _anomaly_text(anomalies: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} {n}" for k, n in sorted(anomalies.items()) if n) or "no anomaly"


def version_grid(
    reports: Sequence[RunReport], failures: Sequence[SuiteFailure], out_dir: Path
) -> str:
    """Per scenario, a table of Kafka versions (rows) by seeds (columns): each cell the
    verdict and the anomaly counts, coloured by the expectation, linking to the run's
    report.html (a run that failed to produce one: ERROR and its message)."""
    cells: dict[str, dict[tuple[str, Any], tuple[str, str]]] = {}
    versions: dict[str, list[str]] = {}
    seeds: dict[str, list[Any]] = {}

    def place(scenario: str, version: str, seed: Any, cell: tuple[str, str]) -> None:
        cells.setdefault(scenario, {})[(version, seed)] = cell
        if version not in versions.setdefault(scenario, []):
            versions[scenario].append(version)
        if seed not in seeds.setdefault(scenario, []):
            seeds[scenario].append(seed)

    for r in reports:
        s = r.summary
        rel = escape(os.path.relpath(r.paths["html"], out_dir))
        outcome, cls = outcome_cell(s)
        text = (
            f"<a href='{rel}'><b>{escape(str(s['verdict']))}</b></a> {outcome}<br>"
            f"<small>{escape(_anomaly_text(s['anomalies']))}</small>"
        )
        place(s["scenario"], str(s.get("kafka_version")), s.get("seed"), (text, cls))
    for f in failures:
        link = escape(os.path.relpath(f.run_dir, out_dir)) if f.run_dir else ""
        label = f"<a href='{link}'>ERROR</a>" if link else "ERROR"
        text = f"<b>{label}</b><br><small>{escape(f.error[:200])}</small>"
        place(f.scenario, str(f.kafka_version), f.seed, (text, "bad"))
    parts = []
    for scenario in cells:
        order = sorted(versions[scenario], key=_version_key)
        cols = sorted(seeds[scenario], key=lambda x: (x is None, x))
        head = "".join(f"<th>seed {escape(str(c))}</th>" for c in cols)
        body = []
        for v in order:
            tds = []
            for c in cols:
                text, cls = cells[scenario].get((v, c), ("-", ""))
                tds.append(f"<td class='{cls}'>{text}</td>" if cls else f"<td>{text}</td>")
            body.append(f"<tr><th>Kafka {escape(v)}</th>{''.join(tds)}</tr>")
        parts.append(
            f"<h2>{escape(scenario)}</h2><table class='grid'><tr><th>version</th>{head}</tr>"
            f"{''.join(body)}</table>"
        )
    return "\n".join(parts)


def ticket_tables(
    reports: Sequence[RunReport], out_of_range: Sequence[tuple[Ticket, str]] = ()
) -> str:
    """Per Kafka ticket among the runs' scenarios, one row per release: what the runs on
    it show (affected, not affected, not reproduced here, seen on a fixed release: only
    when a seed there found the ticket's own kind; a fixed release's seed that ended not
    as expected for another reason, a fault that did not start or an SLO, is reported as
    such) and in how many of its seeds; ``out_of_range`` adds a row per (ticket, release)
    that was not run because the release is older than the scenario's range. Empty when no run's
    scenario names a ticket and nothing was left out."""
    by_ticket: dict[str, tuple[Ticket, dict[str, list[tuple[bool, bool, set[str]]]]]] = {}
    for r in reports:
        scenario = r.data.run.scenario
        ticket = None if scenario is None else scenario.ticket
        if ticket is None:
            continue
        version = str(r.summary.get("kafka_version"))
        runs = by_ticket.setdefault(ticket.id, (ticket, {}))[1]
        found = {k for k, n in (r.summary.get("anomalies") or {}).items() if n}
        blind = outcome_label(r.summary) == "not judged"
        runs.setdefault(version, []).append((bool(r.summary["expected"]), blind, found))
    outside: dict[str, set[str]] = {}
    for ticket, version in out_of_range:
        by_ticket.setdefault(ticket.id, (ticket, {}))
        outside.setdefault(ticket.id, set()).add(version)
    parts = []
    for ident, (ticket, runs) in sorted(by_ticket.items()):
        rows = []
        for version in sorted({*runs, *outside.get(ident, ())}, key=_version_key):
            if version not in runs:
                rows.append(
                    f"<tr><th>Kafka {escape(version)}</th><td>before the range</td>"
                    f"<td><b>{OUTSIDE_RANGE}</b></td>"
                    f"<td>not run: {escape(ticket.range_note())}</td></tr>"
                )
                continue
            outcomes = [ok for ok, _, _ in runs[version]]
            unjudged_seeds = sum(1 for _, not_judged, _ in runs[version] if not_judged)
            shown = sum(outcomes)
            kinds = [k for _, _, k in runs[version]]
            status = ticket.status_of_seeds(version, outcomes, kinds, unjudged_seeds)
            side = "fixed" if ticket.is_fixed(version) else "affected"
            good = status in (AFFECTED, NOT_AFFECTED)
            rows.append(
                f"<tr><th>Kafka {escape(version)}</th><td>{side}</td>"
                f"<td class='{'ok' if good else 'warn' if status == NOT_JUDGED else 'bad'}'>"
                f"<b>{escape(status)}</b></td>"
                f"<td>{shown} of {len(outcomes)} seeds as expected</td></tr>"
            )
        commit = f", fixing commit {escape(ticket.commit[:12])}" if ticket.commit else ""
        parts.append(
            f"<h2>{escape(ident)}: {escape(ticket.title)}</h2>"
            f"<p>{escape(ticket.fix_note())}{commit}</p>"
            "<table class='grid'><tr><th>release</th><th>per the ticket</th>"
            f"<th>these runs show</th><th>seeds</th></tr>{''.join(rows)}</table>"
        )
    return "\n".join(parts)


def _version_key(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in text.split("."))
    except ValueError:
        return (1 << 30,)


def counts_figure(reports: Sequence[RunReport], columns: Sequence[str] = ()) -> go.Figure:
    kinds = sorted({k for r in reports for k in r.summary["anomalies"]})
    names = [run_label(r.summary, columns) for r in reports]
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
    sections: Sequence[str] = (),
    unit: str = "scenarios",
    columns: Sequence[str] = (),
) -> dict[str, str]:
    """report.html, junit.xml and summary.json; ``sections`` (HTML) go above the table;
    ``columns`` ("Kafka", "seed": runs of one scenario that differ by these) add them to
    the table and to junit.xml's suite names."""
    out_dir.mkdir(parents=True, exist_ok=True)
    passed = sum(1 for r in reports if r.outcome.expected)
    total = len(reports) + len(failures)
    heading = f"{title}: {passed}/{total} {unit} ended as expected"
    blind = sum(1 for r in reports if r.outcome.label == "not judged")
    if blind:
        heading += f" ({blind} not judged: a kind the expectation needs was not read)"
    parts = [f"<h1>{escape(heading)}</h1>"]
    if broker_config:
        parts.append(
            f"<p>SRE config validation with <code>{escape(broker_config)}</code>: PASS "
            "means no acknowledged write was lost and no invalid read happened under that "
            "configuration (docs/sre.md).</p>"
        )
    cls = "ok" if passed == total else "bad"
    parts.append(f"<div class='banner {cls}'>{escape(heading)}</div>")
    parts.extend(sections)
    if sections:
        parts.append("<h2>Every run</h2>")
    parts.append(matrix(reports, failures, out_dir, columns))
    if reports:
        parts.append(html.figure_div(counts_figure(reports, columns), "suite-anomalies"))
    for r in reports:
        if r.outcome.reasons:
            reasons = "; ".join(r.outcome.reasons)
            who = escape(run_label(r.summary, columns))
            parts.append(f"<p><b>{who}</b>: {escape(reasons)}</p>")
    out = RunDir(out_dir)
    paths = {"html": out.report_html, "junit": out.junit_xml, "summary": out.summary_json}
    write_bytes(paths["html"], html.page(title, "\n".join(parts)).encode("utf-8"))
    varied = list(columns)
    suites = []
    for r in reports:
        suite = junit.run_suite(r.data, r.outcome)
        if varied:  # one scenario on several versions/seeds: suite names must differ
            name = f"kchaos.{run_label(r.summary, varied)}"
            suite.set("name", name)
            for case in suite.iter("testcase"):
                case.set("classname", name)
        suites.append(suite)
    for f in failures:
        label = run_label(f.label_fields(), varied)
        s = ET.Element(
            "testsuite", name=f"kchaos.{label}", tests="1", failures="0", errors="1", time="0"
        )
        case = ET.SubElement(s, "testcase", classname=f"kchaos.{label}", name="run")
        ET.SubElement(case, "error", message=f.error, type="kchaos").text = f.error
        suites.append(s)
    write_bytes(paths["junit"], junit.document(suites, name=title))
    summary: dict[str, Any] = {
        "title": title,
        "broker_config": broker_config,
        "passed": passed,
        "total": total,
        "runs": [{**r.summary, "report": r.paths["html"]} for r in reports],
        "failures": [
            {**f.label_fields(), "error": f.error, "run_dir": f.run_dir} for f in failures
        ],
    }
    out.write_summary(summary)
    return {k: str(v) for k, v in paths.items()}
