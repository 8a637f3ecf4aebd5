"""The small cluster protocols of harness.cluster.api: ClusterHandle is exactly their union,
each member has one home, and the real Cluster has every member (mypy checks the types
in harness/cluster/cluster.py; this checks the shape, so a member added to ClusterHandle
itself, or to two protocols, fails here)."""

from __future__ import annotations

from typing import Protocol

from kchaos.harness.cluster import api
from kchaos.harness.cluster.cluster import Cluster

# The concerns, each with its own members (Leadership's are inherited by ClusterReads).
CONCERNS = (
    api.Topology,
    api.NodeProcesses,
    api.NodeLifecycle,
    api.ProxyAccess,
    api.Leadership,
    api.ClusterReads,
    api.NodeFilesystems,
    api.DockerAccess,
)


def own_members(cls: type) -> set[str]:
    """Members the class itself declares (methods, properties, annotated attributes)."""
    names = set(vars(cls).get("__annotations__", {}))
    names |= {n for n in vars(cls) if not n.startswith("_")}
    return names


def members(cls: type) -> set[str]:
    """Members of a protocol and of the protocols it extends."""
    out: set[str] = set()
    for base in cls.__mro__:
        if base in (object, Protocol) or not getattr(base, "_is_protocol", False):
            continue
        out |= own_members(base)
    return out


def test_cluster_handle_is_the_union_of_the_small_protocols():
    assert own_members(api.ClusterHandle) == set()
    union = set().union(*(members(p) for p in CONCERNS))
    assert members(api.ClusterHandle) == union
    assert len(union) >= 30  # every member of the one handle this replaced


def test_each_member_has_one_home():
    homes: dict[str, list[str]] = {}
    for proto in CONCERNS:
        for name in own_members(proto):
            homes.setdefault(name, []).append(proto.__name__)
    assert {n: h for n, h in homes.items() if len(h) > 1} == {}
    assert members(api.Leadership) < members(api.ClusterReads)


def test_named_unions_add_nothing_of_their_own():
    assert own_members(api.NodeAccess) == set()
    assert members(api.NodeAccess) == members(api.Topology) | members(api.NodeProcesses)
    assert own_members(api.Targeting) == set()
    assert members(api.Targeting) == members(api.Topology) | members(api.Leadership)
    assert own_members(api.ToolHost) == set()
    assert members(api.ToolHost) == members(api.Topology) | members(api.DockerAccess)
    assert own_members(api.TriggerReads) == set()
    assert members(api.TriggerReads) == members(api.ClusterReads) | members(api.NodeAccess)


def test_the_real_cluster_has_every_member():
    spec_only = {"run_id", "subnet", "toxiproxy_ip"}  # set by __init__, not on the class
    missing = {n for n in members(api.ClusterHandle) - spec_only if not hasattr(Cluster, n)}
    assert missing == set()
    assert spec_only <= set(vars(Cluster()))
