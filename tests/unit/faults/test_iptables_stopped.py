"""Healing a cut on a node whose container a crash fault stopped is a no-op, not an error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kchaos.faults import iptables
from kchaos.harness.cluster.api import NodeHandle
from kchaos.harness.errors import FaultError, HealError


class _Cluster:
    def __init__(self, error: str) -> None:
        self.error = error
        self.node_ = NodeHandle(
            node_id=1,
            name="broker-1",
            roles=("broker", "controller"),
            container_name="c1",
            ip="10.0.0.11",
            mount_path=Path("/nonexistent"),
            loop_device="/dev/loop9",
            image_file=Path("/nonexistent.img"),
        )

    def node(self, key: Any) -> NodeHandle:
        return self.node_

    def net_exec(self, node: NodeHandle, cmd: Any) -> tuple[int, str]:
        raise RuntimeError(self.error)


def test_removing_rules_of_a_stopped_container_is_nothing_to_do() -> None:
    cluster: Any = _Cluster("container abc is not running")
    iptables.remove(cluster, "KCHAOS-f-1", [1])  # no HealError


def test_other_exec_failures_still_fail_the_heal_and_the_install() -> None:
    cluster: Any = _Cluster("nsenter into abc: cannot open /proc/7/ns/net: Permission denied")
    with pytest.raises(HealError, match="Permission denied"):
        iptables.remove(cluster, "KCHAOS-f-1", [1])
    stopped: Any = _Cluster("Container abc is not running")
    with pytest.raises(FaultError, match="not running"):
        iptables.install(stopped, "KCHAOS-f-1", {1: [["-j", "DROP"]]})
