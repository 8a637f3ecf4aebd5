"""The controller's story of a run: per partition, every committed change of leader, ISR
and ELR, interleaved with broker registrations (a new broker epoch), fencing and the
nemesis's fault windows, from ``controller.jsonl`` (history format 1.1).

Read through the checker's own reader, so the report and the verdict share one truth;
elections are classified by the same rule the checker uses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from kchaos.harness.checker.controller import (
    BrokerState,
    ControllerRecord,
    PartitionState,
    classify,
    read_controller,
)
from kchaos.harness.errors import HistoryError
from kchaos.harness.rundir.names import CONTROLLER_JSONL
from kchaos.harness.rundir.results import FaultWindow
from kchaos.harness.rundir.rundir import RunDir

MAX_ROWS = 400  # per partition table; a long run's tail is summarised


@dataclass(frozen=True)
class Row:
    time: float  # seconds since the run started
    offset: int | None  # metadata log offset (None for fault lines)
    what: str
    detail: str
    css: str = ""


def load(run_dir: RunDir) -> ControllerRecord | None | str:
    """The record, None when the run has none, or the reason it cannot be read."""
    path = run_dir.controller
    if not path.is_file():
        return None
    try:
        return read_controller(path)
    except HistoryError as exc:
        return str(exc)


def _ids(ids: tuple[int, ...]) -> str:
    return "[" + ",".join(map(str, ids)) + "]"


def partition_rows(states: list[PartitionState]) -> list[Row]:
    rows: list[Row] = []
    prev: PartitionState | None = None
    for s in states:
        state = f"leader {s.leader} (epoch {s.leader_epoch}) ISR {_ids(s.isr)}"
        if s.elr or s.last_known_elr:
            state += f" ELR {_ids(s.elr)} last known ELR {_ids(s.last_known_elr)}"
        if s.recovering:
            state += " RECOVERING"
        what, css = "created" if prev is None else "change", ""
        if prev is not None:
            if s.leader < 0 <= prev.leader:
                what, css = "offline", "bad"
            elif s.leader >= 0 and s.leader != prev.leader:
                kind = classify(prev, s)
                what = f"{kind} election"
                css = "bad" if kind == "unclean" else "warn" if kind != "clean" else "ok"
            elif len(s.isr) < len(prev.isr):
                what = "ISR shrink"
            elif len(s.isr) > len(prev.isr):
                what = "ISR expand"
        rows.append(Row(s.time / 1e9, s.offset, what, state, css))
        prev = s
    return rows


def broker_rows(record: ControllerRecord) -> list[Row]:
    rows: list[Row] = []
    for broker, states in record.brokers.items():
        prev: BrokerState | None = None
        for s in states:
            if prev is None or s.broker_epoch != prev.broker_epoch:
                if s.broker_epoch < 0:
                    what, css = f"broker {broker} unregistered", "warn"
                else:
                    what, css = f"broker {broker} registered", "warn" if prev else ""
                detail = f"broker epoch {s.broker_epoch}"
            elif s.fenced != prev.fenced:
                what = f"broker {broker} {'fenced' if s.fenced else 'unfenced'}"
                css, detail = ("bad" if s.fenced else ""), f"broker epoch {s.broker_epoch}"
            elif s.shutting_down != prev.shutting_down:
                what, css = f"broker {broker} controlled shutdown", ""
                detail = f"broker epoch {s.broker_epoch}"
            else:
                prev = s
                continue
            rows.append(Row(s.time / 1e9, s.offset, what, detail, css))
            prev = s
    return rows


def fault_rows(faults: Sequence[FaultWindow]) -> list[Row]:
    rows = []
    for f in faults:
        targets = ", ".join(f.targets)
        rows.append(Row(f.start_s, None, f"fault {f.id} start", f"{f.fault} on {targets}", "warn"))
        if f.stop_s is not None:
            rows.append(Row(f.stop_s, None, f"fault {f.id} stop", f"{f.fault} healed"))
    return rows


def render(run_dir: RunDir, faults: Sequence[FaultWindow]) -> str:
    """The "Controller timeline" section of report.html ("" when there is no record)."""
    from kchaos.reports.html import table  # the page's own table helper

    record = load(run_dir)
    if record is None:
        return ""
    head = "<h2>Controller timeline</h2>"
    if isinstance(record, str):
        return head + f"<p class='bad'>{escape(record)}</p>"
    context = broker_rows(record) + fault_rows(faults)
    parts = [
        head,
        f"<p class='muted'>From the KRaft metadata log (<a href='{CONTROLLER_JSONL}'>"
        f"{CONTROLLER_JSONL}</a>): each committed change of a partition, with broker "
        "registrations, fencing and fault windows. Elections are classified as the "
        "checker classifies them.</p>",
    ]
    every = [(key, states, False) for key, states in record.partitions.items()]
    every += [(key, states, True) for key, states in record.incomplete.items()]
    for (topic, part), states, incomplete in sorted(every):
        rows = sorted(partition_rows(states) + context, key=lambda r: (r.time, r.offset or 0))
        shown = rows[:MAX_ROWS]
        parts.append(f"<h3>{escape(topic)}/{part}</h3>")
        if incomplete:
            parts.append(
                "<p class='bad'>Incomplete: a metadata record could not be decoded, so these "
                "states may be wrong; the checker judged this partition from the monitor's "
                "samples.</p>"
            )
        parts.append(
            table(
                ["time s", "log offset", "event", "state"],
                (
                    [
                        f"{r.time:.3f}",
                        "" if r.offset is None else r.offset,
                        escape(r.what),
                        escape(r.detail),
                    ]
                    for r in shown
                ),
                [r.css for r in shown],
            )
        )
        if len(rows) > MAX_ROWS:
            parts.append(f"<p class='muted'>{len(rows) - MAX_ROWS} more rows in the file.</p>")
    return "\n".join(parts)
