"""Plotly figures of one run: throughput, latency, ISR, offline windows, recovery, each
transactional id's outcomes (history format 1.2) and each partition's last-stable-offset
lag."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import plotly.graph_objects as go

from kchaos.reports.rundata import RunData, Series

FAULT_FILL = "rgba(255, 165, 0, 0.18)"
OFFLINE_FILL = "rgba(220, 20, 60, 0.15)"
MAX_FAULT_LABELS = 40  # more faults than this: bands without labels (see the fault table)
MARKER_SYMBOLS = {"lost-write": "x", "duplicate": "diamond", "inconsistent-offset": "square"}


def _layout(fig: go.Figure, title: str, ytitle: str, end: float) -> go.Figure:
    fig.update_layout(
        title={"text": title, "x": 0.01},
        height=320,
        margin={"l": 60, "r": 20, "t": 40, "b": 40},
        legend={"orientation": "h", "y": -0.2},
        xaxis={"title": "seconds since the run started", "range": [0, max(end, 1.0)]},
        yaxis={"title": ytitle, "rangemode": "tozero"},
        template="plotly_white",
    )
    return fig


def _band(x0: float, x1: float, fill: str) -> dict[str, Any]:
    return {
        "type": "rect",
        "xref": "x",
        "yref": "paper",
        "x0": x0,
        "x1": x1,
        "y0": 0,
        "y1": 1,
        "fillcolor": fill,
        "line": {"width": 0},
        "layer": "below",
    }


def add_bands(fig: go.Figure, shapes: list[dict[str, Any]], notes: list[dict[str, Any]]) -> None:
    """Add shapes and annotations in one layout update (add_vrect one by one is quadratic)."""
    fig.update_layout(
        shapes=[*fig.layout.shapes, *shapes], annotations=[*fig.layout.annotations, *notes]
    )


def shade_faults(fig: go.Figure, data: RunData) -> None:
    shapes, notes = [], []
    visible = max(0.05, data.end / 300)  # an instantaneous operation stays visible
    windows = [w for w in data.faults if w.fault != "heal"]  # the final heal is no fault
    for w in windows:
        stop = w.stop_s if w.stop_s is not None else data.end
        shapes.append(_band(w.start_s, max(stop, w.start_s + visible), FAULT_FILL))
        if len(windows) <= MAX_FAULT_LABELS:
            notes.append(
                {
                    "x": w.start_s,
                    "y": 1,
                    "xref": "x",
                    "yref": "paper",
                    "text": f"{w.fault} {','.join(w.targets)}",
                    "showarrow": False,
                    "xanchor": "left",
                    "yanchor": "top",
                    "font": {"size": 9},
                }
            )
    add_bands(fig, shapes, notes)


def throughput(data: RunData, s: Series) -> go.Figure:
    fig = go.Figure()
    for name, ys, color in (
        ("ok", s.ok, "#2e7d32"),
        ("fail", s.fail, "#c62828"),
        ("info (unknown)", s.info, "#f9a825"),
    ):
        fig.add_trace(
            go.Scatter(
                x=s.times, y=ys, name=name, mode="lines", line={"color": color, "shape": "hv"}
            )
        )
    top = max([*s.ok, *s.fail, *s.info, 1.0])
    kinds = sorted({m.kind for m in data.markers})
    for kind in kinds:
        ms = [m for m in data.markers if m.kind == kind]
        fig.add_trace(
            go.Scatter(
                x=[m.time for m in ms],
                y=[top * 1.05] * len(ms),
                mode="markers",
                name=f"{kind} written",
                text=[m.label for m in ms],
                hoverinfo="text+x",
                marker={"symbol": MARKER_SYMBOLS.get(kind, "circle"), "size": 9, "color": "black"},
            )
        )
    shade_faults(fig, data)
    return _layout(fig, f"Sends per second (bucket {s.width:g} s)", "sends/s", data.end)


def latency(data: RunData, s: Series) -> go.Figure:
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=s.times, y=s.p50, name="p50", mode="lines", connectgaps=False))
    fig.add_trace(go.Scatter(x=s.times, y=s.p99, name="p99", mode="lines", connectgaps=False))
    shade_faults(fig, data)
    fig = _layout(fig, "Acknowledged send latency", "milliseconds", data.end)
    fig.update_yaxes(type="log", rangemode=None)
    return fig


def step_lines(
    fig: go.Figure,
    lines: Iterable[tuple[str, Sequence[Sequence[float]]]],
    hover: str | None = None,
) -> None:
    """One step line (a value holds until the next point) per (name, points), in the
    order given; ``hover``, when given, is a hover template that follows the name."""
    for name, points in lines:
        extra = {} if hover is None else {"hovertemplate": name + hover}
        fig.add_trace(
            go.Scatter(
                x=[p[0] for p in points],
                y=[p[1] for p in points],
                name=name,
                mode="lines",
                line={"shape": "hv"},
                **extra,
            )
        )


def isr(data: RunData) -> go.Figure:
    fig = go.Figure()
    step_lines(fig, sorted(data.isr.items()))
    offline_bands = [
        _band(o.start_s, o.start_s + max(o.length_s, 0.05), OFFLINE_FILL) for o in data.offline
    ]
    add_bands(fig, offline_bands, [])
    shade_faults(fig, data)
    fig = _layout(
        fig, "ISR size per partition (red: a partition offline)", "replicas in ISR", data.end
    )
    fig.update_yaxes(dtick=1)
    return fig


def offline(data: RunData) -> go.Figure:
    fig = go.Figure()
    if data.offline:
        fig.add_trace(
            go.Bar(
                y=[o.name for o in data.offline],
                x=[o.length_s for o in data.offline],
                base=[o.start_s for o in data.offline],
                orientation="h",
                marker={"color": "crimson"},
                name="offline",
                hovertemplate="%{y}: offline from %{base:.1f}s for %{x:.1f}s<extra></extra>",
            )
        )
    shade_faults(fig, data)
    fig = _layout(fig, "Offline windows (no leader)", "partition", data.end)
    fig.update_layout(height=200 + 18 * len({o.name for o in data.offline}))
    return fig


def recovery(data: RunData) -> go.Figure:
    # the checker's time_to_full_isr, from each fault's actual stop (results.json)
    points = [(r.stop_s, r.seconds) for r in data.recovery if r.seconds is not None]
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=[p[0] for p in points],
            y=[p[1] for p in points],
            mode="lines+markers",
            name="time to full ISR",
        )
    )
    return _layout(
        fig,
        "Time from each fault's stop to full ISR (the checker's time_to_full_isr)",
        "seconds",
        data.end,
    )


TXN_COLORS = {"ok": "seagreen", "fail": "darkorange", "info": "crimson"}
TXN_LABELS = {"ok": "committed", "fail": "aborted", "info": "unknown"}


def transactions(data: RunData) -> go.Figure:
    """One row per transactional id: a mark at each completed transaction, coloured by
    its outcome (committed, aborted, unknown), over the fault windows."""
    fig = go.Figure()
    ids = sorted(data.txn_outcomes)
    for outcome, color in TXN_COLORS.items():
        xs, ys, texts = [], [], []
        for tid in ids:
            for t, typ, name in data.txn_outcomes[tid]:
                if typ == outcome:
                    xs.append(t)
                    ys.append(tid)
                    texts.append(name)
        if xs:
            fig.add_trace(
                go.Scatter(
                    x=xs,
                    y=ys,
                    text=texts,
                    mode="markers",
                    name=TXN_LABELS[outcome],
                    marker={"color": color, "symbol": "line-ns-open", "size": 12},
                    hovertemplate="%{y} %{text}: " + TXN_LABELS[outcome] + " at %{x:.2f}s"
                    "<extra></extra>",
                )
            )
    shade_faults(fig, data)
    fig = _layout(fig, "Transactions per transactional id, by outcome", "", data.end)
    fig.update_layout(height=200 + 30 * len(ids))
    fig.update_yaxes(categoryorder="array", categoryarray=ids)
    return fig


def stable_offset_lag(data: RunData) -> go.Figure:
    """Per partition, the monitor's high watermark minus last stable offset over time
    (offsets written by transactions still open), over the fault windows."""
    fig = go.Figure()
    step_lines(fig, sorted(data.lso_lag.items()), hover=": lag %{y} at %{x:.2f}s<extra></extra>")
    shade_faults(fig, data)
    return _layout(
        fig,
        "Last stable offset lag per partition (high watermark minus LSO)",
        "offsets not yet stable",
        data.end,
    )
