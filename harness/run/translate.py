"""A scenario in the other packages' own terms: ClusterSpec, WorkloadSpec, nemesis spec.

Thin and side-effect free, so unit tests cover it without Docker.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from kchaos.harness.scenario.model import ProducerConfig, Scenario
from kchaos.workloads.clients import QUIET_LOG_LEVEL

# Producer properties that ProducerSpec has typed fields for: property -> (field, type).
_PRODUCER_FIELDS: dict[str, tuple[str, type]] = {
    "enable.idempotence": ("idempotence", bool),
    "retries": ("retries", int),
    "delivery.timeout.ms": ("delivery_timeout_ms", int),
    "request.timeout.ms": ("request_timeout_ms", int),
    "linger.ms": ("linger_ms", int),
    "batch.size": ("batch_size", int),
    "compression.type": ("compression", str),
    "max.in.flight.requests.per.connection": ("max_in_flight", int),
}
CLIENTS = {"confluent-kafka": "confluent", "kafka-python": "kafka-python", "java": "java"}


def _typed(value: str, kind: type) -> Any:
    if kind is bool:
        return value.strip().lower() == "true"
    return kind(value)


def producer_fields(p: ProducerConfig, client: str = "confluent-kafka") -> dict[str, Any]:
    """Keyword arguments of workloads.spec.ProducerSpec for a scenario's producers."""
    fields: dict[str, Any] = {
        "acks": p.acks,
        "message_size": p.message_size,
        "keys": p.keys,
        "rate": p.rate if p.rate > 0 else None,
        "max_in_flight_sends": p.max_in_flight,
    }
    extra: dict[str, str] = {}
    for key, value in p.configs.items():
        if key in _PRODUCER_FIELDS:
            name, kind = _PRODUCER_FIELDS[key]
            fields[name] = _typed(value, kind)
        else:
            extra[key] = value
    if "log_level" not in extra and client == "confluent-kafka":
        extra["log_level"] = QUIET_LOG_LEVEL
    if p.acks != "all" and "enable.idempotence" not in p.configs:
        fields["idempotence"] = False  # idempotence requires acks=all
    fields["extra"] = extra
    return fields


def workload_spec(sc: Scenario) -> Any:
    from kchaos.workloads.spec import ConsumerSpec, ProducerSpec, WorkloadSpec

    w = sc.workload
    c = w.consumers
    extra = dict(c.configs)
    if w.client == "confluent-kafka":
        extra.setdefault("log_level", QUIET_LOG_LEVEL)
    consumer = ConsumerSpec(mode=c.mode, group_id=c.group, rack=c.rack, extra=extra)
    return WorkloadSpec(
        topics=w.topics or tuple(t.name for t in sc.topics),
        producers=w.producers.count,
        consumers=tuple(consumer for _ in range(c.count)),
        client=CLIENTS[w.client],  # type: ignore[arg-type]
        producer=ProducerSpec(**producer_fields(w.producers, w.client)),
        duration_s=w.duration,
        drain_deadline_s=w.drain_timeout,
        monitor_interval_s=w.monitor_interval,
    )


def cluster_fields(sc: Scenario, kafka_version: str) -> dict[str, Any]:
    """Keyword arguments of harness.cluster.ClusterSpec (images are added by the runner)."""
    cl = sc.cluster
    fields: dict[str, Any] = {
        "brokers": cl.brokers,
        "controllers": cl.controllers,
        "kafka_version": kafka_version,
        "server_properties": dict(cl.server_properties),
        "broker_properties": {k: dict(v) for k, v in cl.broker_properties.items()},
        "heap": cl.heap,
    }
    if cl.image and cl.image not in ("offline", "registry"):
        fields["kafka_image"] = cl.image
    return fields


def image_source(sc: Scenario) -> str:
    """``registry`` (official images) or ``offline`` (built here); the scenario's
    ``cluster.image`` decides, else the KCHAOS_IMAGE_SOURCE environment variable."""
    if sc.cluster.image in ("registry", "offline"):
        return sc.cluster.image
    return os.environ.get("KCHAOS_IMAGE_SOURCE", "offline")


def nemesis_spec(sc: Scenario) -> Mapping[str, Any] | None:
    """The nemesis section in faults.schedule's format, or None for no faults."""
    n = sc.nemesis
    if n.steps:
        return {
            "type": "scripted",
            "seed": sc.seed,
            "faults": [
                {
                    "at": s.at,
                    "for": s.duration or 0.0,
                    "fault": s.fault,
                    "target": s.target,
                    "params": dict(s.params),
                    **({"when": s.when} if s.when is not None else {}),
                    **({"timeout": s.timeout} if s.timeout is not None else {}),
                    **({"on_timeout": s.on_timeout} if s.on_timeout is not None else {}),
                }
                for s in n.steps
            ],
        }
    if n.random is not None:
        r = n.random
        # Leave room at the end so that the last fault is healed before the workload stops.
        length = max(0.0, sc.workload.duration - r.start - r.quiet)
        return {
            "type": "random",
            "seed": sc.seed,
            "start_s": r.start,
            "duration_s": length,
            "fault_s": [r.min_duration, r.max_duration],
            "quiet_s": [r.quiet, r.quiet],
            "faults": [
                {"fault": f, "target": list(r.targets), "params": dict(r.params.get(f, {}))}
                for f in r.faults
            ],
        }
    return None
