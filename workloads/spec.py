"""Frozen specs of a workload: what to produce, how to consume, where to drain.

Every field has a safe default (acks=all, idempotent, the confluent-kafka client); the
scenario loader builds a :class:`WorkloadSpec` (``Scenario.plan.workload``) and the runner
hands it to :class:`kchaos.workloads.workload.Workload`. The producers' and readers'
settings, :class:`ProducerConfig` and :class:`ConsumerConfig`, the transactional
workers' spec, :class:`TxnSpec`, and the client names, :data:`ClientLib`, are the
scenario's own (the run description, :mod:`kchaos.harness.rundir.scenario_model`), named
here too for the workers; the Kafka
properties of a producer client are derived from its ProducerConfig by
:func:`producer_settings`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from kchaos.harness.errors import ConfigError
from kchaos.harness.rundir.history import ISOLATIONS
from kchaos.harness.rundir.scenario_model import (
    AFTER_UNFINISHED_COMMIT,
    CLIENT_LIBS,
    KEEP_GOING,
    REINIT,
    TXN_ID_PREFIX,
    AfterUnfinishedCommit,
    ClientLib,
    ConsumerConfig,
    CopierSpec,
    ProducerConfig,
    ReadersConfig,
    TxnSpec,
    client_lib,
)
from kchaos.workloads.values import PADDINGS

__all__ = [
    "AFTER_UNFINISHED_COMMIT",
    "CLIENT_LIBS",
    "KEEP_GOING",
    "OLD_FIELD_NAMES",
    "REINIT",
    "TXN_ID_PREFIX",
    "AfterUnfinishedCommit",
    "ClientLib",
    "ConsumerConfig",
    "CopierSpec",
    "Isolation",
    "ProducerConfig",
    "ProducerSettings",
    "ReadersConfig",
    "SETTING_PROPERTIES",
    "TxnSpec",
    "WorkloadSpec",
    "client_lib",
    "producer_settings",
    "validate_producers",
    "workload_spec_of",
]

Isolation = Literal["read_uncommitted", "read_committed"]


# Kafka producer properties that ProducerSettings types: property -> (its field, type).
SETTING_PROPERTIES: dict[str, tuple[str, type]] = {
    "enable.idempotence": ("idempotence", bool),
    "retries": ("retries", int),
    "delivery.timeout.ms": ("delivery_timeout_ms", int),
    "request.timeout.ms": ("request_timeout_ms", int),
    "linger.ms": ("linger_ms", int),
    "batch.size": ("batch_size", int),
    "compression.type": ("compression", str),
    "max.in.flight.requests.per.connection": ("max_in_flight_requests", int),
}


@dataclass(frozen=True)
class ProducerSettings:
    """The Kafka properties every producer client is given, typed: what
    :func:`producer_settings` reads from a :class:`ProducerConfig`'s ``configs`` over
    kchaos's own defaults (``None``: the client library's default). ``other`` holds the
    configs it does not type, handed to the client as they are."""

    idempotence: bool = True
    retries: int | None = None
    delivery_timeout_ms: int = 30000
    request_timeout_ms: int = 10000
    linger_ms: int = 5
    batch_size: int | None = None
    compression: str = "none"
    max_in_flight_requests: int | None = None  # max.in.flight.requests.per.connection
    other: Mapping[str, str] = field(default_factory=dict)

    @property
    def single_attempt(self) -> bool:
        """True when each batch is transmitted at most once (decides some ``fail``s)."""
        return self.retries == 0


def _typed(value: str, kind: type) -> Any:
    if kind is bool:
        return value.strip().lower() == "true"
    return kind(value)


def producer_settings(p: ProducerConfig) -> ProducerSettings:
    """The client properties of producers ``p``: its configs typed where kchaos reads
    them, idempotence off when acks is not all (unless the configs say otherwise).
    ValueError(property, message) for a value not of its property's type."""
    typed: dict[str, Any] = {}
    other: dict[str, str] = {}
    for key, value in p.configs.items():
        if key not in SETTING_PROPERTIES:
            other[key] = value
            continue
        name, kind = SETTING_PROPERTIES[key]
        try:
            typed[name] = _typed(value, kind)
        except ValueError:
            raise ValueError(key, f"must be {kind.__name__}, got {value!r}") from None
    if p.acks not in ("all", "-1") and "enable.idempotence" not in p.configs:
        typed["idempotence"] = False  # idempotence requires acks=all
    return ProducerSettings(**typed, other=other)


def validate_producers(p: ProducerConfig, where: str = "producers") -> None:
    """ConfigError naming the field of ``p`` that no producer worker can run with."""
    if p.count < 0:
        raise ConfigError("count must be >= 0", field=f"{where}.count")
    if p.acks not in ("all", "-1", "1", "0"):
        raise ConfigError(f"acks must be all, 1 or 0, not {p.acks!r}", field=where)
    if p.message_size < 1:
        raise ConfigError("message_size must be at least 1", field=where)
    if p.padding not in PADDINGS:
        raise ConfigError(
            f"padding must be one of {', '.join(PADDINGS)}, not {p.padding!r}", field=where
        )
    if p.rate < 0:
        raise ConfigError("rate must be positive (or 0 for as fast as possible)", field=where)
    if p.max_in_flight < 1:
        raise ConfigError("max_in_flight must be at least 1", field=where)
    try:
        settings = producer_settings(p)
    except ValueError as exc:
        key, message = exc.args
        raise ConfigError(message, field=f"{where}.configs.{key}") from None
    if settings.idempotence and settings.retries == 0:
        raise ConfigError("idempotence needs retries > 0", field=where)


@dataclass(frozen=True)
class WorkloadSpec:
    """Everything a run's clients do: the scenario model's
    :class:`~kchaos.harness.rundir.scenario_model.WorkloadConfig` resolved by
    :func:`kchaos.harness.scenario.plan.workload_spec`, its fields under the same names
    and with the same meaning (``client``, ``duration``, ``monitor_interval``,
    ``drain_timeout``, ``producers``, ``transactions``; durations in seconds).

    Resolved: ``topics`` is never empty (the scenario's topics where the workload names
    none), ``consumers`` is a tuple (the scenario's readers, then the transactional
    runs' read_committed readers), and confluent-kafka's configs carry its quieter log
    level. Added, for the runtime only (no scenario field sets them): ``close_timeout``,
    ``metrics_interval`` and ``first_process``.
    """

    topics: tuple[str, ...] = ("kchaos",)
    producers: ProducerConfig = ProducerConfig(count=2)
    # each entry: ``count`` readers alike (the scenario's workload.consumers, then the
    # transactional readers); consumer_workers() lists them one per worker
    consumers: tuple[ConsumerConfig, ...] = (ConsumerConfig(count=1),)
    client: ClientLib = "confluent-kafka"
    duration: float = 60.0
    close_timeout: float = 10.0  # how long stop() waits for in-flight sends
    drain_timeout: float = 120.0
    monitor_interval: float = 0.5
    metrics_interval: float = 2.0  # how often the monitor scrapes the brokers' metrics
    first_process: int = 1  # producers get ids first_process.., consumers after them
    # transactional producers and copier (ids after the consumers); a run with them
    # drains read_committed (history format 1.2)
    transactions: TxnSpec | None = None

    def consumer_workers(self) -> tuple[ConsumerConfig, ...]:
        """The config of each consumer worker, in process-id order: every entry of
        ``consumers`` repeated ``count`` times."""
        return tuple(c for c in self.consumers for _ in range(c.count))

    def txn_processes(self) -> list[tuple[int, str, str]]:
        """(process id, role, transactional.id) of each transactional worker: producers
        after the consumers, then the copier; the one place these ids are made."""
        tx = self.transactions
        if tx is None:
            return []
        first = self.first_process + self.producers.count + len(self.consumer_workers())
        out = [(first + i, "producer", f"{TXN_ID_PREFIX}-{first + i}") for i in range(tx.producers)]
        if tx.copier is not None:
            process = first + tx.producers
            out.append((process, "copier", f"{TXN_ID_PREFIX}-{process}"))
        return out

    def transactional_topics(self) -> tuple[str, ...]:
        """The topics written by transactions (none without ``transactions``): where a
        last stable offset can fall behind the high watermark."""
        tx = self.transactions
        return () if tx is None else tx.written_topics(self.topics)

    def consumer_groups(self) -> set[str]:
        """The consumer groups the workload's readers and copier join."""
        groups = {c.group for c in self.consumer_workers() if c.mode == "subscribe"}
        if self.transactions is not None and self.transactions.copier is not None:
            groups.add(self.transactions.copier.group)
        return groups

    def validate(self) -> None:
        if not self.topics:
            raise ConfigError("at least one topic is needed", field="topics")
        if self.client not in CLIENT_LIBS:
            raise ConfigError(
                f"client must be one of {', '.join(CLIENT_LIBS)}, not {self.client!r}",
                field="client",
            )
        validate_producers(self.producers)
        for i, consumer in enumerate(self.consumers):
            if consumer.count < 0:
                raise ConfigError("count must be >= 0", field=f"consumers[{i}].count")
            if consumer.mode not in ("subscribe", "assign"):
                raise ConfigError(
                    f"mode must be subscribe or assign, not {consumer.mode!r}",
                    field=f"consumers[{i}].mode",
                )
            if consumer.isolation not in ISOLATIONS:
                raise ConfigError(
                    f"isolation must be one of {', '.join(ISOLATIONS)}, not {consumer.isolation!r}",
                    field=f"consumers[{i}].isolation",
                )
        if self.transactions is not None:
            self.transactions.validate(self.topics)


# WorkloadSpec's field names before it took the scenario model's (issue 34) -> today's.
# Read by :func:`workload_spec_of` (the pytest plugin's kchaos_workload), so a chaos test
# written for an older kchaos still runs.
OLD_FIELD_NAMES: dict[str, str] = {
    "duration_s": "duration",
    "drain_deadline_s": "drain_timeout",
    "monitor_interval_s": "monitor_interval",
    "close_timeout_s": "close_timeout",
    "metrics_interval_s": "metrics_interval",
}


def workload_spec_of(fields: Mapping[str, Any]) -> WorkloadSpec:
    """The WorkloadSpec of keyword ``fields``, as a test gives them: ``topics`` any
    sequence, and the old spellings read as today's (a field's old name,
    :data:`OLD_FIELD_NAMES`; client ``confluent``). TypeError for a field given under
    both names, or one WorkloadSpec does not have."""
    given = dict(fields)
    for old, new in OLD_FIELD_NAMES.items():
        if old in given:
            if new in given:
                raise TypeError(f"{old} is the old name of {new}: give one of them")
            given[new] = given.pop(old)
    if "topics" in given:
        given["topics"] = tuple(given["topics"])
    if isinstance(given.get("client"), str):
        given["client"] = client_lib(given["client"])
    return WorkloadSpec(**given)
