"""Registry mode: the official images, pulled (only when not already present)."""

from __future__ import annotations

from pathlib import Path

from kchaos.harness.errors import ImageBuildError
from kchaos.harness.images.dockercli import DockerCli
from kchaos.harness.images.steps import Reporter


def pull_images(
    docker: DockerCli, reporter: Reporter, tags: list[str], force: bool, logs: Path
) -> None:
    present = docker.inspect(tags)
    for tag in tags:
        if tag in present and not force:
            reporter.say(f"{tag}: present")
            continue
        with reporter.step(f"docker pull {tag}"):
            try:
                docker.pull(tag, logs / f"pull-{tag.replace('/', '_').replace(':', '_')}.log")
            except ImageBuildError as exc:
                raise ImageBuildError(
                    f"could not pull {tag}: no registry reachable from this machine? "
                    "Build the offline images instead (`kchaos images build`, the default "
                    f"--source offline).\n{exc}"
                ) from None
