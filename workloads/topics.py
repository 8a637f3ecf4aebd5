"""Topic creation for workloads, tests and benchmarks (idempotent)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from harness.errors import WorkloadError


def ensure_topics(
    bootstrap_servers: str,
    topics: Sequence[str],
    *,
    partitions: int = 3,
    replication_factor: int = 3,
    configs: Mapping[str, str] | None = None,
    timeout: float = 60.0,
) -> None:
    """Create ``topics`` unless they exist, then wait until every partition has a leader."""
    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    new = [
        NewTopic(t, num_partitions=partitions, replication_factor=replication_factor,
                 config=dict(configs or {}))
        for t in topics
    ]  # fmt: skip
    for topic, future in admin.create_topics(new, request_timeout=timeout).items():
        try:
            future.result(timeout)
        except KafkaException as exc:
            if exc.args[0].name() != "TOPIC_ALREADY_EXISTS":
                raise WorkloadError(f"cannot create topic {topic}: {exc}") from exc
    deadline = time.monotonic() + timeout
    while True:
        meta = admin.list_topics(timeout=10)
        missing = [
            t
            for t in topics
            if t not in meta.topics
            or meta.topics[t].error is not None
            or not meta.topics[t].partitions
            or any(p.leader < 0 for p in meta.topics[t].partitions.values())
        ]
        if not missing:
            return
        if time.monotonic() > deadline:
            raise WorkloadError(f"topics without leaders after {timeout:.0f} s: {missing}")
        time.sleep(0.5)
