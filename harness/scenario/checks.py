"""Checks a JSON Schema cannot express: references between parts of a scenario.

Fault names, targets, parameters and triggers are validated by the faults package itself
(its registry, parameter specs and trigger parser) when the loader builds the scenario's
plan (:mod:`kchaos.harness.scenario.plan`), once; the error keeps this file's line. This
module adds what it knows itself (topics, node ids, times).
"""

from __future__ import annotations

import re

from kchaos.harness.errors import ConfigError
from kchaos.harness.rundir.anomalies import NOT_INVALID
from kchaos.harness.rundir.scenario_model import Scenario
from kchaos.harness.scenario.yamlsrc import Path_, Source

# Kafka's smallest segment.bytes: 14 bytes (one legacy record's overhead) for a topic
# before 4.1.0 and for the brokers' log.segment.bytes before 4.0.0; 1 MiB from then on
# (KIP-1030: KAFKA-16368 raised the broker setting's floor in 4.0.0, KAFKA-19080 the
# topic's in 4.1.0; read from LogConfig's ConfigDef in the released kafka-storage jars).
MIB = 1024 * 1024
SEGMENT_BYTES_FLOOR = {"topic": ((4, 1, 0), MIB), "broker": ((4, 0, 0), MIB)}
OLD_SEGMENT_BYTES_FLOOR = 14

_NODE = re.compile(r"^(?:broker-|controller-)?(?P<id>[0-9]+)$")
_TARGET_HELP = (
    "all, brokers, controllers, random, random:K, minority, majority, controller, none, "
    "leader:TOPIC:PARTITION, coordinator:txn:ID, coordinator:group:GROUP, client:txn:ID, broker-N, "
    "controller-N, N, several nodes joined by commas, or brokers-except: before any of these"
)


def _check_target(src: Source, sc: Scenario, path: Path_, target: str) -> None:
    """The target's grammar is the faults package's (:func:`kchaos.faults.targets.parse_target`);
    here: the topic and partition a ``leader:`` names, and the nodes a list names, exist in
    this scenario's cluster. Whether the workload uses a coordinator's or a client's id is
    ``feasible.check_schedule``'s question."""
    from kchaos.faults.targets import parse_target

    try:
        spec = parse_target(target)
    except ConfigError as exc:
        raise src.error(path, exc.detail) from None
    if spec.kind == "except" and spec.inner is not None:
        # brokers-except:SPEC (never nested: the parser refuses it): SPEC's topic or
        # nodes must exist too
        spec = spec.inner
    if spec.kind == "leader":
        topic = {t.name: t for t in sc.topics}.get(spec.topic)
        if topic is None:
            raise src.error(path, f"target names unknown topic {spec.topic!r}")
        if spec.partition >= topic.partitions:
            raise src.error(
                path, f"topic {topic.name!r} has {topic.partitions} partitions, no {spec.partition}"
            )
        return
    if spec.kind != "named":
        return
    ids = {n for n in range(1, sc.cluster.brokers + 1)}
    ids |= {100 + n for n in range(1, sc.cluster.controllers + 1)}
    for name in spec.names:
        m = _NODE.match(name)
        if m is None:
            raise src.error(path, f"{name!r} is not a target ({_TARGET_HELP})")
        if int(m["id"]) not in ids:
            raise src.error(path, f"no node {name!r} in this cluster")


def _check_topics(src: Source, sc: Scenario) -> set[str]:
    seen: set[str] = set()
    brokers = sc.cluster.brokers
    for i, topic in enumerate(sc.topics):
        if topic.name in seen:
            raise src.error(("topics", i, "name"), f"topic {topic.name!r} is declared twice")
        seen.add(topic.name)
        if topic.replication_factor > brokers:
            raise src.error(
                ("topics", i, "replication_factor"),
                f"replication factor {topic.replication_factor} > {brokers} brokers",
            )
        mis = topic.configs.get("min.insync.replicas")
        if mis is not None and mis.isdigit() and int(mis) > topic.replication_factor:
            raise src.error(
                ("topics", i, "configs", "min.insync.replicas"),
                f"min.insync.replicas {mis} > replication factor {topic.replication_factor}",
            )
        if topic.assignment:
            path = ("topics", i, "assignment")
            if len(topic.assignment) != topic.partitions:
                raise src.error(
                    path, f"{len(topic.assignment)} lists for {topic.partitions} partitions"
                )
            for j, replicas in enumerate(topic.assignment):
                bad = [r for r in replicas if not 1 <= r <= brokers]
                if len(replicas) != topic.replication_factor or len(set(replicas)) != len(replicas):
                    raise src.error(
                        (*path, j), f"needs {topic.replication_factor} distinct brokers"
                    )
                if bad:
                    raise src.error((*path, j), f"no broker {bad[0]} (brokers are 1..{brokers})")
    return seen


def segment_bytes_minimum(version: str, level: str) -> int:
    """The smallest ``segment.bytes`` (``level`` "topic") or ``log.segment.bytes``
    ("broker") Kafka ``version`` accepts."""
    from kchaos.harness.rundir.tickets import release

    since, floor = SEGMENT_BYTES_FLOOR[level]
    return floor if release(version) >= since else OLD_SEGMENT_BYTES_FLOOR


def _check_segment_bytes(src: Source, sc: Scenario) -> None:
    """A segment size below the release's floor would be refused by Kafka only once the
    cluster is up (the topic's creation, or the broker's start): refused here instead."""
    from kchaos.harness.images.versions import DEFAULT_KAFKA_VERSION

    version = str(sc.cluster.kafka_version or DEFAULT_KAFKA_VERSION)
    key = "log.segment.bytes"
    found: list[tuple[Path_, str, str]] = [
        (("topics", i, "configs", "segment.bytes"), "topic", str(t.configs["segment.bytes"]))
        for i, t in enumerate(sc.topics)
        if "segment.bytes" in t.configs
    ]
    if key in sc.cluster.server_properties:
        value = str(sc.cluster.server_properties[key])
        found.append((("cluster", "server_properties", key), "broker", value))
    for node, props in sc.cluster.broker_properties.items():
        if key in props:
            path: Path_ = ("cluster", "broker_properties", str(node), key)
            found.append((path, "broker", str(props[key])))
    for path, level, value in found:
        if not value.strip().lstrip("-").isdigit():
            continue  # Kafka's own parser names a value that is not a number
        floor = segment_bytes_minimum(version, level)
        if int(value) < floor:
            raise src.error(
                path,
                f"{value} is below Kafka {version}'s minimum {path[-1]} of {floor} "
                f"(KIP-1030 raised it to 1 MiB: from 4.0.0 for log.segment.bytes, from "
                f"4.1.0 for a topic's segment.bytes)",
            )


def semantic_checks(src: Source, sc: Scenario) -> None:
    cl = sc.cluster
    seen = _check_topics(src, sc)
    _check_segment_bytes(src, sc)
    for i, name in enumerate(sc.workload.topics):
        if name not in seen:
            raise src.error(("workload", "topics", i), f"unknown topic {name!r}")
    for node in cl.broker_properties:
        if not 1 <= node <= cl.brokers:
            raise src.error(
                ("cluster", "broker_properties", str(node)),
                f"no broker {node} (brokers are 1..{cl.brokers})",
            )
    duration = sc.workload.duration
    if duration <= 0:
        raise src.error(("workload", "duration"), "must be more than 0 seconds")
    for i, step in enumerate(sc.nemesis.steps):
        base: Path_ = ("nemesis", "steps", i)
        _check_target(src, sc, (*base, "target"), step.target)
        # A step may outlast the workload: the final heal ends it, once every worker has
        # stopped (what kip-890-hanging-transaction needs: held bytes released only after
        # the producer's last abort). It must start while the workload runs.
        if step.at >= duration:
            raise src.error(
                (*base, "at"), f"fault starts at {step.at:g}s, after the workload's {duration:g}s"
            )
    rnd = sc.nemesis.random
    if rnd is not None and sc.nemesis.steps:
        raise src.error(("nemesis", "random"), "use either steps or random, not both")
    if rnd is not None:
        rbase: Path_ = ("nemesis", "random")
        for j, target in enumerate(rnd.targets):
            _check_target(src, sc, (*rbase, "targets", j), target)
        if rnd.min_duration > rnd.max_duration:
            raise src.error((*rbase, "min_duration"), "is more than max_duration")
        for fault in rnd.params:
            if fault not in rnd.faults:
                raise src.error((*rbase, "params", fault), f"{fault!r} is not in faults")
    _check_expect(src, sc)


def _check_effects(src: Source, sc: Scenario) -> None:
    """Each ``expect.effects`` entry names a fault the nemesis runs: a step's id
    (``f-N``, N up to the number of scripted steps; any N with a random schedule) or a
    fault name the nemesis uses."""
    steps, rnd = sc.nemesis.steps, sc.nemesis.random
    names = {step.fault for step in steps} | set(rnd.faults if rnd is not None else ())
    for i, entry in enumerate(sc.expect.effects):
        number = entry[2:] if entry.startswith("f-") else ""
        if number.isdigit():
            if rnd is None and not 1 <= int(number) <= len(steps):
                raise src.error(
                    ("expect", "effects", i), f"no fault {entry}: the nemesis has {len(steps)}"
                )
        elif entry not in names:
            raise src.error(
                ("expect", "effects", i),
                f"{entry!r} is neither a step id (f-1, f-2, ...) nor a fault the nemesis runs"
                f" ({', '.join(sorted(names)) or 'none'})",
            )


def _check_expect(src: Source, sc: Scenario) -> None:
    _check_effects(src, sc)
    overlap = set(sc.expect.anomalies) & set(sc.expect.allowed)
    if overlap:
        raise src.error(("expect", "allowed"), f"{sorted(overlap)} already in anomalies")
    for other, kinds in (("anomalies", sc.expect.anomalies), ("allowed", sc.expect.allowed)):
        clash = set(sc.expect.forbid) & set(kinds)
        if clash:
            raise src.error(("expect", "forbid"), f"{sorted(clash)} also in {other}")
    if sc.expect.anomalies and sc.expect.valid is True:
        # a valid run can contain the kinds that never invalidate (unseen makes it
        # unknown, but an expectation may still require it: the verdict check judges it)
        invalidating = [k for k in sc.expect.anomalies if k not in NOT_INVALID]
        if invalidating:
            raise src.error(
                ("expect", "valid"),
                f"a valid run cannot contain {invalidating}; set valid: false or any",
            )
