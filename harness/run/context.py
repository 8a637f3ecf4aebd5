"""``RunContext``: what the phases of one run share, typed.

:func:`kchaos.harness.run.orchestrate.run_scenario` builds one once the cluster has
started and hands it to the phases that follow (driving the workload and the nemesis,
collecting the evidence before teardown), instead of five positional arguments.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kchaos.harness.cluster.api import ClusterHandle
    from kchaos.harness.run.progress import RunProgress
    from kchaos.harness.run.record import RunRecord
    from kchaos.harness.rundir.rundir import RunDir
    from kchaos.harness.rundir.scenario_model import Scenario
    from kchaos.workloads.metrics import HarnessMetrics


@dataclass(frozen=True)
class RunContext:
    """One run in progress: its scenario, its cluster, its directory, its progress
    display, its run.json and (with ``--prometheus`` or KCHAOS_METRICS_PORT) the harness's
    metrics."""

    scenario: Scenario
    # the whole handle: the nemesis builds faults on it, and a fault may act on anything
    cluster: ClusterHandle
    run_dir: RunDir
    progress: RunProgress
    record: RunRecord
    metrics: HarnessMetrics | None = None
