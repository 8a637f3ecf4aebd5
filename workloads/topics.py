"""Topic creation for workloads, the runner, tests and benchmarks (idempotent)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from kchaos.harness.cluster.wait import Until
from kchaos.harness.errors import WaitTimeout, WorkloadError


def create_new_topics(
    bootstrap_servers: str,
    new: Sequence[NewTopic],
    *,
    full_isr: Mapping[str, int] | None = None,
    timeout: float = 60.0,
) -> None:
    """Create ``new`` unless they exist, then wait until every partition has a leader.

    ``full_isr`` maps a topic to the ISR size each of its partitions must also reach.
    """
    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    futures = admin.create_topics(list(new), request_timeout=timeout)
    _settle(futures, timeout, "create", fine="TOPIC_ALREADY_EXISTS")
    names = [t.topic for t in new]
    want = dict(full_isr or {})
    what = "leader and full ISR" if want else "a leader"

    def unready() -> str | None:
        meta = admin.list_topics(timeout=10)
        pending = []
        for name in names:
            tm = meta.topics.get(name)
            ready = (
                tm is not None
                and tm.error is None
                and bool(tm.partitions)
                and all(
                    p.leader >= 0 and len(p.isrs) >= want.get(name, 0)
                    for p in tm.partitions.values()
                )
            )
            if not ready:
                pending.append(name)
        return str(pending) if pending else None

    try:
        Until(f"topics with {what}", unready, timeout=timeout, interval=0.5).wait_until_ready()
    except WaitTimeout as exc:
        raise WorkloadError(f"topics without {what} after {timeout:.0f} s: {exc.last}") from None


def ensure_topics(
    bootstrap_servers: str,
    topics: Sequence[str],
    *,
    partitions: int = 3,
    replication_factor: int = 3,
    configs: Mapping[str, str] | None = None,
    timeout: float = 60.0,
) -> None:
    """Create ``topics`` alike unless they exist, then wait until every partition has a leader."""
    new = [
        NewTopic(t, num_partitions=partitions, replication_factor=replication_factor,
                 config=dict(configs or {}))
        for t in topics
    ]  # fmt: skip
    create_new_topics(bootstrap_servers, new, timeout=timeout)


def delete_topics(bootstrap_servers: str, topics: Sequence[str], timeout: float = 60.0) -> None:
    """Delete ``topics`` (missing ones are fine); returns once the controller accepted."""
    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    futures = admin.delete_topics(list(topics), request_timeout=timeout)
    _settle(futures, timeout, "delete", fine="UNKNOWN_TOPIC_OR_PART")


def _settle(futures: Mapping[str, Any], timeout: float, verb: str, *, fine: str) -> None:
    """Wait for each topic's admin result; the error named ``fine`` is not one."""
    for topic, future in futures.items():
        try:
            future.result(timeout)
        except KafkaException as exc:
            if exc.args[0].name() != fine:
                raise WorkloadError(f"cannot {verb} topic {topic}: {exc.args[0].str()}") from None
