"""Everything the reports need from one run directory, read in one streaming pass.

Inputs (format v1, see history-format.md): ``run.json``, ``history.jsonl``,
``results.json`` and, when present, ``analysis/summary.json``. The history is never held
in memory: sends are counted into fine time buckets (0.1 s) with a capped latency sample
per bucket, and only the send times of values named in the verdict's examples are kept.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from kchaos.harness.errors import HistoryError

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
class FaultWindow:
    id: str
    fault: str
    targets: tuple[str, ...]
    start: float
    stop: float | None  # None: never stopped in the history
    error: str | None = None  # the fault could not start (its start line says why)


@dataclass(frozen=True)
class Marker:
    kind: str  # anomaly kind
    time: float
    value: str
    label: str


@dataclass
class RunData:
    run_dir: Path
    run: dict[str, Any]
    results: dict[str, Any] | None
    analysis: dict[str, Any] | None
    buckets: dict[int, Bucket] = field(default_factory=dict)
    faults: list[FaultWindow] = field(default_factory=list)
    isr: dict[str, list[tuple[float, int]]] = field(default_factory=dict)  # "t/0" -> points
    offline: list[tuple[str, float, float]] = field(default_factory=list)  # part, start, len
    recovery: list[tuple[str, float, float | None]] = field(default_factory=list)
    markers: list[Marker] = field(default_factory=list)
    end: float = 0.0
    events: int = 0
    torn_lines: int = 0
    totals: dict[str, int] = field(default_factory=lambda: {"ok": 0, "fail": 0, "info": 0})

    @property
    def run_id(self) -> str:
        return str(self.run.get("run_id") or self.run_dir.name)

    @property
    def scenario_name(self) -> str:
        sc = self.run.get("scenario")
        if isinstance(sc, Mapping):
            return str(sc.get("name", "?"))
        return str(self.run.get("scenario_name", sc or "?"))

    @property
    def expect(self) -> dict[str, Any]:
        sc = self.run.get("scenario")
        if isinstance(sc, Mapping) and isinstance(sc.get("expect"), Mapping):
            return dict(sc["expect"])
        return dict(self.run.get("expect") or {})


def read_json(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        data = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise HistoryError(f"not valid JSON: {exc}", file=str(path)) from None
    if not isinstance(data, dict):
        raise HistoryError("expected a JSON object", file=str(path), line=1)
    return data


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any] | None]]:
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                event = orjson.loads(raw)
            except orjson.JSONDecodeError:
                yield lineno, None
                continue
            yield lineno, event if isinstance(event, dict) else None


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
        self.open_faults: dict[str, dict[str, Any]] = {}
        self.isr_full: dict[str, bool] = {}
        self.offline_since: dict[str, float] = {}
        self.pending_recovery: list[tuple[str, float]] = []
        # Scheduled length of each fault (run.json "schedule"): recovery is measured from
        # the planned heal, so a slow restart (log recovery) counts in it.
        self.planned: dict[str, float] = {
            str(f.get("id")): float(f.get("for") or 0.0)
            for f in data.run.get("schedule") or []
            if isinstance(f, Mapping)
        }
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
        if isinstance(idx, int) and idx in self.marker_indices and f == "send":
            self.mark(self.marker_indices[idx], t, str(e.get("value")), f"line {idx}")
        if f == "send":
            self.send(e, t, typ)
        elif f == "fault":
            self.fault(e, t)
        elif f == "metadata":
            self.metadata(e, t)

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

    def fault(self, e: dict[str, Any], t: float) -> None:
        fid = str(e.get("id"))
        if e.get("phase") == "start":
            self.open_faults[fid] = {
                "fault": str(e.get("fault")),
                "start": t,
                "targets": tuple(map(str, e.get("targets") or ())),
                "error": e.get("error"),
            }
        elif e.get("phase") == "stop":
            opened = self.open_faults.pop(fid, None)
            if opened is not None:
                self.d.faults.append(
                    FaultWindow(
                        fid, opened["fault"], opened["targets"], opened["start"], t, opened["error"]
                    )
                )
            healed = t
            if opened is not None and fid in self.planned:
                healed = min(t, opened["start"] + self.planned[fid])
            self.pending_recovery.append((fid, healed))

    def metadata(self, e: dict[str, Any], t: float) -> None:
        part = f"{e.get('topic')}/{e.get('partition')}"
        isr = e.get("isr") or []
        replicas = e.get("replicas") or isr
        self.d.isr.setdefault(part, []).append((t, len(isr)))
        self.isr_full[part] = len(isr) >= len(replicas) and e.get("leader", -1) != -1
        if e.get("leader", -1) == -1:
            self.offline_since.setdefault(part, t)
        elif part in self.offline_since:
            start = self.offline_since.pop(part)
            self.d.offline.append((part, start, t - start))
        if self.pending_recovery and all(self.isr_full.values()):
            for fid, stopped in self.pending_recovery:
                self.d.recovery.append((fid, stopped, t - stopped))
            self.pending_recovery.clear()

    def finish(self) -> None:
        for fid, f in self.open_faults.items():
            self.d.faults.append(
                FaultWindow(fid, f["fault"], f["targets"], f["start"], None, f["error"])
            )
        for part, start in self.offline_since.items():
            self.d.offline.append((part, start, self.d.end - start))
        for fid, stopped in self.pending_recovery:
            self.d.recovery.append((fid, stopped, None))
        self.d.faults.sort(key=lambda w: w.start)


def load_run(run_dir: str | Path) -> RunData:
    """Read a run directory; HistoryError when it is not one."""
    path = Path(run_dir)
    if not path.is_dir():
        raise HistoryError(
            "not a directory" if path.exists() else "no such run directory", file=str(path)
        )
    history = path / "history.jsonl"
    run = read_json(path / "run.json")
    if run is None and not history.is_file():
        raise HistoryError("not a run directory (no run.json, no history.jsonl)", file=str(path))
    data = RunData(
        run_dir=path,
        run=run or {},
        results=read_json(path / "results.json"),
        analysis=read_json(path / "analysis" / "summary.json"),
    )
    if history.is_file():
        scanner = _Scanner(data)
        for _, event in _lines(history):
            if event is None:
                data.torn_lines += 1
                continue
            data.events += 1
            scanner.feed(event)
        scanner.finish()
    checked = _checked_offline(data.results)
    if checked is not None:
        data.offline = checked
    return data


def _checked_offline(results: Mapping[str, Any] | None) -> list[tuple[str, float, float]] | None:
    """The checker's offline windows (from the controller's record where the run has
    one), so the report shows what the verdict rests on; None when results lack them."""
    stats = (results or {}).get("stats")
    availability = stats.get("availability") if isinstance(stats, Mapping) else None
    windows = availability.get("offline_windows") if isinstance(availability, Mapping) else None
    if not isinstance(windows, list):
        return None
    out = []
    for w in windows:
        if isinstance(w, Mapping):
            start, length = w.get("start_s"), w.get("length_s")
            if isinstance(start, int | float) and isinstance(length, int | float):
                out.append((f"{w.get('topic')}/{w.get('partition')}", float(start), float(length)))
    return out


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
