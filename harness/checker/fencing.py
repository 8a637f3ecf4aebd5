"""``live-broker-fenced``: the controller fenced a broker that no fault had touched.

KRaft's controller fences a broker whose heartbeats stop for ``broker.session.timeout.ms``.
A fenced broker leaves every ISR, so a fencing is a real event; it is expected when a
fault killed, paused or cut the broker. KAFKA-15489 (before 3.7.0) fences healthy
brokers: a partitioned active controller keeps receiving their heartbeats and does not
resign, and the new leader, which hears none, fences them.

Judged from ``controller.jsonl`` only (the monitor's samples carry no broker state):
without it the kind is unjudged (results.json's ``unjudged``). A broker line is reported when

- it says ``fenced`` true, and the broker's previous line says false, with the same
  ``broker_epoch`` (not -1): the same incarnation lost its session; a re-registration
  (a new epoch) or a broker's first lines at startup never match;
- neither line says ``shutting_down`` (a controlled shutdown ends fenced by design);
- no fault had the broker among its targets from the fault's start to its stop plus the
  session timeout (the controller fences a stopped broker only after that long). Faults
  named ``heal`` are the nemesis undoing what the others did, not disturbances, and are
  not windows; a fault that never stopped is open until the end;
- it is not after the history's last line (the teardown).

Reported, never invalid: a loaded machine can miss heartbeats too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kchaos.harness.checker.controller import BrokerState
from kchaos.harness.checker.facts import Facts, Fault
from kchaos.harness.checker.model import CheckOutcome
from kchaos.harness.checker.recovery import target_brokers
from kchaos.harness.checker.sources import CONTROLLER, Source, read_controller
from kchaos.harness.rundir.names import CONTROLLER_JSONL
from kchaos.harness.rundir.runjson import RunSettings

KIND = "live-broker-fenced"
#: Fault names that restore the cluster rather than disturb it (their targets are every
#: node): not a reason for a fencing.
NOT_DISTURBING = frozenset({"heal"})
_NS = 1e9
#: The monitor's samples carry no broker state: no fallback.
SOURCES = (Source(CONTROLLER, (KIND,)),)


@dataclass(frozen=True)
class Window:
    """One fault's window for the brokers it targets: start to stop plus the grace."""

    fault: Fault
    brokers: frozenset[int]
    start: int
    end: int | None  # None: the fault never stopped

    def covers(self, time: int) -> bool:
        return self.start <= time and (self.end is None or time <= self.end)


def check_fencing(facts: Facts, config: RunSettings) -> CheckOutcome:
    out = CheckOutcome("fencing")
    read_controller(out, facts)
    record = facts.controller
    if record is None:
        out.stats = {
            "source": None,
            "note": f"no {CONTROLLER_JSONL}: fencing not judged (the samples have no brokers)",
        }
        return out.settle()
    grace = config.broker_session_timeout_ms * 1_000_000
    faults = [f for f in facts.faults if f.fault not in NOT_DISTURBING]
    windows = [
        Window(
            f, target_brokers(f), f.start_time, None if f.stop_time is None else f.stop_time + grace
        )
        for f in faults
    ]
    counts = {"fenced": 0, "by_fault": 0, "shutdown": 0, "teardown": 0, KIND: 0}
    for broker, lines in sorted(record.brokers.items()):
        for before, after in zip(lines, lines[1:], strict=False):
            if not _lost_session(before, after):
                continue
            counts["fenced"] += 1
            if before.shutting_down or after.shutting_down:
                counts["shutdown"] += 1
            elif after.time > facts.last_time:
                counts["teardown"] += 1
            elif any(broker in w.brokers and w.covers(after.time) for w in windows):
                counts["by_fault"] += 1
            else:
                counts[KIND] += 1
                out.anomaly(KIND).add(_example(broker, before, after, faults, config))
    out.stats = {
        "source": CONTROLLER_JSONL,
        "broker_session_timeout_ms": config.broker_session_timeout_ms,
        **counts,
    }
    return out.settle()


def _lost_session(before: BrokerState, after: BrokerState) -> bool:
    """The same registration went from unfenced to fenced."""
    return (
        after.fenced
        and not before.fenced
        and after.broker_epoch == before.broker_epoch
        and after.broker_epoch >= 0
    )


def _example(
    broker: int, before: BrokerState, after: BrokerState, faults: list[Fault], config: RunSettings
) -> dict[str, Any]:
    started = [f for f in faults if f.start_time <= after.time]
    open_now = [f for f in started if f.stop_time is None or after.time <= f.stop_time]
    last = max(started, key=lambda f: f.start_time, default=None)
    return {
        "broker": broker,
        "broker_epoch": after.broker_epoch,
        "time_s": round(after.time / _NS, 6),
        "unfenced_since_s": round(before.time / _NS, 6),
        "source": CONTROLLER_JSONL,
        "controller_offsets": [before.offset, after.offset],
        "controller_lines": [before.line, after.line],
        "broker_session_timeout_ms": config.broker_session_timeout_ms,
        # faults open at the time (none targeted this broker, or it would not be here)
        "faults_open": [_fault(f) for f in open_now],
        "last_fault": _fault(last) if last is not None else None,
    }


def _fault(f: Fault) -> dict[str, Any]:
    return {
        "id": f.id,
        "fault": f.fault,
        "targets": list(f.targets),
        "start_s": round(f.start_time / _NS, 6),
        "stop_s": None if f.stop_time is None else round(f.stop_time / _NS, 6),
        "index": [f.start_index] + ([f.stop_index] if f.stop_index is not None else []),
    }
