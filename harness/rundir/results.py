"""``results.json``: the checker's verdict and the series it derived, as typed data.

The checker writes results.json (``kchaos check``); the reports, ``kchaos shrink`` and the
analysis tables read it through :func:`load_results`. The series a report plots over time
are the checker's own, so a page never shows a number the verdict does not rest on:

* :attr:`Results.offline_windows`: stretches without a leader, per partition
  (``stats.availability.offline_windows``; from controller.jsonl where the run has one);
* :attr:`Results.full_isr`: for each fault's actual stop, the seconds until every
  observed partition had its full ISR again (``stats.availability.full_isr_after_fault``);
* :attr:`Results.fault_windows`: each fault's start and stop as the history records them
  (``stats.availability.sends.per_fault``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from kchaos.harness.errors import HistoryError, shown
from kchaos.harness.rundir.files import read_object
from kchaos.harness.rundir.names import RESULTS_JSON as RESULTS_JSON  # re-exported

#: A run's verdict, results.json's ``valid``: valid, invalid, or "unknown" (nothing proven
#: either way). The one definition: the checker gives one, a scenario's ``expect.valid``
#: names the one it wants.
Verdict = bool | Literal["unknown"]


@dataclass(frozen=True)
class OfflineWindow:
    """A stretch in which a partition had no leader."""

    topic: str
    partition: int
    start_s: float
    length_s: float
    open: bool = False  # still without a leader at the end of the run

    @property
    def name(self) -> str:
        return f"{self.topic}/{self.partition}"


@dataclass(frozen=True)
class FullIsr:
    """Time from a fault's actual stop until every observed partition had a full ISR."""

    id: str
    fault: str
    stop_s: float
    seconds: float | None  # None: never within the run, or not measurable (``unknown``)
    unknown: bool = False  # nothing described the partitions: no record, no samples
    source: str | None = None  # "controller", "samples" or "controller+samples"


@dataclass(frozen=True)
class FaultWindow:
    """One fault as the history records it: its start line and its stop line."""

    id: str
    fault: str
    targets: tuple[str, ...]
    start_s: float
    stop_s: float | None  # None: never stopped in the history
    error: str | None = None  # the fault could not start (its start line says why)


@dataclass(frozen=True)
class Results:
    """A results.json. ``raw`` is the whole file; series are None where it lacks them."""

    raw: Mapping[str, Any]
    source: str
    valid: bool | str | None
    anomalies: Mapping[str, Any]
    offline_windows: tuple[OfflineWindow, ...] | None
    full_isr: tuple[FullIsr, ...] | None
    fault_windows: tuple[FaultWindow, ...] | None

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], source: str = RESULTS_JSON) -> Results:
        stats = data.get("stats")
        avail = stats.get("availability") if isinstance(stats, Mapping) else None
        avail = avail if isinstance(avail, Mapping) else {}
        sends = avail.get("sends")
        anomalies = data.get("anomalies")
        return cls(
            raw=data,
            source=source,
            valid=data.get("valid"),
            anomalies=anomalies if isinstance(anomalies, Mapping) else {},
            offline_windows=_series(
                avail.get("offline_windows"), _offline, source, "offline_windows"
            ),
            full_isr=_series(
                avail.get("full_isr_after_fault"), _full, source, "full_isr_after_fault"
            ),
            fault_windows=_series(
                sends.get("per_fault") if isinstance(sends, Mapping) else None,
                _fault,
                source,
                "sends.per_fault",
            ),
        )


def load_results(run_dir: str | Path) -> Results | None:
    """``run_dir/results.json`` typed; None when the run has not been checked."""
    path = Path(run_dir) / RESULTS_JSON
    data = read_object(path)
    return None if data is None else Results.from_mapping(data, str(path))


def _series(items: Any, make: Any, source: str, name: str) -> Any:
    if items is None:
        return None
    field = f"stats.availability.{name}"
    if not isinstance(items, list):
        raise HistoryError(f"expected a list, got {shown(items)}", file=source, field=field)
    out = []
    for i, item in enumerate(items):
        try:
            out.append(make(item))
        except (KeyError, TypeError, ValueError, AttributeError):
            raise HistoryError(
                f"an entry lacks a field or has one of the wrong type: {shown(item)}",
                file=source,
                field=f"{field}.{i}",
            ) from None
    return tuple(out)


def _offline(w: Mapping[str, Any]) -> OfflineWindow:
    return OfflineWindow(
        str(w["topic"]),
        int(w["partition"]),
        float(w["start_s"]),
        float(w["length_s"]),
        bool(w.get("open", False)),
    )


def _full(f: Mapping[str, Any]) -> FullIsr:
    secs = f["seconds"]
    source = f.get("source")
    return FullIsr(
        str(f["id"]),
        str(f["fault"]),
        float(f["stop_s"]),
        None if secs is None else float(secs),
        bool(f.get("unknown", False)),
        None if source is None else str(source),
    )


def _fault(f: Mapping[str, Any]) -> FaultWindow:
    stop = f["stop_s"]
    error = f.get("error")
    return FaultWindow(
        str(f["id"]),
        str(f["fault"]),
        tuple(str(t) for t in f.get("targets") or ()),
        float(f["start_s"]),
        None if stop is None else float(stop),
        None if error is None else str(error),
    )
