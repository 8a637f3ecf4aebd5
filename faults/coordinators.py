"""Which broker coordinates a transactional id or a consumer group, found as Kafka finds it.

Kafka keeps each transactional id's state in one partition of ``__transaction_state`` and
each group's in one partition of ``__consumer_offsets``; the broker leading that partition
is the coordinator. The partition is ``abs(key.hashCode()) % partitions``, with Java's
``String.hashCode`` and Kafka's ``Utils.abs`` (which maps Integer.MIN_VALUE to 0): see
``TransactionStateManager.partitionFor`` and ``GroupCoordinatorService.partitionFor`` in
Kafka's source. The partition count is read from the live cluster (the internal topic's
metadata), never assumed from a config default, so ``coordinator:`` targets follow
failovers exactly like ``leader:`` targets.
"""

from __future__ import annotations

from dataclasses import dataclass

from kchaos.harness.cluster.api import Leadership
from kchaos.harness.errors import ClusterError, FaultError

#: ``coordinator:KIND:KEY`` kinds and the internal topic each one's state lives in.
TOPICS: dict[str, str] = {"txn": "__transaction_state", "group": "__consumer_offsets"}

_INT_MIN = -(2**31)


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode``: over UTF-16 code units, wrapping at 32 bits (signed)."""
    h = 0
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def kafka_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: the absolute value, except that Integer.MIN_VALUE gives 0."""
    return 0 if n == _INT_MIN else abs(n)


def coordinator_partition(key: str, partitions: int) -> int:
    """The internal topic's partition that holds ``key``'s state."""
    if partitions < 1:
        raise ValueError(f"partitions must be >= 1, got {partitions}")
    return kafka_abs(java_string_hash(key)) % partitions


@dataclass(frozen=True)
class CoordinatorKey:
    """A transactional id (``txn``) or a consumer group (``group``)."""

    kind: str
    key: str

    @property
    def topic(self) -> str:
        return TOPICS[self.kind]

    def __str__(self) -> str:
        return f"{self.kind}:{self.key}"


def parse_key(text: str) -> CoordinatorKey:
    """``txn:ID`` or ``group:NAME`` (the id may itself hold colons); ValueError otherwise."""
    kind, sep, key = text.partition(":")
    if not sep or kind not in TOPICS or not key:
        raise ValueError(f"expected txn:TRANSACTIONAL_ID or group:GROUP, got {text!r}")
    return CoordinatorKey(kind, key)


def coordinator_topic_partition(cluster: Leadership, key: CoordinatorKey) -> tuple[str, int]:
    """(internal topic, partition) holding ``key``'s state, from the live partition count."""
    try:
        count = int(cluster.partition_count(key.topic))
    except ClusterError as exc:
        raise FaultError(f"coordinator:{key}: {exc}") from exc
    return key.topic, coordinator_partition(key.key, count)


def coordinator_node(cluster: Leadership, key: CoordinatorKey) -> int:
    """Node id of ``key``'s coordinator right now (FaultError when it has none)."""
    topic, partition = coordinator_topic_partition(cluster, key)
    try:
        return int(cluster.partition_leader(topic, partition))
    except ClusterError as exc:
        raise FaultError(f"coordinator:{key} ({topic}-{partition}): {exc}") from exc
