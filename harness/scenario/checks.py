"""Checks a JSON Schema cannot express: references between parts of a scenario.

Fault names, targets and parameters are validated by the faults package itself (its
registry, entry-point faults included, and parameter specs); the error keeps this file's
line. This module adds what it knows itself (topics, node ids, times).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from kchaos.harness.errors import ConfigError
from kchaos.harness.scenario.model import Scenario
from kchaos.harness.scenario.yamlsrc import Path_, Source

_LEADER = re.compile(r"^leader:(?P<topic>[^:]+):(?P<partition>[0-9]+)$")
_NODE = re.compile(r"^(?:broker-|controller-)?(?P<id>[0-9]+)$")
_KEYWORDS = ("all", "brokers", "controllers", "minority", "majority", "controller", "none")
_TARGET_HELP = (
    "all, brokers, controllers, random, random:K, minority, majority, controller, none, "
    "leader:TOPIC:PARTITION, broker-N, controller-N, N, or several nodes joined by commas"
)

# (fault name, target, params) -> None, or raise ConfigError (without file/line).
FaultValidator = Callable[[str, str, Mapping[str, Any]], None]


def faults_validator() -> FaultValidator | None:
    """The faults package's own validation (every registered fault, entry points too)."""
    from kchaos.faults.base import fault_spec

    def validate(fault: str, target: str, params: Mapping[str, Any]) -> None:
        fault_spec(fault, target, dict(params))

    return validate


def _relocate(src: Source, path: Path_, exc: ConfigError) -> ConfigError:
    """The faults package's error, placed at this scenario's file and line."""
    sub = (exc.field or "").replace("[", ".").replace("]", "")
    extra: Path_ = tuple(p for p in sub.split(".") if p)
    if extra and extra[0] in ("fault", "target", "params"):
        path = (*path[:-1], *extra) if path[-1] in ("fault", "target", "params") else path
    return src.error(path, exc.detail)


def _check_target(src: Source, sc: Scenario, path: Path_, target: str) -> None:
    topics = {t.name: t for t in sc.topics}
    if m := _LEADER.match(target):
        topic = topics.get(m["topic"])
        if topic is None:
            raise src.error(path, f"target names unknown topic {m['topic']!r}")
        if int(m["partition"]) >= topic.partitions:
            raise src.error(
                path, f"topic {topic.name!r} has {topic.partitions} partitions, no {m['partition']}"
            )
        return
    ids = {n for n in range(1, sc.cluster.brokers + 1)}
    ids |= {100 + n for n in range(1, sc.cluster.controllers + 1)}
    if target in _KEYWORDS or re.match(r"^random(:[0-9]+)?$", target):
        return
    for name in (n.strip() for n in target.split(",")):
        m = _NODE.match(name)
        if m is None:
            raise src.error(path, f"{name!r} is not a target ({_TARGET_HELP})")
        if int(m["id"]) not in ids:
            raise src.error(path, f"no node {name!r} in this cluster")


def _check_when(
    src: Source, sc: Scenario, base: Path_, when: Any, timeout: Any, on_timeout: Any
) -> None:
    """A step's state trigger, by the faults package's own parser, against this
    scenario's topics (partitions, replication factor) and broker ids."""
    if when is None:
        key = "timeout" if timeout is not None else "on_timeout"
        raise src.error((*base, key), f"{key} needs a `when` condition")
    from kchaos.faults.params import Where
    from kchaos.faults.trigger import TriggerContext, parse_trigger

    context = TriggerContext(
        topics={t.name: (t.partitions, t.replication_factor) for t in sc.topics},
        brokers=set(range(1, sc.cluster.brokers + 1)),
    )
    try:
        parse_trigger(when, timeout, Where(field="when"), context, on_timeout=on_timeout)
    except ConfigError as exc:
        sub = re.findall(r"[^.\[\]]+", exc.field or "when")
        path: Path_ = tuple(int(p) if p.isdigit() else p for p in sub)
        raise src.error((*base, *path), exc.detail) from None


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


def semantic_checks(
    src: Source,
    sc: Scenario,
    validator: Callable[[], FaultValidator | None] = faults_validator,
) -> None:
    cl = sc.cluster
    seen = _check_topics(src, sc)
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
    check_fault = validator()
    for i, step in enumerate(sc.nemesis.steps):
        base: Path_ = ("nemesis", "steps", i)
        _check_target(src, sc, (*base, "target"), step.target)
        if check_fault is not None:
            try:
                check_fault(step.fault, step.target, step.params)
            except ConfigError as exc:
                raise _relocate(src, (*base, "fault"), exc) from None
        if step.when is not None or step.timeout is not None or step.on_timeout is not None:
            _check_when(src, sc, base, step.when, step.timeout, step.on_timeout)
        end = step.at + (step.duration or 0.0)
        if end > duration:
            raise src.error(
                (*base, "at"), f"fault ends at {end:g}s, after the workload's {duration:g}s"
            )
    rnd = sc.nemesis.random
    if rnd is not None and sc.nemesis.steps:
        raise src.error(("nemesis", "random"), "use either steps or random, not both")
    if rnd is not None:
        rbase: Path_ = ("nemesis", "random")
        for j, target in enumerate(rnd.targets):
            _check_target(src, sc, (*rbase, "targets", j), target)
        for i, fault in enumerate(rnd.faults):
            if check_fault is not None:
                try:
                    check_fault(fault, rnd.targets[0], rnd.params.get(fault, {}))
                except ConfigError as exc:
                    raise _relocate(src, (*rbase, "faults", i), exc) from None
        if rnd.min_duration > rnd.max_duration:
            raise src.error((*rbase, "min_duration"), "is more than max_duration")
        for fault in rnd.params:
            if fault not in rnd.faults:
                raise src.error((*rbase, "params", fault), f"{fault!r} is not in faults")
    _check_expect(src, sc)


def _check_expect(src: Source, sc: Scenario) -> None:
    overlap = set(sc.expect.anomalies) & set(sc.expect.allowed)
    if overlap:
        raise src.error(("expect", "allowed"), f"{sorted(overlap)} already in anomalies")
    if sc.expect.anomalies and sc.expect.valid is True:
        invalidating = [k for k in sc.expect.anomalies if k not in ("unseen", "offline")]
        if invalidating:
            raise src.error(
                ("expect", "valid"),
                f"a valid run cannot contain {invalidating}; set valid: false or any",
            )
