"""A scenario's topics: created (with an explicit replica assignment where it gives one),
and after the faults, given time to get their whole ISR back."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from kchaos.harness.errors import ClusterError, ReadinessTimeout, WorkloadError
from kchaos.harness.rundir.scenario_model import Scenario, TopicConfig

if TYPE_CHECKING:
    from kchaos.harness.cluster.api import NodeLifecycle

log = logging.getLogger(__name__)


def create_topics(
    bootstrap_servers: str, topics: tuple[TopicConfig, ...], timeout: float = 60.0
) -> None:
    """Create the topics and wait until every partition has a leader and a full ISR."""
    from confluent_kafka.admin import NewTopic

    from kchaos.workloads.topics import create_new_topics

    new = []
    for t in topics:
        if t.assignment:
            # confluent-kafka wants the partition count next to an explicit assignment
            # (and no replication factor); the broker takes the assignment as given.
            new.append(
                NewTopic(
                    t.name,
                    num_partitions=len(t.assignment),
                    replica_assignment=[list(r) for r in t.assignment],
                    config=dict(t.configs),
                )
            )
        else:
            new.append(
                NewTopic(
                    t.name,
                    num_partitions=t.partitions,
                    replication_factor=t.replication_factor,
                    config=dict(t.configs),
                )
            )
    try:
        create_new_topics(
            bootstrap_servers,
            new,
            full_isr={t.name: t.replication_factor for t in topics},
            timeout=timeout,
        )
    except WorkloadError as exc:
        raise ClusterError(str(exc)) from None


def await_full_isr(cluster: NodeLifecycle, sc: Scenario) -> dict[str, Any] | None:
    """With a time-to-full-ISR SLO (``checks.max_time_to_full_isr_seconds``), wait up to
    that long, after the final heal and before the drain, for every partition of the
    scenario's topics to have its whole replica set in the ISR again.

    The SLO is judged on the controller's record, which ends with the run: without the
    wait, a run that ended before a slow follower caught up (a restarted broker fetching
    the log written while it was down, behind a leader still busy with the last produces)
    failed the SLO as "never full" after a few seconds of drain, whatever the threshold.
    A timeout is not an error here: the checker judges what the record shows. Returns what
    run.json keeps (``full_isr_wait``: the seconds waited and whether the ISR was full), or
    None without the SLO."""
    limit = sc.checks.max_time_to_full_isr_seconds
    if limit is None or not sc.topics:
        return None
    started = time.monotonic()
    full = True
    try:
        cluster.wait_isr_full([t.name for t in sc.topics], timeout=limit)
    except ReadinessTimeout as exc:
        full = False
        log.warning("ISR still not full %.0f s after the final heal: %s", limit, exc)
    return {"seconds": round(time.monotonic() - started, 3), "full": full}
