"""``kchaos/kafka:<version>-notools``: the offline broker image with its tools purged.

Derived from ``kchaos/kafka:<version>`` by ``compose/kafka-notools/Dockerfile``, which
purges iptables, iproute2 and procps with dpkg (no download) and fails if any of their
programs is left. A cluster on this image gets every fault the project's image gets,
since faults act from the host (signals and the freezer by pid, iptables and ss in the
node's network namespace); the docker tests run partitions on it to keep that true.
"""

from __future__ import annotations

from pathlib import Path

from kchaos.harness import paths
from kchaos.harness.errors import ImageBuildError
from kchaos.harness.images.build import ensure_images
from kchaos.harness.images.dockercli import DockerCli
from kchaos.harness.images.hashing import hash_inputs
from kchaos.harness.images.steps import Reporter, Runner, subprocess_runner
from kchaos.harness.images.versions import INPUTS_LABEL

SUFFIX = "-notools"
REMOVED_PACKAGES = ("iptables", "iproute2", "procps")
CONTEXT = "kafka-notools"


def notools_tag(kafka_image: str) -> str:
    """``kchaos/kafka:4.4.0`` -> ``kchaos/kafka:4.4.0-notools``."""
    return kafka_image + SUFFIX


def notools_params(parent_id: str) -> dict[str, str]:
    return {"image": "kafka-notools", "parent": parent_id, "purge": " ".join(REMOVED_PACKAGES)}


def ensure_notools_image(
    kafka_version: str | None = None,
    *,
    force: bool = False,
    reporter: Reporter | None = None,
    runner: Runner | None = None,
    cache: Path | None = None,
    compose_dir: Path | None = None,
) -> str:
    """Make ``kchaos/kafka:<version>-notools`` exist (building its parent first when that
    is missing or stale); returns its tag. Quick when it is up to date."""
    run = runner or subprocess_runner
    rep = reporter or Reporter()
    cache_dir = cache or paths.cache_dir()
    compose = compose_dir or paths.COMPOSE_DIR
    parent = ensure_images(
        kafka_version, "offline", reporter=rep, runner=run, cache=cache_dir, compose_dir=compose
    ).kafka
    docker = DockerCli(run)
    found = docker.inspect([parent])
    if parent not in found:
        raise ImageBuildError(f"{parent} is missing after its build")
    context = compose / CONTEXT
    tag = notools_tag(parent)
    inputs = hash_inputs(notools_params(found[parent].id), [context / "Dockerfile"], compose)
    present = docker.inspect([tag])
    if not force and tag in present and present[tag].inputs == inputs:
        rep.say(f"{tag}: up to date")
        return tag
    with rep.step(f"docker build {tag}"):
        docker.build(
            context,
            tag,
            {"KAFKA_IMAGE": parent, "REMOVED_PACKAGES": " ".join(REMOVED_PACKAGES)},
            {INPUTS_LABEL: inputs},
            cache_dir / "logs" / f"{tag.rsplit(':', 1)[-1]}-build.log",
        )
    return tag
