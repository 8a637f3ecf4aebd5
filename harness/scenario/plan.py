"""A scenario in the other packages' own types, built once, by the loader.

From the validated :class:`~kchaos.harness.rundir.scenario_model.Scenario` the loader builds the
three things a run hands on: the cluster's :class:`ClusterSpec` (the scenario's
ClusterConfig with the runtime's fields, a subclass; the runner adds the image tags and
the run id), the clients' :class:`WorkloadSpec` (the scenario's WorkloadConfig itself,
resolved) and the nemesis's :class:`Schedule` (scripted steps, or the random schedule
drawn with the scenario's seed). Each is built by its own package's typed constructors
(``fault_spec``, ``parse_trigger``, ``scripted_schedule``, ``random_schedule``,
``ClusterSpec.of``, ``validate_workload``), and every refusal on the
way names the scenario's file, line and field. The runner takes them from
:attr:`Scenario.plan`; nothing is turned back into a mapping or parsed again.
"""

from __future__ import annotations

import os
import random
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from kchaos.faults.base import FaultSpec, fault_spec
from kchaos.faults.params import Where
from kchaos.faults.schedule import (
    RandomEntry,
    RandomSpec,
    Schedule,
    Step,
    random_schedule,
    scripted_schedule,
)
from kchaos.faults.trigger import TriggerContext, parse_trigger
from kchaos.harness.cluster.spec import ClusterSpec
from kchaos.harness.errors import ConfigError
from kchaos.harness.rundir.scenario_model import IMAGE_SOURCES, Scenario
from kchaos.harness.scenario.yamlsrc import Path_, Source, dotted
from kchaos.workloads.clients import QUIET_LOG_LEVEL
from kchaos.workloads.spec import WorkloadSpec, producer_settings, validate_workload

# (path in the scenario, message) -> the error to raise, placed in the scenario's file.
Place = Callable[[Path_, str], ConfigError]

# validate_workload's fields -> where they are in a scenario.
_WORKLOAD_FIELDS: dict[str, Path_] = {
    "topics": ("workload", "topics"),
    "client": ("workload", "client"),
    "metrics_interval": ("workload", "metrics_interval"),
    "producers.count": ("workload", "producers", "count"),
    "producers": ("workload", "producers"),
}


# Every fault the schedule may start, as validated: (where its params are in the
# scenario, where its target is, the spec). A random schedule's are one draw per
# (fault, target); the feasibility checks (harness.scenario.feasible) try each.
Probe = tuple[Path_, Path_, FaultSpec]


@dataclass(frozen=True)
class Plan:
    """What the runner starts: the cluster (no images or run id yet), the clients and the
    fault schedule (None: no nemesis)."""

    cluster: ClusterSpec
    workload: WorkloadSpec
    schedule: Schedule | None
    probes: tuple[Probe, ...] = field(default=(), compare=False, repr=False)
    basis: tuple[Any, ...] = field(default=(), compare=False, repr=False)


def _basis(sc: Scenario) -> tuple[Any, ...]:
    """The scenario values a plan is built from."""
    return (sc.cluster, sc.topics, sc.workload, sc.nemesis, sc.seed)


def build(sc: Scenario, src: Source | None = None) -> Plan:
    """The scenario's plan; errors are placed by ``src`` (the loader's), else in
    ``sc.source`` by field only (a scenario built or re-seeded in Python)."""
    place: Place = src.error if src is not None else _placer(sc.source)
    cluster = cluster_spec(sc, place)
    workload = workload_spec(sc, place)
    faults, probes = schedule(sc, cluster, place)
    return Plan(cluster, workload, faults, tuple(probes), _basis(sc))


def plan_of(sc: Scenario) -> Plan:
    """The plan the loader built; for a scenario changed since (``replace(sc, seed=...)``
    in a matrix) or made in Python, one built now from its typed values."""
    if sc.plan is not None and sc.plan.basis == _basis(sc):
        return sc.plan
    return build(sc)


def _placer(file: str) -> Place:
    def place(path: Path_, message: str) -> ConfigError:
        return ConfigError(message, file=file or None, field=dotted(path) or None)

    return place


def _path(field: str | None) -> Path_:
    """A faults-style field (``params.latency_ms``, ``when[1].topic``) as a path."""
    return tuple(int(p) if p.isdigit() else p for p in re.findall(r"[^.\[\]]+", field or ""))


# ---------------------------------------------------------------------------- cluster


def image_source(sc: Scenario) -> str:
    """``registry`` (official images) or ``offline`` (built here); the scenario's
    ``cluster.image`` decides, else the KCHAOS_IMAGE_SOURCE environment variable."""
    if sc.cluster.image in IMAGE_SOURCES:
        return sc.cluster.image
    return os.environ.get("KCHAOS_IMAGE_SOURCE", "offline")


def cluster_spec(sc: Scenario, place: Place) -> ClusterSpec:
    """The scenario's ``cluster`` as the cluster package's spec: the same fields, checked
    (the runner adds the image tags and the run id); a refusal placed in the file."""
    try:
        return ClusterSpec.of(sc.cluster)
    except ConfigError as exc:
        raise place(("cluster", *_path(exc.field or "kafka_version")), exc.detail) from None


# --------------------------------------------------------------------------- workload


def workload_spec(sc: Scenario, place: Place) -> WorkloadSpec:
    """The scenario's ``workload`` resolved (the same class, :func:`replace` only): its
    topics filled in where it names none, and confluent-kafka's quieter log level in the
    producers' and readers' configs; validated, every refusal placed in the file."""
    w = sc.workload
    consumer_configs = dict(w.consumers.configs)
    producer_configs = dict(w.producers.configs)
    if w.client == "confluent-kafka":
        consumer_configs.setdefault("log_level", QUIET_LOG_LEVEL)
        producer_configs.setdefault("log_level", QUIET_LOG_LEVEL)
    producers = replace(w.producers, configs=producer_configs)
    try:
        producer_settings(producers)
    except ValueError as exc:
        key, message = exc.args
        raise place(("workload", "producers", "configs", key), message) from None
    if w.transactions is not None and w.client not in ("confluent-kafka", "java"):
        raise place(
            ("workload", "transactions"),
            "transactional workers run on confluent-kafka or Kafka's Java client only "
            "(workload.client)",
        )
    spec = replace(
        w,
        topics=w.topics or tuple(t.name for t in sc.topics),
        producers=producers,
        consumers=replace(w.consumers, configs=consumer_configs),
    )
    try:
        validate_workload(spec)
    except ConfigError as exc:
        field = exc.field or ""
        if field.startswith(("transactions.", "producers.configs.", "consumers.")):
            raise place(("workload", *field.split(".")), exc.detail) from None
        path = _WORKLOAD_FIELDS.get(field, ("workload",))
        raise place(path, exc.detail) from None
    return spec


# ---------------------------------------------------------------------------- nemesis


def _fault(place: Place, base: Path_, fault: str, target: Any, params: Any) -> FaultSpec:
    """The faults package's own validation of one fault; its error placed at ``base``
    (the step) or, for a parameter, at that parameter."""
    try:
        return fault_spec(fault, target, params)
    except ConfigError as exc:
        sub = _path(exc.field)
        if sub and sub[0] in ("target", "params") and base[-1] == "fault":
            raise place((*base[:-1], *sub), exc.detail) from None
        raise place(base, exc.detail) from None


def schedule(
    sc: Scenario, cluster: ClusterSpec, place: Place
) -> tuple[Schedule | None, list[Probe]]:
    """The nemesis's schedule (None when the scenario has no faults) and its probes."""
    n = sc.nemesis
    probes: list[Probe] = []
    if n.steps:
        context = TriggerContext(
            topics={t.name: (t.partitions, t.replication_factor) for t in sc.topics},
            brokers=set(cluster.broker_ids),
        )
        steps = []
        for i, s in enumerate(n.steps):
            base: Path_ = ("nemesis", "steps", i)
            spec = _fault(place, (*base, "fault"), s.fault, s.target, s.params)
            trigger = None
            if s.when is not None or s.timeout is not None or s.on_timeout is not None:
                if s.when is None:
                    key = "timeout" if s.timeout is not None else "on_timeout"
                    raise place((*base, key), f"{key} needs a `when` condition")
                try:
                    trigger = parse_trigger(
                        s.when, s.timeout, Where(field="when"), context, on_timeout=s.on_timeout
                    )
                except ConfigError as exc:
                    raise place((*base, *_path(exc.field or "when")), exc.detail) from None
            steps.append(Step(s.at, s.for_ or 0.0, spec, trigger))
            probes.append(((*base, "params"), (*base, "target"), spec))
        return scripted_schedule(steps, sc.seed), probes
    if n.random is not None:
        return _random(sc, place, probes), probes
    return None, probes


def _random_probes(sc: Scenario, place: Place) -> list[Probe]:
    """Each (fault, target) of the random schedule with one draw of its params, validated."""
    r = sc.nemesis.random
    assert r is not None
    rbase: Path_ = ("nemesis", "random")
    probe = random.Random(0)
    out: list[Probe] = []
    for i, fault in enumerate(r.faults):
        raw = r.params.get(fault, {})
        try:
            params = _draw(raw, probe)
        except ConfigError as exc:
            raise place((*rbase, "params", fault, *_path(exc.field)), exc.detail) from None
        for j, target in enumerate(r.targets):
            try:
                spec = fault_spec(fault, target, params)
            except ConfigError as exc:
                sub = _path(exc.field)
                if sub[:1] == ("params",):
                    path: Path_ = (*rbase, "params", fault, *sub[1:])
                elif sub[:1] == ("target",):
                    path = (*rbase, "targets", j)
                else:
                    path = (*rbase, "faults", i)
                raise place(path, exc.detail) from None
            out.append(((*rbase, "params", fault), (*rbase, "targets", j), spec))
    return out


def _draw(params: Mapping[str, Any], rng: random.Random) -> dict[str, Any]:
    """One draw of a random schedule's params, as faults.schedule draws them."""
    from kchaos.faults.schedule import draw_param

    return {k: draw_param(v, rng, Where(field=k)) for k, v in params.items()}


def _random(sc: Scenario, place: Place, probes: list[Probe]) -> Schedule:
    r = sc.nemesis.random
    assert r is not None
    probes.extend(_random_probes(sc, place))
    # Leave room at the end so that the last fault is healed before the workload stops.
    length = max(0.0, sc.workload.duration - r.start - r.quiet)
    shape = RandomSpec(
        entries=tuple(
            RandomEntry(
                fault=f,
                targets=tuple(r.targets),
                params=dict(r.params.get(f, {})),
                where=Where(field=f"faults[{i}]"),
            )
            for i, f in enumerate(r.faults)
        ),
        start=r.start,
        duration=length,
        fault_s=(r.min_duration, r.max_duration),
        quiet_s=(r.quiet, r.quiet),
    )
    try:
        return random_schedule(shape, sc.seed)
    except ConfigError as exc:  # a drawn value out of its parameter's range
        sub = _path(exc.field)  # faults, i, params, name
        path: Path_ = ("nemesis", "random")
        if len(sub) >= 3 and sub[2] == "params":
            path = (*path, "params", r.faults[int(sub[1])], *sub[3:])
        raise place(path, exc.detail) from None
