"""Target specs: which nodes a fault hits, resolved when the fault starts.

Grammar (one string):

=====================  ==========================================================
``all``                every node
``brokers``            every node with the broker role
``controllers``        every node with the controller role
``random`` ``random:K``  K brokers (default 1) drawn with the fault's seeded RNG
``minority``           a random minority of all nodes: (n-1)//2 of them, at least 1
``majority``           a random majority of all nodes: n//2+1 of them
``controller``         the active KRaft controller
``leader:TOPIC:P``     the current leader of partition P of TOPIC
``coordinator:txn:ID``  the transaction coordinator of transactional id ID now
``coordinator:group:G`` the group coordinator of consumer group G now
``client:txn:ID``      the workload's transactional worker holding id ID (no node)
``brokers-except:SPEC``  every broker but the nodes SPEC (any node spec above) names now
``none``               no node (faults that take their nodes from params)
``broker-2``, ``2``    a named node, by name or id; several joined by commas
=====================  ==========================================================

Random choices draw from nodes sorted by id with the RNG the schedule gives each fault,
so the same seed and the same cluster state give the same targets.

A coordinator is the leader of the internal topic partition that holds the id's or the
group's state (``kchaos.faults.coordinators``), so it is resolved live like ``leader:``.
The leader and the active controller are the cluster's own reads,
``Leadership.partition_leader(topic, partition)`` and ``active_controller_id()``
(implemented in ``kchaos.harness.cluster.observe``).

A ``client:`` target names a client process, not a node: it resolves to no node, and
only faults that act on client processes take it (``Fault.takes_client``); they find
the process through the run's client directory (``kchaos.faults.clients``).

``brokers-except:`` turns a live spec around: ``brokers-except:coordinator:txn:ID`` is
every broker that is not that id's coordinator, so a toxic on their client links delays a
transaction's produce requests while its coordinator requests (EndTxn) go through.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from kchaos.faults.clients import parse_client
from kchaos.faults.coordinators import coordinator_node, parse_key
from kchaos.faults.params import Where
from kchaos.harness.cluster.api import Leadership, NodeHandle, Targeting
from kchaos.harness.errors import ClusterError, FaultError

_KEYWORDS = ("all", "brokers", "controllers", "minority", "majority", "controller", "none")
_TOPIC_RE = re.compile(r"^[A-Za-z0-9._-]+$")
EXCEPT = "brokers-except:"


@dataclass(frozen=True)
class TargetSpec:
    kind: str  # one of _KEYWORDS, "random", "leader", "coordinator", "client", "named",
    # "except"
    count: int = 1
    topic: str = ""
    partition: int = 0
    names: tuple[str, ...] = ()
    key: str = ""  # coordinator: "txn:ID" or "group:G"; client: "txn:ID"
    inner: TargetSpec | None = None  # brokers-except: the nodes left out

    def __str__(self) -> str:
        if self.kind == "random":
            return "random" if self.count == 1 else f"random:{self.count}"
        if self.kind == "leader":
            return f"leader:{self.topic}:{self.partition}"
        if self.kind == "coordinator":
            return f"coordinator:{self.key}"
        if self.kind == "client":
            return f"client:{self.key}"
        if self.kind == "named":
            return ",".join(self.names)
        if self.kind == "except":
            return f"{EXCEPT}{self.inner}"
        return self.kind


def parse_target(text: str | int, where: Where | None = None) -> TargetSpec:
    """Parse a target spec; a ConfigError names the field when it is malformed."""
    where = where or Where(field="target")
    raw = str(text).strip()
    if raw in _KEYWORDS:
        return TargetSpec(raw)
    if raw.startswith(EXCEPT):
        inner = parse_target(raw[len(EXCEPT) :], where)
        if inner.kind in ("none", "client", "except"):
            raise where.error(f"{EXCEPT} needs a spec that names nodes, got {raw!r}")
        return TargetSpec("except", inner=inner)
    if raw == "random" or raw.startswith("random:"):
        count = raw.partition(":")[2] or "1"
        if not count.isdigit() or int(count) < 1:
            raise where.error(f"random:K needs a positive integer K, got {raw!r}")
        return TargetSpec("random", count=int(count))
    if raw.startswith("leader:"):
        parts = raw.split(":")
        if len(parts) != 3 or not _TOPIC_RE.match(parts[1]) or not parts[2].isdigit():
            raise where.error(f"expected leader:TOPIC:PARTITION, got {raw!r}")
        return TargetSpec("leader", topic=parts[1], partition=int(parts[2]))
    if raw.startswith("coordinator:"):
        try:
            key = parse_key(raw[len("coordinator:") :])
        except ValueError:
            raise where.error(
                f"expected coordinator:txn:TRANSACTIONAL_ID or coordinator:group:GROUP, got {raw!r}"
            ) from None
        return TargetSpec("coordinator", key=str(key))
    if raw.startswith("client:"):
        try:
            client_kind, client_key = parse_client(raw[len("client:") :])
        except ValueError:
            raise where.error(f"expected client:txn:TRANSACTIONAL_ID, got {raw!r}") from None
        return TargetSpec("client", key=f"{client_kind}:{client_key}")
    names = tuple(n.strip() for n in raw.split(",") if n.strip())
    if not names or not all(re.match(r"^[A-Za-z0-9_-]+$", n) for n in names):
        raise where.error(f"not a target spec: {raw!r}")
    return TargetSpec("named", names=names)


def _by_id(nodes: Sequence[NodeHandle]) -> list[NodeHandle]:
    return sorted(nodes, key=lambda n: n.node_id)


def resolve(cluster: Targeting, spec: TargetSpec | str, rng: random.Random) -> list[NodeHandle]:
    """The nodes a spec names right now, sorted by id. FaultError when none can be found."""
    if not isinstance(spec, TargetSpec):
        spec = parse_target(spec)
    nodes = _by_id(cluster.nodes)
    if spec.kind in ("none", "client"):
        return []  # a client target names a process, found by the fault itself
    if spec.kind == "all":
        return nodes
    if spec.kind == "brokers":
        return [n for n in nodes if n.is_broker]
    if spec.kind == "controllers":
        return [n for n in nodes if n.is_controller]
    if spec.kind == "random":
        pool = [n for n in nodes if n.is_broker]
        if spec.count > len(pool):
            raise FaultError(f"target {spec}: only {len(pool)} brokers")
        return _by_id(rng.sample(pool, spec.count))
    if spec.kind == "minority":
        return _by_id(rng.sample(nodes, max(1, (len(nodes) - 1) // 2)))
    if spec.kind == "majority":
        return _by_id(rng.sample(nodes, len(nodes) // 2 + 1))
    if spec.kind == "controller":
        return [cluster.node(active_controller(cluster))]
    if spec.kind == "leader":
        leader = partition_leader(cluster, spec.topic, spec.partition)
        return [cluster.node(leader)]
    if spec.kind == "coordinator":
        return [cluster.node(coordinator_node(cluster, parse_key(spec.key)))]
    if spec.kind == "except":
        assert spec.inner is not None
        left_out = {n.node_id for n in resolve(cluster, spec.inner, rng)}
        kept = [n for n in nodes if n.is_broker and n.node_id not in left_out]
        if not kept:
            raise FaultError(f"target {spec}: no broker is left")
        return kept
    out = []
    for name in spec.names:
        key: int | str = int(name) if name.isdigit() else name
        try:
            out.append(cluster.node(key))
        except Exception as exc:  # the cluster's own "no such node" error
            raise FaultError(f"target {name!r}: no such node") from exc
    return _by_id(list({n.node_id: n for n in out}.values()))


def partition_leader(cluster: Leadership, topic: str, partition: int) -> int:
    """Node id of the partition's current leader (FaultError when it has none)."""
    try:
        return int(cluster.partition_leader(topic, partition))
    except ClusterError as exc:
        raise FaultError(f"leader:{topic}:{partition}: {exc}") from exc


def active_controller(cluster: Leadership) -> int:
    """Node id of the active KRaft controller (FaultError when none is found)."""
    try:
        return int(cluster.active_controller_id())
    except ClusterError as exc:
        raise FaultError(str(exc)) from exc
