"""The few Docker CLI calls the image builder needs (through a Runner, so fakeable)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kchaos.harness.images.steps import Runner, check, subprocess_runner
from kchaos.harness.images.versions import INPUTS_LABEL


@dataclass(frozen=True)
class ImageInfo:
    tag: str
    id: str
    size: int
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def inputs(self) -> str | None:
        return self.labels.get(INPUTS_LABEL)


@dataclass
class DockerCli:
    runner: Runner = subprocess_runner
    program: str = "docker"

    def inspect(self, tags: Sequence[str]) -> dict[str, ImageInfo]:
        """Tag -> ImageInfo for the tags present locally (missing ones are left out)."""
        if not tags:
            return {}
        done = self.runner([self.program, "image", "inspect", *tags], timeout=60)
        entries: list[dict[str, Any]] = []
        rest = done.output
        start = done.output.find("[")
        if start >= 0:
            try:
                entries, end = json.JSONDecoder().raw_decode(done.output[start:])
                rest = done.output[:start] + done.output[start + end :]
            except json.JSONDecodeError:
                entries = []
        # Missing images are expected; anything else (no engine...) is a real failure.
        problems = [ln for ln in rest.splitlines() if ln.strip() and "No such image" not in ln]
        if done.returncode != 0 and problems:
            check(done, "docker image inspect (is the Docker engine running?)")
        found: dict[str, ImageInfo] = {}
        for entry in entries:
            labels: dict[str, str] = (entry.get("Config") or {}).get("Labels") or {}
            for tag in entry.get("RepoTags") or []:
                if tag in tags:
                    size = int(entry.get("Size", 0))
                    found[tag] = ImageInfo(tag, str(entry["Id"]), size, labels)
        return found

    def build(
        self, context: Path, tag: str, build_args: dict[str, str], labels: dict[str, str], log: Path
    ) -> None:
        argv = [self.program, "build", "--pull=false", "--force-rm", "-t", tag]
        for key, value in sorted(build_args.items()):
            argv += ["--build-arg", f"{key}={value}"]
        for key, value in sorted(labels.items()):
            argv += ["--label", f"{key}={value}"]
        argv.append(str(context))
        check(
            self.runner(argv, env=_legacy_builder_env(), timeout=1800), f"docker build {tag}", log
        )

    def import_tarball(self, tarball: Path, tag: str, changes: Sequence[str], log: Path) -> None:
        argv = [self.program, "import"]
        for change in changes:
            argv += ["--change", change]
        argv += [str(tarball), tag]
        check(self.runner(argv, timeout=1800), f"docker import {tag}", log)

    def dangling_kchaos_images(self) -> list[str]:
        """Ids of untagged images that carry the kchaos input label (built by kchaos)."""
        argv = [
            self.program,
            "image",
            "ls",
            "-q",
            "--no-trunc",
            "--filter",
            "dangling=true",
            "--filter",
            f"label={INPUTS_LABEL}",
        ]
        done = self.runner(argv, timeout=60)
        return [line.strip() for line in done.output.splitlines() if line.strip()]

    def remove_image(self, image_id: str) -> bool:
        """``docker rmi`` without force: False when a container (or child image) uses it."""
        return self.runner([self.program, "rmi", image_id], timeout=120).returncode == 0

    def pull(self, tag: str, log: Path) -> None:
        check(self.runner([self.program, "pull", tag], timeout=1800), f"docker pull {tag}", log)


def _legacy_builder_env() -> dict[str, str]:
    """Debian's docker.io has no buildx; the classic builder needs no registry at all."""
    import os

    env = dict(os.environ)
    env.setdefault("DOCKER_BUILDKIT", "0")
    return env
