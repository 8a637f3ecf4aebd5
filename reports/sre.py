"""The SRE validation's go/no-go page: scenarios (rows) by broker configs (columns).

Each cell is one run (``OUT/SCENARIO/CONFIG/``): GO when the run was valid under the
config (no acknowledged write lost, no invalid read), NO-GO when it was not, UNKNOWN when
the checker could not decide (e.g. a partition never drained), NOT JUDGED when a kind the
profile relies on (every invalidating kind it does not allow) is unjudged in results.json
(its source was not read: never a GO), ERROR when the run did not finish; with the
verdict, the anomaly counts and how many scenario settings the config or the producer
profile overrode, linking to the run's report.html. Under the grid: each
config's properties, the profile, and every overridden setting per run; then the suite's
table of every run. junit.xml has one test suite per run (``kchaos.SCENARIO.config-C``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from html import escape
from pathlib import Path
from typing import Any

from kchaos.harness.rundir.anomalies import INVALIDATING, anomaly_text
from kchaos.harness.rundir.names import REPLICAS_JSONL, RESULTS_JSON
from kchaos.reports.build import RunReport
from kchaos.reports.console import outcome_label
from kchaos.reports.suite import SuiteFailure, write_suite_reports


def _sre(r: RunReport) -> Mapping[str, Any]:
    sre = r.data.run.get("sre")
    return sre if isinstance(sre, Mapping) else {}


def relied_on(r: RunReport) -> list[str]:
    """The kinds a validation run's GO rests on: every invalidating kind its expectation
    (the profile's) does not allow, that results.json lists as unjudged."""
    allowed = set(r.data.expect.get("allowed") or ())
    unjudged = r.summary.get("unjudged") or {}
    return [k for k in INVALIDATING if k not in allowed and k in unjudged]


def cell_state(summary: Mapping[str, Any]) -> str:
    """GO, NO-GO, UNKNOWN, NOT JUDGED or NOT EXERCISED for a finished run
    (``sre_unjudged``: the kinds :func:`relied_on` found unjudged)."""
    if outcome_label(summary) == "not exercised":
        # a fault whose effect was not seen: the run says nothing of the config
        return "NOT EXERCISED"
    if summary.get("expected") and not summary.get("sre_unjudged"):
        return "GO"
    if summary.get("expected") or outcome_label(summary) == "not judged":
        return "NOT JUDGED"
    if summary.get("verdict") == "unknown":
        return "UNKNOWN"
    return "NO-GO"


def not_judged(reports: Sequence[RunReport]) -> int:
    """How many finished runs are NOT JUDGED cells."""
    runs, _ = labelled(reports, ())
    return sum(1 for r in runs if cell_state(r.summary) == "NOT JUDGED")


_CLASS = {
    "GO": "ok",
    "NO-GO": "bad",
    "UNKNOWN": "warn",
    "NOT JUDGED": "warn",
    "NOT EXERCISED": "warn",
    "ERROR": "bad",
}


def decision(states: Sequence[str]) -> str:
    """The page's banner from its cells' states: GO only when every cell is; NO-GO when
    any cell lost or broke data (or did not run); otherwise what kept the rest from GO
    (a fault that did not bite, a kind that could not be judged, an unknown verdict)."""
    if states and all(s == "GO" for s in states):
        return "GO"
    for state in ("NO-GO", "ERROR", "NOT EXERCISED", "NOT JUDGED", "UNKNOWN"):
        if state in states:
            return "NO-GO" if state == "ERROR" else state
    return "NO-GO"


def labelled(
    reports: Sequence[RunReport], failures: Sequence[SuiteFailure]
) -> tuple[list[RunReport], list[SuiteFailure]]:
    """The runs with their config's label in the summary (``sre_config``, and the
    ``overridden`` settings), failures with theirs (the run directory's name)."""
    runs = []
    for r in reports:
        sre = _sre(r)
        summary = {
            **r.summary,
            "sre_config": sre.get("label"),
            "sre_profile": sre.get("profile"),
            "overridden": list(sre.get("overridden") or ()),
            "sre_unjudged": relied_on(r),
        }
        runs.append(replace(r, summary=summary))
    fails = [replace(f, sre_config=Path(f.run_dir).name if f.run_dir else None) for f in failures]
    return runs, fails


def _anomalies(counts: Mapping[str, Any], causes: Mapping[str, Any] | None = None) -> str:
    return anomaly_text(counts, causes) or "no anomaly"


def grid(
    reports: Sequence[RunReport],
    failures: Sequence[SuiteFailure],
    labels: Sequence[str],
    out_dir: Path,
) -> str:
    """The table of scenarios by configs (``reports``/``failures`` as :func:`labelled`
    returns them)."""
    cells: dict[tuple[str, str], tuple[str, str]] = {}
    scenarios: list[str] = []
    for r in reports:
        s = r.summary
        state = cell_state(s)
        rel = escape(os.path.relpath(r.paths["html"], out_dir))
        n = len(s.get("overridden") or ())
        verdict = str(s["verdict"])
        if state == "GO" and verdict != "valid":
            # e.g. elections after a total power loss: the checker's verdict is invalid,
            # but every kind it found is reported, not red, in a validation run
            verdict = f"(checker: {verdict}; every anomaly reported, not red)"
        blind = s.get("sre_unjudged") or ()
        if blind:
            verdict += f"; not judged: {', '.join(blind)}"
        text = (
            f"<a href='{rel}'><b>{state}</b></a> {escape(verdict)}<br>"
            f"<small>{escape(_anomalies(s['anomalies'], s.get('causes')))}"
            f"<br>{n} scenario setting(s) overridden</small>"
        )
        cells[(s["scenario"], str(s.get("sre_config")))] = (text, _CLASS[state])
        if s["scenario"] not in scenarios:
            scenarios.append(s["scenario"])
    for f in failures:
        text = f"<b>ERROR</b><br><small>{escape(f.error[:200])}</small>"
        cells[(f.scenario, str(f.sre_config))] = (text, "bad")
        if f.scenario not in scenarios:
            scenarios.append(f.scenario)
    head = "".join(f"<th>{escape(c)}</th>" for c in labels)
    body = []
    for name in scenarios:
        tds = []
        for c in labels:
            text, cls = cells.get((name, c), ("-", ""))
            tds.append(f"<td class='{cls}'>{text}</td>" if cls else f"<td>{text}</td>")
        body.append(f"<tr><th>{escape(name)}</th>{''.join(tds)}</tr>")
    return (
        f"<table class='grid' id='go-no-go'><tr><th>scenario</th>{head}</tr>{''.join(body)}</table>"
    )


def _configs_section(configs: Sequence[Any], prof: Any) -> str:
    parts = [
        f"<p>Producer profile <b>{escape(prof.name)}</b>: {escape(prof.summary)}.</p>",
        "<h2>Configs</h2>",
    ]
    for c in configs:
        rows = "".join(
            f"<tr><td><code>{escape(k)}</code></td><td><code>{escape(v)}</code></td></tr>"
            for k, v in c.properties.items()
        )
        parts.append(
            f"<h3>{escape(c.label)}</h3><p><code>{escape(str(c.path))}</code></p>"
            f"<table><tr><th>property</th><th>value</th></tr>{rows}</table>"
        )
    return "\n".join(parts)


def _overrides_section(reports: Sequence[RunReport]) -> str:
    parts = ["<h2>Scenario settings overridden</h2>"]
    for r in reports:
        s = r.summary
        items = s.get("overridden") or ()
        rows = "".join(
            "<tr>"
            + "".join(
                f"<td>{escape('unset (default)' if o.get(k) is None else str(o.get(k)))}</td>"
                for k in ("where", "key", "scenario", "now", "by")
            )
            + "</tr>"
            for o in items
        )
        who = f"{s['scenario']} under {s.get('sre_config')}"
        if not rows:
            parts.append(f"<p><b>{escape(who)}</b>: none.</p>")
            continue
        parts.append(
            f"<details><summary><b>{escape(who)}</b>: {len(items)}</summary><table>"
            "<tr><th>where</th><th>setting</th><th>scenario's value</th><th>run used</th>"
            f"<th>by</th></tr>{rows}</table></details>"
        )
    return "\n".join(parts)


EXPLAIN = (
    "<p>Each cell: one run of the scenario with the config's broker and topic-level "
    "settings and the producer profile. <b>GO</b>: valid, no acknowledged write lost "
    "and no invalid read. <b>NO-GO</b>: lost or invalid data (lost-write, duplicate, "
    "uncommitted or aborted read, inconsistent offset, a poll that skipped or went "
    "back, an acknowledgement below min.insync.replicas, diverging replicas). Offline "
    "windows and unclean or last-known-leader elections are reported in the run's "
    "report, not red: what an election loses is counted as lost writes. "
    "<b>UNKNOWN</b>: the checker could not decide (e.g. a partition never drained). "
    "<b>NOT JUDGED</b>: a kind GO rests on could not be looked for, its source was not "
    f"read (e.g. no {REPLICAS_JSONL} for replica-divergence): never a GO. "
    "<b>NOT EXERCISED</b>: a fault of the scenario did not show its own effect in the run "
    f"({RESULTS_JSON}'s evidence: not seen, not measured, or never started), so the run "
    "says nothing about the config: never a GO.</p>"
)


def write_validation(
    out_dir: Path,
    title: str,
    reports: Sequence[RunReport],
    failures: Sequence[SuiteFailure],
    configs: Sequence[Any],
    prof: Any,
    console: Any = None,
) -> dict[str, str]:
    """report.html (the grid above the suite's table), junit.xml, summary.json."""
    runs, fails = labelled(reports, failures)
    labels = [c.label for c in configs]
    states = [cell_state(r.summary) for r in runs] + ["ERROR"] * len(fails)
    go = states.count("GO")
    total = len(states)
    verdict = decision(states)
    sections = [
        f"<div class='banner {_CLASS.get(verdict, 'bad')}' id='decision'>"
        f"{verdict}: {go}/{total} cells go</div>",
        EXPLAIN,
        grid(runs, fails, labels, out_dir),
        _configs_section(configs, prof),
        _overrides_section(runs),
    ]
    paths = write_suite_reports(
        out_dir,
        runs,
        fails,
        title=title,
        broker_config=", ".join(str(c.path) for c in configs),
        sections=sections,
        unit="runs",
        columns=("config",),
    )
    if console is not None:
        from kchaos.reports.console import print_batch

        print_batch(
            console,
            title,
            runs,
            fails,
            paths,
            page="SRE report",
            label=lambda s: f"{s['scenario']} [{s.get('sre_config')}]",
            notes=[f"{verdict}: {go}/{total} cells go"],
        )
    return paths
