"""Addresses, names and handles of one run's cluster (pure functions, no Docker)."""

from __future__ import annotations

import ipaddress
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path

from kchaos.harness.cluster.api import LINK_CLASSES, LinkClass, NodeHandle, ProxyHandle
from kchaos.harness.cluster.config import proxy_port
from kchaos.harness.cluster.spec import ClusterSpec
from kchaos.harness.labels import state_root

# Candidate subnets: 10.213.0.0/24 .. 10.213.255.0/24 (one per run).
SUBNET_POOL = ipaddress.IPv4Network("10.213.0.0/16")
NODE_PORTS: dict[LinkClass, int] = {"client": 9092, "replication": 9093, "controller": 9094}


def run_dir(run_id: str) -> Path:
    return state_root() / "runs" / run_id


def network_name(run_id: str) -> str:
    return f"kchaos-{run_id}"


def container_name(run_id: str, name: str) -> str:
    return f"kchaos-{run_id}-{name}"


def node_name(spec: ClusterSpec, node_id: int) -> str:
    return f"broker-{node_id}" if "broker" in spec.roles(node_id) else f"controller-{node_id}"


def fs_label(run_id: str, node_id: int) -> str:
    """An ext4 label of at most 16 characters, e.g. ``kc-3a1b2c-101``."""
    short = run_id.replace("-", "")[-6:]
    return f"kc-{short}-{node_id}"[:16]


def host_ip(subnet: str, offset: int) -> str:
    net = ipaddress.ip_network(subnet)
    if offset <= 0 or offset >= net.num_addresses - 1:
        raise ValueError(f"offset {offset} is outside {subnet}")
    return str(net.network_address + offset)


def gateway_ip(subnet: str) -> str:
    return host_ip(subnet, 1)


def toxiproxy_ip(subnet: str) -> str:
    return host_ip(subnet, 2)


def node_ip(subnet: str, node_id: int) -> str:
    return host_ip(subnet, 10 + node_id)


def choose_subnets(
    run_id: str, taken: Iterable[str], pool: ipaddress.IPv4Network = SUBNET_POOL
) -> list[str]:
    """Free /24 candidates from the pool, starting at a place derived from the run id.

    ``taken`` holds every network already in use (Docker networks and host routes); a
    candidate overlapping any of them is left out. Starting at a run-dependent place makes
    two runs created at the same moment unlikely to race for the same subnet.
    """
    used = []
    for cidr in taken:
        try:
            net = ipaddress.ip_network(cidr, strict=False)
        except ValueError:
            continue
        if isinstance(net, ipaddress.IPv4Network) and net.prefixlen > 0:
            used.append(net)
    candidates = list(pool.subnets(new_prefix=24))
    start = zlib.crc32(run_id.encode()) % len(candidates)
    ordered = candidates[start:] + candidates[:start]
    return [str(c) for c in ordered if not any(c.overlaps(u) for u in used)]


def proxies_for(spec: ClusterSpec, node_id: int, subnet: str) -> dict[LinkClass, ProxyHandle]:
    """The proxies in front of one node: client and replication for brokers, controller
    for voters."""
    roles = spec.roles(node_id)
    wanted = {
        "client": "broker" in roles,
        "replication": "broker" in roles,
        "controller": "controller" in roles,
    }
    proxies: dict[LinkClass, ProxyHandle] = {}
    for link in LINK_CLASSES:
        if not wanted[link]:
            continue
        proxies[link] = ProxyHandle(
            name=f"node-{node_id}-{link}",
            link=link,
            listen_host=toxiproxy_ip(subnet),
            listen_port=proxy_port(link, node_id),
            upstream=f"{node_ip(subnet, node_id)}:{NODE_PORTS[link]}",
        )
    return proxies


def plan_nodes(spec: ClusterSpec, run_id: str, subnet: str) -> list[NodeHandle]:
    """Handles of every node before anything exists (the loop device is filled in later)."""
    base = run_dir(run_id)
    nodes = []
    for node_id in spec.node_ids:
        name = node_name(spec, node_id)
        nodes.append(
            NodeHandle(
                node_id=node_id,
                name=name,
                roles=spec.roles(node_id),
                container_name=container_name(run_id, name),
                ip=node_ip(subnet, node_id),
                mount_path=base / f"node-{node_id}",
                loop_device="",
                image_file=base / f"node-{node_id}.img",
                proxies=proxies_for(spec, node_id, subnet),
            )
        )
    return nodes


def stop_order(nodes: Sequence[NodeHandle]) -> list[list[NodeHandle]]:
    """The nodes in the groups a whole-cluster stop signals, one group after the other.

    Brokers that are not controllers come first: a broker's controlled shutdown asks the
    controller to move its leaders away, and a dedicated controller signalled at the same
    time exits within a second, leaving the broker to wait out its shutdown retries
    (300 s measured on Kafka 4.4.0, 2026-11-27). Controllers and combined nodes follow.
    Empty groups are left out.
    """
    first = [n for n in nodes if n.is_broker and not n.is_controller]
    rest = [n for n in nodes if n not in first]
    return [group for group in (first, rest) if group]
