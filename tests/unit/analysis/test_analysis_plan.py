"""The first stage's plan: the events are shuffled once, by (run, topic, partition).

What the per-partition design is for: a later change that makes the stage shuffle again
(a join or aggregation slipped in before the Arrow pass) fails here, not only in the
benchmark."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kchaos.harness.analysis import anomalies
from kchaos.harness.analysis.load import load_events
from kchaos.harness.analysis.runs import resolve_runs
from kchaos.harness.analysis.tables import build_tables, unpersist
from kchaos.harness.histgen import generate_run

pytestmark = pytest.mark.spark


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" :+-"))


def exchanges_outside_the_cache(plan: str) -> list[str]:
    """The Exchange lines of a printed physical plan, leaving out those of the plans
    of cached tables (printed under their InMemoryRelation, further indented)."""
    found: list[str] = []
    cached_at: int | None = None
    for line in plan.splitlines():
        depth = _indent(line)
        if cached_at is not None and depth > cached_at:
            continue
        cached_at = depth if "InMemoryRelation" in line else None
        if "Exchange" in line:
            found.append(line.strip(" :+-"))
    return found


def test_the_plan_reader_skips_cached_plans() -> None:
    plan = "\n".join(
        [
            "Sort",
            "+- Exchange hashpartitioning(rk, topic, partition, 4)",
            "   +- Union",
            "      :- InMemoryTableScan",
            "      :     +- InMemoryRelation [rk]",
            "      :           +- Exchange hashpartitioning(rk, value, 4)",
            "      +- Generate explode(records)",
        ]
    )
    assert exchanges_outside_the_cache(plan) == [
        "Exchange hashpartitioning(rk, topic, partition, 4)"
    ]


def test_the_first_stage_shuffles_once_by_partition(spark: Any, tmp_path: Path) -> None:
    generate_run(tmp_path / "run", events=3000, partitions=3, seed=4, inject=("duplicate",))
    runs = resolve_runs([tmp_path / "run"])
    loaded = load_events(spark, runs)
    tables = build_tables(loaded.events, {r.key: str(r.history) for r in runs})
    try:
        stage = anomalies.per_partition(tables)
        plan = str(stage._jdf.queryExecution().executedPlan().toString())
        shuffles = exchanges_outside_the_cache(plan)
        assert len(shuffles) == 1, plan
        assert "hashpartitioning(rk" in shuffles[0] and "partition" in shuffles[0]
        assert "FlatMapGroupsInArrow" in plan
    finally:
        unpersist(tables)
        loaded.release()
