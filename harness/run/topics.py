"""Create a scenario's topics (with an explicit replica assignment where it gives one)."""

from __future__ import annotations

import time

from harness.errors import ClusterError
from harness.scenario.model import TopicConfig


def create_topics(
    bootstrap_servers: str, topics: tuple[TopicConfig, ...], timeout: float = 60.0
) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
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
    for name, future in admin.create_topics(new, request_timeout=timeout).items():
        try:
            future.result(timeout)
        except KafkaException as exc:
            if exc.args[0].name() != "TOPIC_ALREADY_EXISTS":
                raise ClusterError(f"cannot create topic {name}: {exc.args[0].str()}") from None
    deadline = time.monotonic() + timeout
    names = [t.name for t in topics]
    want = {t.name: t.replication_factor for t in topics}
    while True:
        meta = admin.list_topics(timeout=10)
        pending = []
        for name in names:
            tm = meta.topics.get(name)
            if tm is None or tm.error is not None or not tm.partitions:
                pending.append(name)
                continue
            if any(p.leader < 0 or len(p.isrs) < want[name] for p in tm.partitions.values()):
                pending.append(name)
        if not pending:
            return
        if time.monotonic() > deadline:
            raise ClusterError(
                f"topics not ready (leader and full ISR) after {timeout:.0f} s: {pending}"
            )
        time.sleep(0.5)
