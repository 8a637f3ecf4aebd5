"""``kchaos bench cluster``, the measuring: how long a cluster takes to come up, and a set-up.

Three timings, run one after the other on the same machine:

* baseline: one JVM start in a Kafka container (``kafka-storage.sh random-uuid``), the
  least any broker start can cost here;
* cluster: ``Cluster.start()`` of 3 brokers until the probe topic's ISR is full
  (goal: <= 30 s), also given as a ratio to the baseline;
* set-up: a second ``bash compose/setup.sh`` (everything already there; goal: seconds).
"""

from __future__ import annotations

import dataclasses
import subprocess
import time

from kchaos.harness.cluster.cluster import Cluster
from kchaos.harness.cluster.containers import docker_client
from kchaos.harness.cluster.spec import ClusterSpec
from kchaos.harness.paths import COMPOSE_DIR

CLUSTER_GOAL_S = 30.0


def jvm_start_seconds(image: str) -> float:
    client = docker_client()
    began = time.monotonic()
    client.containers.run(
        image,
        ["/opt/kafka/bin/kafka-storage.sh", "random-uuid"],
        entrypoint=[],
        remove=True,
        network_mode="none",
        labels={"io.kchaos": "1", "io.kchaos.run": "bench", "io.kchaos.role": "tool"},
    )
    return time.monotonic() - began


def setup_seconds() -> tuple[float, int]:
    began = time.monotonic()
    done = subprocess.run(
        ["bash", str(COMPOSE_DIR / "setup.sh")], capture_output=True, timeout=1800
    )
    return time.monotonic() - began, done.returncode


def cluster_start(brokers: int, jvm_opts: str | None) -> tuple[float, str]:
    spec = ClusterSpec(brokers=brokers, heap="384m")
    if jvm_opts is not None:
        spec = dataclasses.replace(spec, jvm_performance_opts=jvm_opts)
    with Cluster(spec) as cluster:
        assert cluster.start_seconds is not None
        return cluster.start_seconds, cluster.kafka_image
