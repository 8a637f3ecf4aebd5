"""``ensure_images``: decide what is stale, then build or pull exactly that."""

from __future__ import annotations

import fcntl
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from kchaos.harness import paths
from kchaos.harness.errors import ImageBuildError
from kchaos.harness.images.base import base_params, build_base, debian_mirror
from kchaos.harness.images.dockercli import DockerCli, ImageInfo
from kchaos.harness.images.hashing import hash_inputs
from kchaos.harness.images.jars import fetch_jars
from kchaos.harness.images.kafka import (
    build_kafka_image,
    jar_params,
    kafka_context_inputs,
    kafka_params,
)
from kchaos.harness.images.registry import pull_images
from kchaos.harness.images.steps import Reporter, Runner, subprocess_runner
from kchaos.harness.images.toxiproxy import (
    build_toxiproxy_image,
    toxiproxy_binary,
    toxiproxy_params,
)
from kchaos.harness.images.versions import (
    BASE_IMAGE,
    KafkaVersion,
    check_source,
    kafka_tag,
    parse_kafka_version,
    toxiproxy_tag,
)


@dataclass(frozen=True)
class ImageSet:
    """The image tags of one cluster."""

    kafka: str
    toxiproxy: str
    kafka_version: str


def ensure_images(
    kafka_version: str | None = None,
    source: str = "offline",
    *,
    force: bool = False,
    reporter: Reporter | None = None,
    runner: Runner | None = None,
    cache: Path | None = None,
    compose_dir: Path | None = None,
) -> ImageSet:
    """Make the images of ``kafka_version`` (default DEFAULT_KAFKA_VERSION) exist.

    Idempotent and quick when they are up to date. Raises ConfigError for a bad version
    or source, ImageBuildError (with the failing tool's output tail) when a build fails.
    """
    version = parse_kafka_version(kafka_version)
    check_source(source)
    run = runner or subprocess_runner
    rep = reporter or Reporter()
    docker = DockerCli(run)
    cache_dir = cache or paths.cache_dir()
    compose = compose_dir or paths.COMPOSE_DIR
    images = ImageSet(kafka_tag(version, source), toxiproxy_tag(source), str(version))
    start = time.monotonic()
    if source == "registry":
        pull_images(docker, rep, [images.kafka, images.toxiproxy], force, cache_dir / "logs")
    else:
        builder = _OfflineBuilder(docker, run, rep, cache_dir, compose, force)
        if not builder.up_to_date(version, images):
            with _build_lock(cache_dir):
                builder.build(version, images)
    rep.say(f"images ready: {images.kafka} {images.toxiproxy} ({time.monotonic() - start:.1f}s)")
    return images


@dataclass
class _OfflineBuilder:
    docker: DockerCli
    runner: Runner
    reporter: Reporter
    cache: Path
    compose: Path
    force: bool

    def _hashes(self, version: KafkaVersion, base: ImageInfo | None) -> dict[str, str]:
        kafka_dir = self.compose / "kafka"
        base_id = base.id if base else "none"
        return {
            "base": hash_inputs(base_params(debian_mirror()), [], self.compose),
            "kafka": hash_inputs(
                kafka_params(version, base_id), kafka_context_inputs(kafka_dir), self.compose
            ),
            "jars": hash_inputs(jar_params(version), [kafka_dir / "pom.xml"], self.compose),
            "toxiproxy": hash_inputs(
                toxiproxy_params(base_id), [self.compose / "toxiproxy" / "Dockerfile"], self.compose
            ),
        }

    def up_to_date(self, version: KafkaVersion, images: ImageSet) -> bool:
        if self.force:
            return False
        found = self.docker.inspect([BASE_IMAGE, images.kafka, images.toxiproxy])
        hashes = self._hashes(version, found.get(BASE_IMAGE))
        wanted = {
            BASE_IMAGE: hashes["base"],
            images.kafka: hashes["kafka"],
            images.toxiproxy: hashes["toxiproxy"],
        }
        stale = [
            tag for tag, inputs in wanted.items() if tag not in found or found[tag].inputs != inputs
        ]
        if stale:
            self.reporter.say("to build: " + ", ".join(stale))
            return False
        return True

    def build(self, version: KafkaVersion, images: ImageSet) -> None:
        mirror = debian_mirror()
        found = self.docker.inspect([BASE_IMAGE])
        base_hash = self._hashes(version, found.get(BASE_IMAGE))["base"]
        if self.force or BASE_IMAGE not in found or found[BASE_IMAGE].inputs != base_hash:
            build_base(self.docker, self.runner, self.reporter, self.cache, base_hash, mirror)
            found = self.docker.inspect([BASE_IMAGE])
        else:
            self.reporter.say(f"{BASE_IMAGE}: up to date")
        if BASE_IMAGE not in found:
            raise ImageBuildError(f"{BASE_IMAGE} is still missing after its import")
        hashes = self._hashes(version, found[BASE_IMAGE])
        present = self.docker.inspect([images.kafka, images.toxiproxy])
        if self.force or present.get(images.kafka, _NONE).inputs != hashes["kafka"]:
            jars = fetch_jars(
                self.runner,
                self.reporter,
                self.compose / "kafka" / "pom.xml",
                self.cache,
                version,
                hashes["jars"],
            )
            build_kafka_image(
                self.docker,
                self.reporter,
                self.compose / "kafka",
                jars,
                version,
                images.kafka,
                hashes["kafka"],
                self.cache,
            )
        else:
            self.reporter.say(f"{images.kafka}: up to date")
        if self.force or present.get(images.toxiproxy, _NONE).inputs != hashes["toxiproxy"]:
            binary = toxiproxy_binary(self.runner, self.reporter, self.cache)
            build_toxiproxy_image(
                self.docker,
                self.reporter,
                self.compose / "toxiproxy" / "Dockerfile",
                binary,
                images.toxiproxy,
                hashes["toxiproxy"],
                self.cache,
            )
        else:
            self.reporter.say(f"{images.toxiproxy}: up to date")
        self._drop_replaced()

    def _drop_replaced(self) -> None:
        """Remove kchaos-built images that rebuilds left without a tag, unless a container
        still uses one (``docker rmi`` without force refuses then; a later build retries)."""
        for image_id in self.docker.dangling_kchaos_images():
            self.docker.remove_image(image_id)


_NONE = ImageInfo(tag="", id="", size=0)


@contextmanager
def _build_lock(cache: Path) -> Iterator[None]:
    """One builder at a time on this machine (parallel test sessions share the cache)."""
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / "images.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def image_sizes(tags: list[str], runner: Runner | None = None) -> dict[str, int]:
    """Tag -> size in bytes of the images present locally."""
    found = DockerCli(runner or subprocess_runner).inspect(tags)
    return {tag: info.size for tag, info in found.items()}
