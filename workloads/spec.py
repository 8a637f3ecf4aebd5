"""Frozen specs of a workload: what to produce, how to consume, where to drain.

:class:`WorkloadSpec` is the scenario model's
:class:`~kchaos.harness.rundir.scenario_model.WorkloadConfig` itself (issue 34: one class,
not a mirrored pair): the scenario loader resolves it (``Scenario.plan.workload``, its
topics filled in) and the runner hands it to :class:`kchaos.workloads.workload.Workload`.
The producers' and readers' settings, :class:`ProducerConfig` and :class:`ConsumerConfig`,
the transactional workers' spec, :class:`TxnSpec`, and the client names, :data:`ClientLib`,
are the scenario's own too, named here for the workers. What needs the workload package's
code lives here: the Kafka properties of a producer client, derived from its
ProducerConfig by :func:`producer_settings`, and the checks of a resolved workload,
:func:`validate_workload`.
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
    FIRST_PROCESS,
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
    WorkloadConfig,
    client_lib,
)
from kchaos.workloads.values import PADDINGS

__all__ = [
    "AFTER_UNFINISHED_COMMIT",
    "CLIENT_LIBS",
    "FIRST_PROCESS",
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
    "TEST_DEFAULTS",
    "TxnSpec",
    "WorkloadConfig",
    "WorkloadSpec",
    "client_lib",
    "producer_settings",
    "validate_producers",
    "validate_workload",
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


# What the runner hands to kchaos.workloads.workload.Workload: the scenario model's
# WorkloadConfig itself, resolved by kchaos.harness.scenario.plan.workload_spec (issue 34:
# one class, not a mirrored pair); the name stays for the workers, the pytest plugin and
# chaos tests written for an older kchaos.
WorkloadSpec = WorkloadConfig


def validate_workload(spec: WorkloadConfig) -> None:
    """ConfigError naming the field of a resolved workload (``topics`` given) that no
    worker can run with: the model's data checked with the workload package's own rules
    (:func:`validate_producers`, the transactions' :meth:`TxnSpec.validate`)."""
    if not spec.topics:
        raise ConfigError("at least one topic is needed", field="topics")
    if spec.client not in CLIENT_LIBS:
        raise ConfigError(
            f"client must be one of {', '.join(CLIENT_LIBS)}, not {spec.client!r}",
            field="client",
        )
    if spec.metrics_interval <= 0:
        raise ConfigError("metrics_interval must be positive", field="metrics_interval")
    validate_producers(spec.producers)
    consumer = spec.consumers
    if consumer.count < 0:
        raise ConfigError("count must be >= 0", field="consumers.count")
    if consumer.mode not in ("subscribe", "assign"):
        raise ConfigError(
            f"mode must be subscribe or assign, not {consumer.mode!r}", field="consumers.mode"
        )
    if consumer.isolation not in ISOLATIONS:
        raise ConfigError(
            f"isolation must be one of {', '.join(ISOLATIONS)}, not {consumer.isolation!r}",
            field="consumers.isolation",
        )
    if spec.transactions is not None:
        spec.transactions.validate(spec.topics)


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
# What a test's workload is where it does not say (WorkloadSpec's own defaults before it
# became the scenario model's WorkloadConfig, issue 34): a minute of two producers and one
# reader on topic "kchaos"
TEST_DEFAULTS: dict[str, Any] = {
    "duration": 60.0,
    "topics": ("kchaos",),
    "producers": ProducerConfig(count=2),
    "consumers": ConsumerConfig(count=1),
}


def workload_spec_of(fields: Mapping[str, Any]) -> WorkloadSpec:
    """The WorkloadSpec of keyword ``fields``, as a test gives them: ``topics`` any
    sequence, :data:`TEST_DEFAULTS` for what they leave out, and the old forms read as
    today's (a field's old name, :data:`OLD_FIELD_NAMES`; client ``confluent``;
    ``consumers`` as a sequence of at most one ConsumerConfig, empty for none). TypeError
    for a field given under both names, one WorkloadSpec does not have, or more than one
    consumers entry (a transactional run's read_committed readers are
    ``transactions.readers``)."""
    given = dict(fields)
    for old, new in OLD_FIELD_NAMES.items():
        if old in given:
            if new in given:
                raise TypeError(f"{old} is the old name of {new}: give one of them")
            given[new] = given.pop(old)
    given = {**TEST_DEFAULTS, **given}
    if "topics" in given:
        given["topics"] = tuple(given["topics"])
    if isinstance(given.get("client"), str):
        given["client"] = client_lib(given["client"])
    consumers = given.get("consumers")
    if consumers is not None and not isinstance(consumers, ConsumerConfig):
        entries = tuple(consumers)
        if len(entries) > 1:
            raise TypeError(
                "consumers is one ConsumerConfig (count readers alike); the read_committed "
                "readers of a transactional run are transactions.readers"
            )
        given["consumers"] = entries[0] if entries else ConsumerConfig(count=0)
    return WorkloadSpec(**given)
