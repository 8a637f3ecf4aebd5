"""``kchaos bench faults``, the measuring: how late the nemesis starts and stops faults
against its schedule, on a real cluster, as p50 / p99 / max, next to a baseline run of the same
schedule whose faults do nothing (the runner's own timer error), and their ratio.

The schedule is random and seeded (default 60 faults of latency, bandwidth, timeout and
SIGSTOP pause, 0.2-0.6 s each, up to 2 at a time), so the same command runs the same
faults. Lateness of a start or stop = when the nemesis began it - when it was scheduled.
A stop cannot begin before its start has finished, so a start that takes longer than the
fault's duration (many HTTP calls on a loaded machine) shows up as a late stop.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from kchaos.faults.base import Fault, FaultSpec
from kchaos.faults.nemesis import Nemesis
from kchaos.faults.schedule import Schedule, from_spec
from kchaos.harness.cluster.api import ClusterHandle


def bench_spec(faults: int) -> dict[str, Any]:
    span = faults * 0.45 / 2 + 2
    return {
        "type": "random",
        "start_s": 0.5,
        "duration_s": span,
        "fault_s": [0.2, 0.6],
        "quiet_s": [0.02, 0.1],
        "concurrency": 2,
        "stagger_s": 0.1,
        "faults": [
            {"fault": "latency", "target": ["random", "all"], "params": {"latency_ms": 50}},
            {"fault": "bandwidth", "params": {"rate_kbps": 256, "link": "replication"}},
            {"fault": "timeout", "params": {"link": "controller", "direction": "upstream"}},
            {"fault": "pause", "target": "random"},
        ],
    }


class _Noop(Fault):
    name = "noop"
    family = "none"

    def _start(self) -> None:
        pass

    def _stop(self) -> None:
        pass


def _noop_factory(cluster: ClusterHandle, spec: FaultSpec) -> Fault:
    return _Noop(cluster, [cluster.nodes[0]], {}, fault_id=spec.id)


class _NullSink:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def append(self, event: dict[str, Any]) -> dict[str, Any]:
        self.events.append(event)
        return event


def percentiles(values: Sequence[float]) -> dict[str, float]:
    ordered = sorted(values)
    if not ordered:
        return {"p50": 0.0, "p99": 0.0, "max": 0.0, "n": 0}
    q = statistics.quantiles(ordered, n=100, method="inclusive") if len(ordered) > 1 else []
    return {
        "p50": statistics.median(ordered),
        "p99": q[98] if q else ordered[0],
        "max": ordered[-1],
        "n": len(ordered),
    }


def run_bench(cluster: ClusterHandle, faults: int = 60, seed: int = 1) -> dict[str, Any]:
    schedule: Schedule = from_spec(bench_spec(faults), seed=seed)
    base = Nemesis(
        cluster, schedule, _NullSink(), final_heal=False, protect=False, factory=_noop_factory
    )
    base.run()
    real = Nemesis(cluster, schedule, _NullSink(), final_heal=True)
    real.run()
    errors = [r.error for r in real.records.values() if r.error]
    b, r = percentiles(base.lateness()), percentiles(real.lateness())
    recs = real.records.values()
    starts = percentiles([x.start_late for x in recs if x.start_late is not None])
    stops = percentiles([x.stop_late for x in recs if x.stop_late is not None])
    return {
        "faults": len(schedule.faults),
        "baseline_ms": {k: v * 1000 if k != "n" else v for k, v in b.items()},
        "nemesis_ms": {k: v * 1000 if k != "n" else v for k, v in r.items()},
        "starts_ms": {k: v * 1000 if k != "n" else v for k, v in starts.items()},
        "stops_ms": {k: v * 1000 if k != "n" else v for k, v in stops.items()},
        "ratio_p99": (r["p99"] / b["p99"]) if b["p99"] > 0 else float("inf"),
        "errors": errors,
        "heal_actions": real.heal_actions,
    }
