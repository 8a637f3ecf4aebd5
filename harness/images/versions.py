"""Image names and Kafka version rules (pure functions, no Docker)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kchaos.harness.errors import ConfigError

DEFAULT_KAFKA_VERSION = "4.4.0"  # the newest 4.x broker release on Maven Central
TOXIPROXY_VERSION = "2.12.0"
JMX_EXPORTER_VERSION = "1.0.1"  # io.prometheus.jmx:jmx_prometheus_javaagent
MIN_KAFKA_VERSION = (3, 3, 0)  # first release whose KRaft mode is production-ready

BASE_IMAGE = "kchaos/base:bookworm"
OFFLINE_KAFKA_REPO = "kchaos/kafka"
OFFLINE_TOXIPROXY_IMAGE = f"kchaos/toxiproxy:{TOXIPROXY_VERSION}"
REGISTRY_KAFKA_REPO = "apache/kafka"
REGISTRY_TOXIPROXY_IMAGE = f"ghcr.io/shopify/toxiproxy:{TOXIPROXY_VERSION}"

SOURCES = ("offline", "registry")
INPUTS_LABEL = "io.kchaos.inputs"  # sha256 of everything an offline image is built from

_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")


@dataclass(frozen=True, order=True)
class KafkaVersion:
    major: int
    minor: int
    patch: int

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"

    @property
    def log4j(self) -> int:
        """Logging back-end of the release: 2 (log4j 2) from 4.0 on, else 1 (reload4j)."""
        return 2 if self.major >= 4 else 1


def parse_kafka_version(text: str | None) -> KafkaVersion:
    """``"3.3.2"`` -> KafkaVersion; None means the default. Bad input is a ConfigError."""
    raw = DEFAULT_KAFKA_VERSION if text is None else text.strip()
    match = _VERSION.fullmatch(raw)
    if match is None:
        raise ConfigError(
            f"{raw!r} is not a Kafka release number such as {DEFAULT_KAFKA_VERSION}",
            field="kafka-version",
        )
    version = KafkaVersion(*(int(part) for part in match.groups()))
    if (version.major, version.minor, version.patch) < MIN_KAFKA_VERSION:
        floor = ".".join(str(p) for p in MIN_KAFKA_VERSION)
        raise ConfigError(
            f"Kafka {version} is too old: kchaos runs KRaft brokers, from {floor} on",
            field="kafka-version",
        )
    return version


def check_source(source: str) -> str:
    if source not in SOURCES:
        raise ConfigError(f"{source!r} is not one of {', '.join(SOURCES)}", field="source")
    return source


def kafka_tag(version: KafkaVersion, source: str) -> str:
    repo = OFFLINE_KAFKA_REPO if check_source(source) == "offline" else REGISTRY_KAFKA_REPO
    return f"{repo}:{version}"


def toxiproxy_tag(source: str) -> str:
    if check_source(source) == "offline":
        return OFFLINE_TOXIPROXY_IMAGE
    return REGISTRY_TOXIPROXY_IMAGE


def jar_version(file_name: str, artifact: str) -> str | None:
    """``kafka-tools-4.3.1.jar`` with artifact ``kafka-tools`` -> ``"4.3.1"``."""
    match = re.fullmatch(re.escape(artifact) + r"-(\d[^-]*(?:-[A-Za-z0-9.]+)?)\.jar", file_name)
    return match.group(1) if match else None
