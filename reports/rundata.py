"""Everything the reports need from one run directory, read in one streaming pass.

Inputs (format v1, see history-format.md), each read through the run-directory package
:mod:`kchaos.harness.rundir`: ``run.json``, ``history.jsonl``, ``results.json`` and, when
present, ``analysis/summary.json`` and the monitor's last-stable-offset samples. The
history is never held in memory: sends are counted into fine time buckets (0.1 s) with a
capped latency sample per bucket, and only the send times of values named in the
verdict's examples are kept. Fault windows, offline windows and the time to full ISR
after each fault are the checker's (results.json), never recomputed here.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kchaos.harness.errors import HistoryError
from kchaos.harness.rundir.history import (
    F_DRAIN_END,
    F_METADATA,
    F_SEND,
    F_TXN,
    F_TXN_INIT,
    read_events,
)
from kchaos.harness.rundir.names import HISTORY_JSONL, RUN_JSON
from kchaos.harness.rundir.results import FaultWindow, FullIsr, OfflineWindow
from kchaos.harness.rundir.rundir import RunDir
from kchaos.harness.rundir.runjson import RunJson

__all__ = ["FaultWindow", "RunData", "Series", "load_run_data", "series"]

FINE = 0.1  # seconds per fine bucket
SAMPLES_PER_BUCKET = 400
NS = 1e9


@dataclass
class Bucket:
    ok: int = 0
    fail: int = 0
    info: int = 0
    latencies: list[float] = field(default_factory=list)  # seconds, ok sends only


@dataclass(frozen=True)
class Marker:
    kind: str  # anomaly kind
    time: float
    value: str
    label: str


@dataclass
class RunData:
    run_dir: RunDir
    run: RunJson
    results: dict[str, Any] | None
    analysis: dict[str, Any] | None
    buckets: dict[int, Bucket] = field(default_factory=dict)
    # the checker's series (results.json); empty where the run has not been checked
    faults: tuple[FaultWindow, ...] = ()
    offline: tuple[OfflineWindow, ...] = ()
    recovery: tuple[FullIsr, ...] = ()
    isr: dict[str, list[tuple[float, int]]] = field(default_factory=dict)  # "t/0" -> points
    markers: list[Marker] = field(default_factory=list)
    end: float = 0.0
    events: int = 0
    torn_lines: int = 0
    totals: dict[str, int] = field(default_factory=lambda: {"ok": 0, "fail": 0, "info": 0})
    # history format 1.2: each transactional id's completed transactions, (seconds since
    # the run started, outcome, txn), in history order; and the drain's last stable
    # offsets ("t/0" -> (high watermark, last stable offset)) where it reported them
    txn_outcomes: dict[str, list[tuple[float, str, str]]] = field(default_factory=dict)
    drain_lso: dict[str, tuple[int, int]] = field(default_factory=dict)
    # the monitor's samples while the run lasted (stable-offsets.jsonl, runs with
    # transactions only): "t/0" -> (seconds since the run started, high watermark minus
    # last stable offset), in the order sampled; and why they could not be read, if so
    lso_lag: dict[str, list[tuple[float, int]]] = field(default_factory=dict)
    lso_note: str = ""

    @property
    def run_id(self) -> str:
        return str(self.run.run_id or self.run_dir.path.name)

    @property
    def scenario_name(self) -> str:
        return self.run.scenario_name or "?"

    @property
    def expect(self) -> dict[str, Any]:
        return dict(self.run.expect)

    @property
    def txn_totals(self) -> dict[str, int]:
        """Completed transactions by outcome (ok, fail, info); all 0 in a run without
        transactions (format 1.2 only)."""
        totals = {"ok": 0, "fail": 0, "info": 0}
        for outcomes in self.txn_outcomes.values():
            for _, outcome, _ in outcomes:
                totals[outcome] += 1
        return totals


def _example_targets(results: Mapping[str, Any] | None) -> tuple[dict[str, str], dict[int, str]]:
    """value -> kind and history index -> kind, for anomalies worth a marker."""
    by_value: dict[str, str] = {}
    by_index: dict[int, str] = {}
    for kind, body in ((results or {}).get("anomalies") or {}).items():
        if kind in ("offline",) or not isinstance(body, Mapping):
            continue
        for ex in body.get("examples") or []:
            if not isinstance(ex, Mapping):
                continue
            if isinstance(ex.get("value"), str):
                by_value.setdefault(ex["value"], kind)
                continue  # the value finds its send line; indices would add nothing
            for key in ("index", "indices", "indexes", "lines"):
                raw = ex.get(key)
                items = raw if isinstance(raw, list) else [raw]
                for item in items:
                    if isinstance(item, int):
                        by_index.setdefault(item, kind)
    return by_value, by_index


class _Scanner:
    def __init__(self, data: RunData) -> None:
        self.d = data
        self.invokes: dict[str, float] = {}
        self.txn_ids: dict[str, str] = {}  # txn -> transactional id (its invoke names it)
        self.process_ids: dict[Any, str] = {}  # process -> its last txn-init's id
        self.marker_values, self.marker_indices = _example_targets(data.results)
        self.marked: set[tuple[str, str]] = set()

    def bucket(self, t: float) -> Bucket:
        key = int(t / FINE)
        b = self.d.buckets.get(key)
        if b is None:
            b = self.d.buckets[key] = Bucket()
        return b

    def mark(self, kind: str, t: float, value: str, label: str) -> None:
        if (kind, value) not in self.marked:
            self.marked.add((kind, value))
            self.d.markers.append(Marker(kind, t, value, label))

    def feed(self, e: dict[str, Any]) -> None:
        t = float(e.get("time", 0)) / NS
        self.d.end = max(self.d.end, t)
        f, typ = e.get("f"), e.get("type")
        idx = e.get("index")
        if isinstance(idx, int) and idx in self.marker_indices and f == F_SEND:
            self.mark(self.marker_indices[idx], t, str(e.get("value")), f"line {idx}")
        if f == F_SEND:
            self.send(e, t, typ)
        elif f == F_METADATA:
            part = f"{e.get('topic')}/{e.get('partition')}"
            self.d.isr.setdefault(part, []).append((t, len(e.get("isr") or [])))
        elif f == F_TXN:
            self.txn(e, t, typ)
        elif f == F_TXN_INIT and isinstance(e.get("transactional_id"), str):
            self.process_ids[e.get("process")] = e["transactional_id"]
        elif f == F_DRAIN_END and isinstance(e.get("last_stable_offset"), int):
            part = f"{e.get('topic')}/{e.get('partition')}"
            hwm = e.get("high_watermark")
            if isinstance(hwm, int):
                self.d.drain_lso[part] = (hwm, e["last_stable_offset"])

    def txn(self, e: dict[str, Any], t: float, typ: Any) -> None:
        name = str(e.get("txn"))
        tid = e.get("transactional_id")
        if typ == "invoke":
            if not isinstance(tid, str):
                tid = self.process_ids.get(e.get("process"), "?")
            self.txn_ids[name] = tid
            return
        if typ in ("ok", "fail", "info"):
            owner = self.txn_ids.pop(name, tid if isinstance(tid, str) else "?")
            self.d.txn_outcomes.setdefault(owner, []).append((t, str(typ), name))

    def send(self, e: dict[str, Any], t: float, typ: Any) -> None:
        value = str(e.get("value"))
        if typ == "invoke":
            self.invokes[value] = t
            kind = self.marker_values.get(value)
            if kind is not None:
                self.mark(kind, t, value, f"{kind}: {value} (sent)")
            return
        started = self.invokes.pop(value, None)
        if typ not in ("ok", "fail", "info"):
            return
        self.d.totals[typ] += 1
        b = self.bucket(t)
        setattr(b, typ, getattr(b, typ) + 1)
        if typ == "ok" and started is not None and len(b.latencies) < SAMPLES_PER_BUCKET:
            b.latencies.append(max(0.0, t - started))


def load_run_data(run_dir: RunDir | str | Path) -> RunData:
    """Read a run directory; HistoryError when it is not one."""
    rd = RunDir.of(run_dir)
    path = rd.path
    if not path.is_dir():
        raise HistoryError(
            "not a directory" if path.exists() else "no such run directory", file=str(path)
        )
    history = rd.history
    run = rd.load_run(missing_ok=True)
    if not run.present and not history.is_file():
        raise HistoryError(
            f"not a run directory (no {RUN_JSON}, no {HISTORY_JSONL})", file=str(path)
        )
    checked = rd.load_results()
    data = RunData(
        run_dir=rd,
        run=run,
        results=None if checked is None else dict(checked.raw),
        analysis=rd.read_analysis_summary(),
    )
    if checked is not None:
        data.faults = tuple(sorted(checked.fault_windows or (), key=lambda w: w.start_s))
        data.offline = checked.offline_windows or ()
        data.recovery = checked.full_isr or ()
    _stable_offsets(rd, data)
    if history.is_file():
        scanner = _Scanner(data)

        def torn(_message: str) -> None:
            data.torn_lines += 1

        for event in read_events(history, on_torn=torn):
            if event is None:
                data.torn_lines += 1
                continue
            data.events += 1
            scanner.feed(event)
    return data


def _stable_offsets(rd: RunDir, data: RunData) -> None:
    """The LSO lag per partition from the monitor's samples; a run without them (no
    transactions, or from before they were taken) has none. Unreadable samples do not
    stop the page: the reason is kept for it to show."""
    try:
        samples = rd.read_stable_offsets()
    except HistoryError as exc:
        data.lso_note = str(exc)
        return
    for s in samples:
        data.lso_lag.setdefault(f"{s.topic}/{s.partition}", []).append((s.time / NS, s.lag))


@dataclass(frozen=True)
class Series:
    """Display series: time buckets of ``width`` seconds."""

    width: float
    times: list[float]
    ok: list[float]  # per second
    fail: list[float]
    info: list[float]
    p50: list[float | None]  # milliseconds
    p99: list[float | None]


def _pct(sorted_values: list[float], q: float) -> float:
    i = min(len(sorted_values) - 1, max(0, round(q * (len(sorted_values) - 1))))
    return sorted_values[i]


def series(data: RunData, max_points: int = 100) -> Series:
    if not data.buckets:
        return Series(1.0, [], [], [], [], [], [])
    span = (max(data.buckets) + 1) * FINE
    width = FINE
    for candidate in (0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600):
        width = float(candidate)
        if span / width <= max_points:
            break
    merged: dict[int, Bucket] = defaultdict(Bucket)
    for key, b in data.buckets.items():
        m = merged[int(key * FINE / width + 1e-9)]
        m.ok += b.ok
        m.fail += b.fail
        m.info += b.info
        m.latencies.extend(b.latencies)
    out = Series(width, [], [], [], [], [], [])
    for key in range(0, max(merged) + 1):
        b = merged.get(key, Bucket())
        out.times.append(key * width)
        out.ok.append(b.ok / width)
        out.fail.append(b.fail / width)
        out.info.append(b.info / width)
        lat = sorted(b.latencies)
        out.p50.append(_pct(lat, 0.5) * 1000 if lat else None)
        out.p99.append(_pct(lat, 0.99) * 1000 if lat else None)
    return out
