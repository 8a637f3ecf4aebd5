"""The Kafka cluster under test: ``Cluster``, ``ClusterSpec``, ``attach``.

Imported lazily, so that ``kchaos.harness.cluster.api`` (the handles faults and workloads code
against) loads without Docker or Kafka client libraries.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kchaos.harness.cluster.cluster import Cluster, attach
    from kchaos.harness.cluster.spec import ClusterSpec

__all__ = ["Cluster", "ClusterSpec", "attach"]


def __getattr__(name: str) -> Any:
    if name in ("Cluster", "attach"):
        from kchaos.harness.cluster import cluster

        return getattr(cluster, name)
    if name == "ClusterSpec":
        from kchaos.harness.cluster.spec import ClusterSpec

        return ClusterSpec
    raise AttributeError(f"module 'kchaos.harness.cluster' has no attribute {name!r}")
