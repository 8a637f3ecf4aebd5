"""Bring the shared test cluster back to health between Docker tests.

Only the tests use this (``healthy_cluster`` in conftest.py), so it lives beside them
rather than in kchaos.harness.cluster, whose layer may not import the faults.
"""

from __future__ import annotations

import contextlib

import docker.errors

from kchaos.faults.heal import heal_everything
from kchaos.harness.cluster.cluster import Cluster
from kchaos.harness.errors import ClusterError, HealError


def _own_heal(cluster: Cluster) -> list[str]:
    """What the cluster can undo by itself, after heal_everything (covers what a partial
    heal left)."""
    done = []
    for node in cluster.nodes:
        if cluster.is_mounted(node) and cluster.thaw_fs(node):
            done.append(f"thawed {node.name}")
        container = cluster.container(node)
        if container.status == "paused":
            container.unpause()
            done.append(f"unpaused {node.name}")
        if container.status == "running":
            with contextlib.suppress(ClusterError, ProcessLookupError):
                cluster.signal(node, "CONT")
            with contextlib.suppress(ClusterError):
                done += [
                    f"unthrottled {line} on {node.name}" for line in cluster.clear_throttles(node)
                ]
    with contextlib.suppress(HealError):
        cluster.toxiproxy.reset()
    for node in cluster.nodes:
        container = cluster.container(node)
        if container.status in ("exited", "created"):
            cluster.start_node(node, wait=False)
            done.append(f"started {node.name}")
    return done


def ensure_healthy(cluster: Cluster, timeout: float = 120.0) -> list[str]:
    """Heal every fault (``kchaos.faults.heal_everything``), start stopped nodes and wait
    until the cluster is ready; returns what was done."""
    try:
        done = list(heal_everything(cluster))
    except docker.errors.APIError as exc:
        done = [f"heal failed: {exc}"]
    done += _own_heal(cluster)  # cheap, and covers what a partial heal left
    cluster.wait_ready(timeout)
    return done
