"""The leadership family: planned leadership changes, preferred elections and reassignments.

Not faults in the crash sense, but the nemesis schedules them like faults, so they are a
family of the faults registry and are recorded as ``fault`` lines. They leave nothing to
heal. Both use Kafka's admin protocol through the client proxies (no JVM tool
to start, so they take effect within a second of their scheduled time).

``preferred-election``  elect every partition's preferred leader (ElectLeaders,
                        PREFERRED): leadership returns to each partition's first replica.
``reassign``            rotate the replica list of every partition of ``topic`` by one
                        (same replicas, new preferred leader) with AlterPartition-
                        Reassignments, then elect the preferred leaders: every leader
                        moves, in the most orderly way Kafka offers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kchaos.faults.base import Fault, register
from kchaos.faults.params import Param
from kchaos.harness.cluster.wait import Until
from kchaos.harness.errors import FaultError, WaitTimeout

TIMEOUT_S = 30.0


def elect_preferred(bootstrap_servers: str, topic: str | None = None) -> dict[str, str]:
    """Preferred-leader election (all partitions, or one topic's); partition -> outcome."""
    from confluent_kafka import ElectionType, KafkaException, TopicPartition

    admin = _admin(bootstrap_servers)
    parts = None
    if topic:
        meta = admin.list_topics(topic=topic, timeout=10)
        parts = [TopicPartition(topic, p) for p in sorted(meta.topics[topic].partitions)]
    try:
        result = admin.elect_leaders(ElectionType.PREFERRED, parts).result(TIMEOUT_S)
    except KafkaException as exc:
        raise FaultError(f"preferred election failed: {exc.args[0].str()}") from None
    outcomes = _partition_errors(result or {}, lambda err: str(err.name()))
    return {part: error or "elected" for part, error in outcomes.items()}


def _admin(bootstrap_servers: str) -> Any:
    """A confluent-kafka AdminClient that logs errors only."""
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap_servers, "log_level": "3"})


def _partition_errors(
    results: Mapping[Any, Any], error_name: Callable[[Any], str]
) -> dict[str, str | None]:
    """An admin call's per-partition results (a TopicPartition -> its error, None where it
    succeeded) keyed ``topic/partition``: the error's name, or None."""
    return {
        f"{tp.topic}/{tp.partition}": None if err is None else error_name(err)
        for tp, err in results.items()
    }


def rotated(replicas: list[int]) -> list[int]:
    return replicas[1:] + replicas[:1] if len(replicas) > 1 else list(replicas)


@register
class PreferredElection(Fault):
    """Elect the preferred leader of every partition (or of ``params.topic``'s)."""

    name = "preferred-election"
    family = "leadership"
    summary = "elect every partition's preferred leader"
    default_target = "none"
    min_targets = 0
    params_spec = (Param("topic", "str", "", "only this topic's partitions (empty: all)"),)

    def _start(self) -> None:
        self.detail = {
            "election": elect_preferred(
                self.cluster.bootstrap_servers, self.params.get("topic") or None
            )
        }

    def _stop(self) -> None:
        return None


@register
class Reassign(Fault):
    """Rotate the replica list of every partition of ``params.topic``, wait until Kafka
    has moved them, then elect the preferred leaders: every leader moves."""

    name = "reassign"
    family = "leadership"
    summary = "rotate every partition's replica order, then elect preferred leaders"
    default_target = "none"
    min_targets = 0
    params_spec = (Param("topic", "str", "", "the topic whose partitions move (required)"),)

    def _start(self) -> None:
        from kafka import KafkaAdminClient, TopicPartition

        topic = str(self.params.get("topic") or "")
        if not topic:
            raise FaultError("reassign: params.topic is required")
        admin = KafkaAdminClient(
            bootstrap_servers=self.cluster.bootstrap_servers,
            client_id="kchaos-reassign",
            request_timeout_ms=20000,
        )
        try:
            plan = self._plan(topic)
            moves = {TopicPartition(topic, p): replicas for p, replicas in plan.items()}
            errors = admin.alter_partition_reassignments(moves, timeout_ms=20000)
            outcomes = _partition_errors(errors, lambda err: str(err.__name__))
            bad = {part: error for part, error in outcomes.items() if error}
            if bad:
                raise FaultError(f"reassign: refused: {bad}")
            self._wait_done(admin, topic)
        finally:
            admin.close()
        elected = elect_preferred(self.cluster.bootstrap_servers, topic)
        self.detail = {"assignment": {str(p): r for p, r in plan.items()}, "election": elected}

    def _plan(self, topic: str) -> dict[int, list[int]]:
        admin = _admin(self.cluster.bootstrap_servers)
        meta = admin.list_topics(topic=topic, timeout=10).topics.get(topic)
        if meta is None or meta.error is not None or not meta.partitions:
            raise FaultError(f"reassign: no topic {topic!r}")
        return {p: rotated(list(pm.replicas)) for p, pm in sorted(meta.partitions.items())}

    def _wait_done(self, admin: Any, topic: str) -> None:
        def moving() -> str | None:
            pending = admin.list_partition_reassignments()
            count = sum(1 for tp in pending or {} if getattr(tp, "topic", None) == topic)
            return f"{count} partition(s) moving" if count else None

        try:
            Until(
                f"reassignment of {topic}", moving, timeout=TIMEOUT_S, interval=0.2
            ).wait_until_ready()
        except WaitTimeout:
            raise FaultError(f"reassign: still in progress after {TIMEOUT_S:.0f} s") from None

    def _stop(self) -> None:
        return None
