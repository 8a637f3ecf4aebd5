"""``kchaos cluster up`` / ``kchaos cluster down``: a cluster by hand."""

from __future__ import annotations

import signal
import sys
import time
from types import FrameType

import click

from kchaos.cli.options import kafka_version_option
from kchaos.harness.cluster.cleanup import check_run_id, cleanup_run
from kchaos.harness.cluster.cluster import Cluster
from kchaos.harness.cluster.containers import docker_client
from kchaos.harness.cluster.spec import ClusterSpec, default_kafka_version
from kchaos.harness.labels import new_run_id


def _terminate(signum: int, _frame: FrameType | None) -> None:
    # SIGTERM unwinds like Ctrl-C, so a failed or interrupted start still cleans up.
    raise KeyboardInterrupt(f"signal {signum}")


@click.group("cluster")
def cluster_cmd() -> None:
    """Bring a cluster up or down by hand."""


@cluster_cmd.command("up")
@click.option("--brokers", default=3, show_default=True, type=click.IntRange(1, 60))
@click.option("--controllers", default=0, show_default=True, type=click.IntRange(0, 9))
@kafka_version_option(otherwise="the newest 4.x")
@click.option("--run-id", default=None, help="Run id to use (default: a new one).")
@click.option("--heap", default="512m", show_default=True)
@click.option(
    "--foreground",
    is_flag=True,
    help="Stay in the foreground once up; Ctrl-C or SIGTERM removes the cluster.",
)
@click.option(
    "--property",
    "properties",
    multiple=True,
    metavar="NAME=VALUE",
    help="Server property for every node (repeatable).",
)
def up_cmd(
    brokers: int,
    controllers: int,
    kafka_version: str | None,
    run_id: str | None,
    heap: str,
    properties: tuple[str, ...],
    foreground: bool,
) -> int:
    """Start a cluster and leave it running; prints its run id and bootstrap servers."""
    props = {}
    for item in properties:
        name, sep, value = item.partition("=")
        if not sep:
            raise click.BadParameter(f"{item!r} is not NAME=VALUE", param_hint="--property")
        props[name.strip()] = value
    run_id = run_id or new_run_id()
    spec = ClusterSpec(
        brokers=brokers,
        controllers=controllers,
        heap=heap,
        server_properties=props,
        run_id=check_run_id(run_id),
        kafka_version=kafka_version or default_kafka_version(),
    )
    click.echo(f"run {run_id}: starting {brokers} broker(s)", err=True)
    sys.stderr.flush()
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        cluster = Cluster(spec).start()
        _describe(cluster)
        if foreground:
            try:
                while True:
                    time.sleep(3600)
            finally:
                click.echo(f"removing run {run_id}", err=True)
                cluster.cleanup()
    finally:
        signal.signal(signal.SIGTERM, previous)
    return 0


def _describe(cluster: Cluster) -> None:
    run_id = cluster.run_id
    click.echo(f"run id:            {cluster.run_id}")
    click.echo(f"bootstrap servers: {cluster.bootstrap_servers}")
    click.echo(f"toxiproxy:         {cluster.toxiproxy_url}")
    for node in cluster.nodes:
        click.echo(f"{node.name:<17}  {node.ip}  data {node.mount_path} ({node.loop_device})")
    click.echo(f"started in {cluster.start_seconds:.1f}s; stop with: kchaos cluster down {run_id}")
    sys.stdout.flush()


@cluster_cmd.command("down")
@click.argument("run_id")
def down_cmd(run_id: str) -> int:
    """Remove a run's cluster (containers, network, proxies, filesystems)."""
    from kchaos.faults.heal import heal_everything

    done = cleanup_run(
        check_run_id(run_id), client=docker_client(), healer=heal_everything, echo=click.echo
    )
    if not done:
        click.echo(f"run {run_id}: nothing left")
    return 0
