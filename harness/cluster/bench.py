"""``kchaos bench cluster``: how long a cluster takes to come up, and a repeated set-up.

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

import click

from kchaos.harness.cluster.cluster import Cluster
from kchaos.harness.cluster.containers import docker_client
from kchaos.harness.cluster.spec import ClusterSpec
from kchaos.harness.paths import COMPOSE_DIR

CLUSTER_GOAL_S = 30.0


def _baseline(image: str) -> float:
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


def _setup_seconds() -> tuple[float, int]:
    began = time.monotonic()
    done = subprocess.run(
        ["bash", str(COMPOSE_DIR / "setup.sh")], capture_output=True, timeout=1800
    )
    return time.monotonic() - began, done.returncode


def _cluster_start(brokers: int, jvm_opts: str | None) -> tuple[float, str]:
    spec = ClusterSpec(brokers=brokers, heap="384m")
    if jvm_opts is not None:
        spec = dataclasses.replace(spec, jvm_performance_opts=jvm_opts)
    with Cluster(spec) as cluster:
        assert cluster.start_seconds is not None
        return cluster.start_seconds, cluster.kafka_image


@click.command("cluster")
@click.option("--brokers", default=3, show_default=True, type=click.IntRange(1, 9))
@click.option("--rounds", default=1, show_default=True, type=click.IntRange(1, 5))
@click.option("--setup/--no-setup", default=True, help="Also time a repeated compose/setup.sh.")
@click.option(
    "--kafka-defaults/--no-kafka-defaults",
    default=True,
    help="Also start a cluster with Kafka's own JVM flags (G1, C2) as the baseline.",
)
def bench_cluster_cmd(brokers: int, rounds: int, setup: bool, kafka_defaults: bool) -> int:
    """Cluster.start() to full ISR (harness JVM flags vs Kafka's) and a repeated set-up."""
    tuned: list[float] = []
    plain: list[float] = []
    jvm: list[float] = []
    for i in range(rounds):
        seconds, image = _cluster_start(brokers, None)
        tuned.append(seconds)
        if kafka_defaults:
            plain.append(_cluster_start(brokers, "")[0])
        jvm.append(_baseline(image))
        line = f"round {i + 1}: cluster start {tuned[-1]:.1f}s"
        if plain:
            line += f", with Kafka's JVM flags {plain[-1]:.1f}s"
        click.echo(line + f", one JVM start {jvm[-1]:.1f}s")
    best = min(tuned)
    click.echo(f"Cluster.start() to full ISR ({brokers} brokers): {best:.1f}s (best of {rounds})")
    if plain:
        click.echo(
            f"same with Kafka's default JVM flags (baseline): {min(plain):.1f}s; "
            f"ratio {best / min(plain):.2f}"
        )
    click.echo(f"one JVM start in a Kafka container: {min(jvm):.1f}s; ratio {best / min(jvm):.1f}x")
    click.echo(
        f"goal <= {CLUSTER_GOAL_S:.0f}s: {'met' if best <= CLUSTER_GOAL_S else 'MISSED'} "
        f"({best / CLUSTER_GOAL_S:.2f} of the goal)"
    )
    status = 0 if best <= CLUSTER_GOAL_S else 1
    if setup:
        seconds, code = _setup_seconds()
        click.echo(f"repeated set-up (bash compose/setup.sh): {seconds:.1f}s (exit {code})")
        if code != 0:
            status = 1
    return status
