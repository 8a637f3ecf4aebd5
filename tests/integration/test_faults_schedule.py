"""A seeded schedule on a real cluster: same seed, same fault lines; lateness printed."""

from __future__ import annotations

from typing import Any

import pytest

from kchaos.bench.faults import bench_spec, percentiles
from kchaos.faults import build_nemesis
from kchaos.harness.cluster import Cluster
from kchaos.harness.rundir.history_writer import ListSink

pytestmark = [pytest.mark.docker, pytest.mark.timeout(300)]


def run_once(c: Cluster, seed: int) -> tuple[list[dict[str, Any]], list[float]]:
    sink = ListSink()
    nemesis = build_nemesis(c, bench_spec(24), sink, seed=seed)
    nemesis.run()
    errors = {r.id: r.error for r in nemesis.records.values() if r.error or r.heal_error}
    assert not errors, errors
    return [e for e in sink.events if e["f"] == "fault"], nemesis.lateness()


def test_same_seed_same_fault_lines_on_a_real_cluster(healthy_cluster: Cluster) -> None:
    a, late_a = run_once(healthy_cluster, 5)
    b, late_b = run_once(healthy_cluster, 5)

    def key(lines: list[dict[str, Any]]) -> list[str]:
        # two faults may start/stop in either order within a millisecond: compare as sets
        return sorted(
            repr((e["id"], e["phase"], e["fault"], e["targets"], e.get("params"))) for e in lines
        )

    assert key(a) == key(b)
    assert len({e["id"] for e in a}) >= 20
    at_a = {e["id"]: e["at"] for e in a if e["phase"] == "start" and e["id"] != "heal"}
    assert at_a == {e["id"]: e["at"] for e in b if e["phase"] == "start" and e["id"] != "heal"}
    # Line times: a start line is written once the fault is in effect, a stop line once
    # healed, so they include the (load-dependent) time the calls took.
    t_a = {(e["id"], e["phase"]): e["time"] for e in a if e["id"] != "heal"}
    t_b = {(e["id"], e["phase"]): e["time"] for e in b if e["id"] != "heal"}
    t0_a, t0_b = t_a[("f-1", "start")], t_b[("f-1", "start")]
    worst = max(abs((t_a[k] - t0_a) - (t_b[k] - t0_b)) for k in t_a)
    print(f"largest difference between the two runs' line offsets: {worst / 1e6:.0f} ms")
    assert worst < 1.0e9
    stats = percentiles(late_a + late_b)
    print(
        f"nemesis lateness over {stats['n']} starts/stops: p50={stats['p50'] * 1000:.1f} ms "
        f"p99={stats['p99'] * 1000:.1f} ms max={stats['max'] * 1000:.1f} ms"
    )
