"""Can the nemesis do what the scenario says? The faults package's own run-time checks,
run at validation on the fault specs of the scenario's plan (:mod:`kchaos.harness.scenario.plan`,
validated once when it was built) against the cluster the scenario describes, before any
container starts.

At run time a fault resolves its target spec against the live cluster
(:func:`kchaos.faults.targets.resolve`), is built (:class:`kchaos.faults.base.Fault` refuses too few
targets) and starts (a toxic needs a proxy of the chosen link on its targets, a
reassignment a topic). Here the same functions run against :class:`PlannedCluster`, the
nodes and proxies that :mod:`kchaos.harness.cluster.topology` will create for this scenario,
with the active controller and each partition's leader taken as the first candidate, so
that a schedule the run would refuse (more random targets than brokers, a node that does
not exist, a crash fault with no target, a reassignment of an unknown topic) is refused
now, with the scenario's file and line. A random schedule that cannot place a single
fault in the workload is refused too: it would silently run without faults.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kchaos.harness.errors import ClusterError, FaultError, shown
from kchaos.harness.rundir.scenario_model import Scenario
from kchaos.harness.scenario.yamlsrc import Path_, Source

if TYPE_CHECKING:
    from kchaos.faults.schedule import Schedule
    from kchaos.harness.cluster.spec import ClusterSpec
    from kchaos.harness.scenario.plan import Plan

_SUBNET = "172.31.0.0/24"  # any subnet: only names, ids and proxies are looked at


class PlannedCluster:
    """A cluster's look-ups (``Targeting``: topology and leadership), answered from the plan of
    the cluster (no containers)."""

    run_id = "validate"
    subnet = _SUBNET
    bootstrap_servers = ""
    toxiproxy_url = ""

    def __init__(self, sc: Scenario, spec: ClusterSpec) -> None:
        from kchaos.harness.cluster.topology import plan_nodes, toxiproxy_ip

        self.toxiproxy_ip = toxiproxy_ip(_SUBNET)
        self.nodes = sorted(plan_nodes(spec, self.run_id, _SUBNET), key=lambda n: n.node_id)
        self.brokers = [n for n in self.nodes if n.is_broker]
        self.controllers = [n for n in self.nodes if n.is_controller]
        self.topics = {t.name: t for t in sc.topics}

    def node(self, key: int | str) -> Any:
        for n in self.nodes:  # as harness.cluster.Cluster.node matches
            if key in (n.node_id, n.name, n.container_name) or str(key) == str(n.node_id):
                return n
        raise ClusterError(f"no node {key!r}")

    def active_controller_id(self) -> int:
        return int(self.controllers[0].node_id)

    def partition_count(self, topic: str) -> int:
        t = self.topics.get(topic)
        if t is not None:
            return int(t.partitions)
        if topic.startswith("__"):
            return 1  # an internal topic (a coordinator's): its leader is only known live
        raise FaultError(f"topic {topic!r}: not in the scenario")

    def partition_leader(self, topic: str, partition: int) -> int:
        if topic.startswith("__") and topic not in self.topics:
            # a coordinator's partition: any broker may lead it, the run resolves it live
            return int(self.brokers[0].node_id)
        t = self.topics.get(topic)
        if t is None or not 0 <= partition < t.partitions:
            raise FaultError(f"leader:{topic}:{partition}: no such partition")
        if t.assignment:
            return int(t.assignment[partition][0])
        return int(self.brokers[0].node_id)

    def describe(self) -> str:
        brokers = ", ".join(n.name for n in self.brokers)
        if self.controllers == self.brokers or not self.controllers:
            return f"brokers {brokers} (combined with the controllers)"
        return f"brokers {brokers}; controllers {', '.join(n.name for n in self.controllers)}"


def check_schedule(src: Source, sc: Scenario, plan: Plan) -> None:
    """Raise ConfigError (file, line, field) for a fault of the plan the run would refuse
    or skip; the faults were validated when the plan was built."""
    if plan.schedule is None:
        return
    cluster = PlannedCluster(sc, plan.cluster)
    for params_path, target_path, spec in plan.probes:
        _check_coordinator(src, plan, str(spec.target), target_path)
        _check_client(src, plan, str(spec.target), target_path)
        _check_fault(src, sc, cluster, spec, params_path, target_path)
    if sc.nemesis.random is not None:
        _check_random_fits(src, sc, plan.schedule)


def _check_coordinator(src: Source, plan: Plan, target: str, target_path: Path_) -> None:
    """A coordinator target must name a transactional id or a group the workload uses:
    any other has no coordinator to find, and the fault would never start (also behind
    ``brokers-except:``)."""
    from kchaos.faults.coordinators import parse_key
    from kchaos.faults.targets import parse_target

    spec = parse_target(target)
    if spec.kind == "except" and spec.inner is not None:
        spec = spec.inner  # the parser refuses brokers-except: inside brokers-except:
    if spec.kind != "coordinator":
        return
    key = parse_key(spec.key)
    if key.kind == "txn":
        used = sorted(t for _, _, t in plan.workload.txn_processes())
        what = "transactional id"
    else:
        used = sorted(plan.workload.consumer_groups())
        what = "consumer group"
    if key.key not in used:
        raise src.error(
            target_path,
            f"no worker of this scenario uses the {what} {key.key!r} "
            f"(the workload's: {', '.join(used) or 'none'})",
        )


def _check_client(src: Source, plan: Plan, target: str, target_path: Path_) -> None:
    """A client target must name the transactional id of a worker that runs in a process
    of its own: there is no other process to stop."""
    if not target.startswith("client:"):
        return
    from kchaos.faults.clients import parse_client

    _kind, key = parse_client(target[len("client:") :])
    used = sorted(t for _, _, t in plan.workload.txn_processes())
    if key not in used:
        raise src.error(
            target_path,
            f"no worker of this scenario uses the transactional id {key!r} "
            f"(the workload's: {', '.join(used) or 'none'})",
        )
    tx = plan.workload.transactions
    if tx is not None and not tx.process:
        raise src.error(
            target_path,
            f"{target!r}: the transactional workers run in threads of the harness "
            "(workload.transactions.process false); a client fault needs processes of their own",
        )


def _check_fault(
    src: Source,
    sc: Scenario,
    cluster: PlannedCluster,
    spec: Any,
    params_path: Path_,
    target_path: Path_,
) -> None:
    """One fault spec: its targets resolved and the fault built as the nemesis would;
    ``params_path`` is where its params are, ``target_path`` where its target is."""
    from kchaos.faults.base import fault_class
    from kchaos.faults.targets import resolve

    cls = fault_class(spec.fault)
    params: Mapping[str, Any] = spec.params
    try:
        targets = resolve(cluster, spec.target, spec.rng())
        cls(cluster, targets, params, fault_id=spec.id, rng=spec.rng())  # type: ignore[arg-type]
        _check_proxies(cls, targets, params)
    except (FaultError, ClusterError) as exc:
        raise src.error(
            target_path,
            f"{spec.fault} on {shown(spec.target)[1:-1]}: {exc}; this cluster has "
            f"{cluster.describe()}",
        ) from None
    if spec.fault == "cut":
        try:
            resolve(cluster, params["to"], spec.rng())
        except (FaultError, ClusterError) as exc:
            raise src.error(
                (*params_path, "to"), f"{exc}; this cluster has {cluster.describe()}"
            ) from None
    if spec.fault in ("reassign", "preferred-election"):
        topic = str(params.get("topic") or "")
        path: Path_ = (*params_path, "topic")
        if not topic and spec.fault == "reassign":
            raise src.error(path, "reassign needs the topic whose partitions move")
        if topic and topic not in cluster.topics:
            known = ", ".join(sorted(cluster.topics))
            raise src.error(path, f"unknown topic {shown(topic)} (topics: {known})")


def _check_proxies(cls: type, targets: Sequence[Any], params: Mapping[str, Any]) -> None:
    """Toxics need a proxy of their link on the targets (controller-only nodes have no
    client or replication proxy); a client cut needs client proxies."""
    from kchaos.faults.network import ToxicFault, proxy_names
    from kchaos.faults.partition import ClientCut

    if issubclass(cls, ToxicFault):
        link = params.get("link", "all")
        if not [p for n in targets for p in proxy_names(n, link)]:
            names = ", ".join(n.name for n in targets)
            raise FaultError(f"no {link} proxy on {names}")
    if (
        issubclass(cls, ClientCut)
        and targets
        and not [p for n in targets for p in proxy_names(n, "client")]
    ):
        names = ", ".join(n.name for n in targets)
        raise FaultError(f"clients do not connect to {names} (no client proxy)")


def _check_random_fits(src: Source, sc: Scenario, schedule: Schedule) -> None:
    """The random schedule the run will draw (drawn with the run's seed, in the plan)
    must hold at least one fault."""
    rnd = sc.nemesis.random
    assert rnd is not None
    duration = sc.workload.duration
    rbase: Path_ = ("nemesis", "random")
    if rnd.start >= duration:
        raise src.error(
            (*rbase, "start"),
            f"the random schedule starts at {rnd.start:g} s, when the {duration:g} s "
            "workload has ended",
        )
    room = duration - rnd.start - rnd.quiet
    if rnd.min_duration > room:
        raise src.error(
            (*rbase, "min_duration"),
            f"no fault of at least {rnd.min_duration:g} s fits: the workload leaves "
            f"{max(room, 0):g} s after start ({rnd.start:g} s) and the final quiet period "
            f"({rnd.quiet:g} s)",
        )
    if not schedule.faults:
        raise src.error(
            rbase,
            f"with seed {sc.seed} the random schedule places no fault in the workload's "
            f"{duration:g} s; lower start, quiet or min_duration",
        )
