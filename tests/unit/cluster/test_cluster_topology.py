"""Addresses, names and subnet choice."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest

from kchaos.harness.cluster.spec import ClusterSpec
from kchaos.harness.cluster.topology import (
    choose_subnets,
    fs_label,
    gateway_ip,
    node_ip,
    plan_nodes,
    stop_order,
    toxiproxy_ip,
)


def test_addresses_follow_the_api_topology() -> None:
    subnet = "10.213.9.0/24"
    assert gateway_ip(subnet) == "10.213.9.1"
    assert toxiproxy_ip(subnet) == "10.213.9.2"
    assert node_ip(subnet, 1) == "10.213.9.11"
    assert node_ip(subnet, 101) == "10.213.9.111"


def test_subnet_choice_skips_everything_taken() -> None:
    taken = ["10.213.0.0/17", "192.0.2.0/24", "not-a-subnet", "0.0.0.0/0"]
    free = choose_subnets("run-a", taken)
    assert free, "the upper half of the pool is free"
    for cidr in free:
        net = ipaddress.ip_network(cidr)
        assert net.prefixlen == 24
        assert not net.overlaps(ipaddress.ip_network("10.213.0.0/17"))
    assert len(free) == 128


def test_subnet_choice_starts_at_a_run_dependent_place() -> None:
    starts = {choose_subnets(f"run-{i}", [])[0] for i in range(20)}
    assert len(starts) > 5


def test_everything_taken_leaves_nothing() -> None:
    assert choose_subnets("r", ["10.0.0.0/8"]) == []


def test_fs_label_fits_ext4() -> None:
    assert len(fs_label("20261121-010203-a1b2", 101)) <= 16
    assert fs_label("20261121-010203-a1b2", 1) == "kc-03a1b2-1"


def test_plan_nodes_handles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KCHAOS_STATE_DIR", str(tmp_path))
    spec = ClusterSpec(brokers=2, controllers=1)
    nodes = plan_nodes(spec, "r1", "10.213.3.0/24")
    assert [n.name for n in nodes] == ["broker-1", "broker-2", "controller-101"]
    b1, _, c = nodes
    assert b1.container_name == "kchaos-r1-broker-1"
    assert b1.mount_path == tmp_path / "runs" / "r1" / "node-1"
    assert b1.image_file == tmp_path / "runs" / "r1" / "node-1.img"
    assert set(b1.proxies) == {"client", "replication"}
    assert b1.proxies["client"].address == "10.213.3.2:19001"
    assert b1.proxies["replication"].upstream == "10.213.3.11:9093"
    assert set(c.proxies) == {"controller"}
    assert c.proxies["controller"].upstream == "10.213.3.111:9094"
    assert c.proxies["controller"].listen_port == 19301


def test_stop_order_puts_dedicated_brokers_before_the_controllers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KCHAOS_STATE_DIR", str(tmp_path))
    dedicated = plan_nodes(ClusterSpec(brokers=2, controllers=1), "r1", "10.213.3.0/24")
    assert [[n.name for n in g] for g in stop_order(dedicated)] == [
        ["broker-1", "broker-2"],
        ["controller-101"],
    ]
    # the node list's own order does not matter
    assert [[n.name for n in g] for g in stop_order(dedicated[::-1])] == [
        ["broker-2", "broker-1"],
        ["controller-101"],
    ]
    combined = plan_nodes(ClusterSpec(brokers=3), "r2", "10.213.4.0/24")
    assert [[n.name for n in g] for g in stop_order(combined)] == [
        ["broker-1", "broker-2", "broker-3"]
    ]
