"""report.html of one run: self-contained (plotly.js inlined, no network needed)."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import Any
from urllib.parse import quote

import plotly.graph_objects as go
import plotly.offline

from kchaos.harness.rundir.expect import (
    EXIT_NOT_JUDGED,
    INFORMATIONAL,
    Outcome,
    evaluate,
    excused_by_cause,
    verdict_text,
)
from kchaos.harness.rundir.files import jsonable
from kchaos.harness.rundir.names import CONTROLLER_JSONL, LOGS_DIR, RUN_JSON
from kchaos.harness.rundir.results import FullIsr
from kchaos.harness.rundir.rundir import RunDir
from kchaos.reports import plots, prometheus, replicas, timeline
from kchaos.reports.rundata import RunData, Series, series

CSS = """
body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:1.5em;margin-bottom:4px} h2{font-size:1.15em;margin-top:28px}
table{border-collapse:collapse;margin:8px 0} td,th{border:1px solid #ccc;padding:4px 8px;
text-align:left;vertical-align:top;font-size:.92em} th{background:#f3f3f3}
.ok{background:#e6f4ea} .bad{background:#fdecea} .warn{background:#fff8e1}
.banner{padding:10px 14px;border-radius:6px;font-weight:600;margin:12px 0}
code,pre{font-family:ui-monospace,monospace;font-size:.85em} pre{white-space:pre-wrap}
.muted{color:#666} .plot{margin:6px 0 18px 0}
"""


@functools.cache
def plotly_js() -> str:
    """The plotly.js bundle shipped with the plotly package (inlined in every page)."""
    return plotly.offline.get_plotlyjs()


def page(title: str, body: str) -> str:
    """A complete HTML page with plotly.js inlined before the body's figures."""
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{escape(title)}</title><style>{CSS}</style>"
        f"<script type='text/javascript'>{plotly_js()}</script></head>"
        f"<body>{body}</body></html>\n"
    )


def figure_div(fig: go.Figure, div_id: str) -> str:
    html: str = fig.to_html(
        full_html=False,
        include_plotlyjs=False,
        div_id=div_id,
        config={"displaylogo": False, "responsive": True},
    )
    return f"<div class='plot'>{html}</div>"


def table(
    headers: Sequence[str], rows: Iterable[Sequence[Any]], classes: Sequence[str] = ()
) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    head = f"<tr>{head}</tr>" if any(headers) else ""
    body = []
    for i, row in enumerate(rows):
        cls = f" class='{classes[i]}'" if i < len(classes) and classes[i] else ""
        body.append(f"<tr{cls}>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>")
    return f"<table>{head}{''.join(body)}</table>"


def banner(outcome: Outcome) -> str:
    cls = "ok" if outcome.expected else "warn" if outcome.exit_code == EXIT_NOT_JUDGED else "bad"
    text = f"Run ended {outcome.label}: verdict {verdict_text(outcome.verdict)}"
    if outcome.reasons:
        text += " — " + "; ".join(outcome.reasons)
    return f"<div class='banner {cls}'>{escape(text)}</div>"


def _examples(body: Any, limit: int = 3) -> str:
    examples = body.get("examples", []) if isinstance(body, dict) else []
    shown = [escape(json.dumps(e, sort_keys=True)[:400]) for e in examples[:limit]]
    return "<br>".join(f"<code>{s}</code>" for s in shown)


def verdict_table(data: RunData, outcome: Outcome) -> str:
    expect = data.expect
    required = set(expect.get("anomalies") or ())
    allowed = set(expect.get("allowed") or ())
    excusing = set(expect.get("allowed_causes") or ())
    forbidden = set(expect.get("forbid") or ())
    anomalies = (data.results or {}).get("anomalies") or {}
    unjudged = (data.results or {}).get("unjudged")
    unjudged = unjudged if isinstance(unjudged, dict) else {}
    rows, classes = [], []
    for kind in sorted(set(anomalies) | required | set(unjudged)):
        body = anomalies.get(kind)
        count = body.get("count", 1) if isinstance(body, dict) else (body or 0)
        causes = body.get("causes") if isinstance(body, dict) else None
        causes = causes if isinstance(causes, dict) else {}
        if kind in unjudged and not count:
            # its source was not read: neither found nor absent (docs/checker.md)
            needed = kind in required or kind in forbidden
            status = f"not judged: {unjudged[kind]}"
            rows.append([escape(kind), "-", escape(status), ""])
            classes.append("bad" if needed else "warn")
            continue
        if kind in required:
            status, cls = ("expected, found", "ok") if count else ("expected, NOT found", "bad")
        elif kind in forbidden and count:
            status, cls = "forbidden, found", "bad"
        elif excused_by_cause(body, excusing):
            status, cls = "allowed by its cause", "warn"
        elif kind in allowed or kind in INFORMATIONAL:
            status, cls = "allowed", "warn"
        elif expect.get("valid", True) in (None, "any"):
            status, cls = "reported", "warn"
        else:
            status, cls = "unexpected", "bad"
        by_cause = ", ".join(f"{c} {n}" for c, n in sorted(causes.items()))
        shown = f"{count} ({by_cause})" if by_cause else str(count)
        rows.append([escape(kind), escape(shown), status, _examples(body)])
        classes.append(cls)
    if not rows:
        rows.append(["(none)", "0", "no anomaly found", ""])
        classes.append("ok" if outcome.expected else "bad")
    return table(["anomaly", "count", "status", "examples"], rows, classes)


def slo_table(outcome: Outcome, data: RunData) -> str:
    checks = data.run.checks
    stats = (data.results or {}).get("stats") or {}
    observed = (
        ((stats.get("availability") or {}).get("slo") or {}) if isinstance(stats, dict) else {}
    )
    rows, classes = [], []
    for name, passed in sorted(outcome.slo.items()):
        seen = (observed.get(name) or {}).get("observed", "") if isinstance(observed, dict) else ""
        seen_text = "never reached" if seen is None else str(seen)
        rows.append(
            [
                escape(name),
                escape(str(checks.get(name, ""))),
                escape(seen_text),
                "pass" if passed else "FAIL",
            ]
        )
        classes.append("ok" if passed else "bad")
    if not rows:
        return "<p class='muted'>No SLO threshold was evaluated.</p>"
    return table(["threshold", "limit", "observed", "result"], rows, classes)


def agreement_table(data: RunData) -> str:
    if not data.analysis:
        return ""
    mine = (data.results or {}).get("anomalies") or {}
    spark = data.analysis.get("anomalies") or {}
    rows, classes = [], []
    for kind in sorted(set(mine) | set(spark)):
        a = (mine.get(kind) or {}).get("count", 0) if kind in mine else 0
        b = (spark.get(kind) or {}).get("count", 0) if kind in spark else 0
        rows.append([escape(kind), str(a), str(b)])
        classes.append("ok" if a == b else "bad")
    return "<h2>Checker vs Spark analysis</h2>" + table(["kind", "checker", "spark"], rows, classes)


def header(data: RunData) -> str:
    run = data.run
    facts = [
        ("scenario", data.scenario_name),
        ("run id", data.run_id),
        ("Kafka", str(run.kafka_version or "?")),
        ("image", str(run.kafka_image or "?")),
        ("seed", str("?" if run.seed is None else run.seed)),
        ("started", str(run.start or "?")),
        ("ended", str(run.end or "?")),
        (
            "history",
            f"{data.events} events, {data.end:.1f} s"
            + (f", {data.torn_lines} unreadable line(s) ignored" if data.torn_lines else ""),
        ),
    ]
    host = host_line(run.get("host"))
    if host:
        facts.append(("host", host))
    t = data.totals
    facts.append(("sends", f"{t['ok']} ok, {t['fail']} fail, {t['info']} info"))
    if data.txn_outcomes:
        x = data.txn_totals
        facts.append(("transactions", f"{x['ok']} ok, {x['fail']} fail, {x['info']} info"))
    return table(["", ""], [[escape(k), escape(v)] for k, v in facts])


def host_line(host: Any) -> str:
    """run.json ``host`` in a line: ``2 CPUs, 2 runs at once (1 CPU each), load 0.5 at
    start, 3.1 at end`` (the 1-minute averages); "" without one."""
    if not isinstance(host, Mapping):
        return ""
    cpus, parallel = host.get("cpus"), host.get("parallel") or 1
    text = f"{cpus if cpus else '?'} CPUs, "
    text += "one run at a time" if parallel == 1 else f"{parallel} runs at once"
    share = host.get("cpus_per_run")
    if parallel != 1 and isinstance(share, int | float):
        text += f" ({share:g} CPU{'' if share == 1 else 's'} each)"
    loads = [
        f"{avg[0]:g} at {when}"
        for key, when in (("load_avg_start", "start"), ("load_avg_end", "end"))
        if isinstance(avg := host.get(key), list) and avg
    ]
    return text + (", load " + ", ".join(loads) if loads else "")


def fault_table(data: RunData) -> str:
    if not data.faults:
        return "<p class='muted'>No fault was injected.</p>"
    rec = {r.id: r for r in data.recovery}  # the checker's time_to_full_isr
    rows, classes = [], []
    for w in data.faults:
        stop = f"{w.stop_s:.1f}" if w.stop_s is not None else "never healed"
        rows.append(
            [
                escape(w.id),
                escape(w.fault),
                escape(", ".join(w.targets)),
                f"{w.start_s:.1f}",
                stop,
                _to_full_isr(rec.get(w.id)),
                escape(f"did not start: {w.error}" if w.error else ""),
            ]
        )
        classes.append("bad" if w.error or w.stop_s is None else "")
    headers = ["id", "fault", "targets", "start s", "stop s", "to full ISR s", "error"]
    return table(headers, rows, classes)


def _to_full_isr(r: FullIsr | None) -> str:
    """The checker's time to full ISR: seconds, "unknown" (nothing to measure it from)
    or "never" (an ISR stayed short to the end of the run)."""
    if r is None:
        return ""
    if r.seconds is not None:
        return f"{r.seconds:.1f}"
    return "unknown" if r.unknown else "never"


def files_section(rd: RunDir) -> str:
    """Links to what Kafka itself recorded: controller.jsonl and each node's logs
    (relative links: the report sits in the run directory)."""
    links = []
    if rd.controller.is_file():
        links.append(
            f"<li><a href='{CONTROLLER_JSONL}'>{CONTROLLER_JSONL}</a> (KRaft metadata log)</li>"
        )
    logs = rd.logs_dir
    nodes = sorted(p for p in logs.iterdir() if p.is_dir()) if logs.is_dir() else []
    for node in nodes:
        files = [
            f"<a href='{LOGS_DIR}/{quote(node.name)}/{quote(f.name)}'>{escape(f.name)}</a>"
            for f in sorted(node.glob("*.log"))
        ]
        links.append(f"<li>{escape(node.name)}: {' '.join(files)}</li>")
    if not links:
        return ""
    return "<h2>Kafka's own records</h2><ul>" + "".join(links) + "</ul>"


def transactions_section(data: RunData, figure: str, lag_figure: str = "") -> str:
    """History format 1.2: outcomes per transactional id (counted from the history, and
    the anomalies the checker pinned on each id), the figure, the last-stable-offset lag
    while the run lasted (where the monitor sampled it) and each partition's last stable
    offset against its high watermark when the drain ended."""
    stats = ((data.results or {}).get("stats") or {}).get("transactions") or {}
    by_id = stats.get("anomalies_by_transactional_id") or {}
    rows, classes = [], []
    for tid in sorted(data.txn_outcomes):
        outcomes = [typ for _, typ, _ in data.txn_outcomes[tid]]
        found = by_id.get(tid) or {}
        text = ", ".join(f"{k} {n}" for k, n in sorted(found.items()) if n) or "none"
        rows.append(
            [escape(tid), *(str(outcomes.count(k)) for k in ("ok", "fail", "info")), escape(text)]
        )
        classes.append("bad" if found else "")
    out = ["<h2>Transactions</h2>", figure]
    out.append(
        table(["transactional id", "committed", "aborted", "unknown", "anomalies"], rows, classes)
    )
    if lag_figure:
        out.append(lag_figure)
    if data.lso_note:
        out.append(
            f"<p class='muted'>Last-stable-offset samples not shown: {escape(data.lso_note)}</p>"
        )
    if data.drain_lso:
        lag_rows, lag_classes = [], []
        for part in sorted(data.drain_lso):
            hwm, lso = data.drain_lso[part]
            lag_rows.append([part, str(hwm), str(lso), str(hwm - lso)])
            lag_classes.append("bad" if lso < hwm else "")
        out.append(
            "<p>When the read_committed drain ended (a gap is a transaction still open):</p>"
        )
        out.append(
            table(
                ["partition", "high watermark", "last stable offset", "gap"], lag_rows, lag_classes
            )
        )
    return "\n".join(out)


def _send_plots(data: RunData, s: Series) -> list[str]:
    """Sends per second and their latency; in a run whose sends were all inside
    transactions, a line that says where they are instead of two empty plots."""
    if data.txn_outcomes and not any(data.totals.values()):
        return [
            "<p class='muted'>No plain sends in this run: every send was inside a "
            "transaction (see Transactions below).</p>"
        ]
    return [
        figure_div(plots.throughput(data, s), "throughput"),
        figure_div(plots.latency(data, s), "latency"),
    ]


def render_run(data: RunData, outcome: Outcome | None = None) -> str:
    outcome = outcome or evaluate(data.expect, data.results)
    s = series(data)
    desc = (data.run.get("scenario") or {}).get("description", "")
    parts = [
        f"<h1>kchaos run: {escape(data.scenario_name)}</h1>",
        f"<p class='muted'>{escape(desc)}</p>" if desc else "",
        banner(outcome),
        header(data),
        "<h2>Verdict</h2>",
        verdict_table(data, outcome),
        "<h2>SLO thresholds</h2>",
        slo_table(outcome, data),
        agreement_table(data),
        "<h2>Over time</h2>",
        *_send_plots(data, s),
        figure_div(plots.isr(data), "isr"),
        figure_div(plots.offline(data), "offline"),
    ]
    if any(r.seconds is not None for r in data.recovery):
        parts.append(figure_div(plots.recovery(data), "recovery"))
    if data.txn_outcomes:
        lag = figure_div(plots.stable_offset_lag(data), "lso-lag") if data.lso_lag else ""
        txns = figure_div(plots.transactions(data), "txns")
        parts.append(transactions_section(data, txns, lag))
    parts.append(prometheus.section(data, figure_div))
    parts += ["<h2>Faults</h2>", fault_table(data)]
    parts.append(timeline.render(data.run_dir, data.faults))
    parts.append(replicas.render(data.results))
    parts.append(files_section(data.run_dir))
    config = escape(json.dumps(jsonable(data.run.raw), indent=2, sort_keys=True))
    parts.append(
        f"<h2>Configuration</h2><details><summary>{RUN_JSON}</summary><pre>{config}</pre></details>"
    )
    return page(f"kchaos {data.scenario_name} {data.run_id}", "\n".join(parts))
