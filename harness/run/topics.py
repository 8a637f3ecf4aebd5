"""Create a scenario's topics (with an explicit replica assignment where it gives one)."""

from __future__ import annotations

from kchaos.harness.errors import ClusterError, WorkloadError
from kchaos.harness.scenario.model import TopicConfig


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
