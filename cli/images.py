"""``kchaos images build`` and ``kchaos images list``."""

from __future__ import annotations

import click

from kchaos.cli.options import kafka_version_option
from kchaos.harness.errors import ConfigError
from kchaos.harness.images.build import ensure_images
from kchaos.harness.images.dockercli import DockerCli
from kchaos.harness.images.notools import ensure_notools_image
from kchaos.harness.images.steps import subprocess_runner
from kchaos.harness.images.versions import (
    BASE_IMAGE,
    DEFAULT_KAFKA_VERSION,
    OFFLINE_KAFKA_REPO,
    OFFLINE_TOXIPROXY_IMAGE,
    REGISTRY_KAFKA_REPO,
    REGISTRY_TOXIPROXY_IMAGE,
    SOURCES,
)


@click.group("images")
def images_cmd() -> None:
    """Build (offline) or pull (registry) the Kafka and Toxiproxy images."""


@images_cmd.command("build")
@kafka_version_option(otherwise=f"{DEFAULT_KAFKA_VERSION}; 3.3.0 or newer")
@click.option(
    "--source",
    type=click.Choice(SOURCES),
    default="offline",
    show_default=True,
    help="offline: build from Debian, Maven Central and the Go module proxy; "
    "registry: pull the official images.",
)
@click.option("--force", is_flag=True, help="Rebuild (or pull) even if up to date.")
@click.option(
    "--notools",
    is_flag=True,
    help="Also derive kchaos/kafka:V-notools, the broker image without iptables, iproute2 "
    "and procps (faults need nothing inside the image; offline source only).",
)
def build_cmd(kafka_version: str | None, source: str, force: bool, notools: bool) -> int:
    """Make the images exist; quick when they are already up to date."""
    if notools and source != "offline":
        raise ConfigError(
            "--notools derives from the offline image; the official apache/kafka image "
            "has no such tools already",
            field="notools",
        )
    images = ensure_images(kafka_version, source, force=force)
    click.echo(f"kafka={images.kafka} toxiproxy={images.toxiproxy}")
    if notools:
        click.echo(f"kafka-notools={ensure_notools_image(kafka_version, force=force)}")
    return 0


def list_tags(docker: DockerCli) -> list[str]:
    """Every local tag of the kchaos images and of the official ones."""
    tags: list[str] = []
    for repo in (OFFLINE_KAFKA_REPO, REGISTRY_KAFKA_REPO):
        done = docker.runner(
            [docker.program, "image", "ls", repo, "--format", "{{.Repository}}:{{.Tag}}"],
            timeout=60,
        )
        tags += sorted(
            line.strip() for line in done.output.splitlines() if line.strip().startswith(repo + ":")
        )
    return [BASE_IMAGE, *tags, OFFLINE_TOXIPROXY_IMAGE, REGISTRY_TOXIPROXY_IMAGE]


@images_cmd.command("list")
def list_cmd() -> int:
    """Show which images are present, their size and input hash."""
    docker = DockerCli(subprocess_runner)
    tags = list_tags(docker)
    found = docker.inspect(tags)
    for tag in tags:
        info = found.get(tag)
        if info is None:
            click.echo(f"{tag:45} missing")
        else:
            inputs = (info.inputs or "-")[:12]
            click.echo(f"{tag:45} {info.size / 1e6:7.0f} MB  inputs={inputs}  {info.id[7:19]}")
    return 0
