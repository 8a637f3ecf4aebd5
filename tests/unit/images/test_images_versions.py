"""Version rules and image names."""

from __future__ import annotations

import pytest

from kchaos.harness.errors import ConfigError
from kchaos.harness.images import DEFAULT_KAFKA_VERSION, TOXIPROXY_VERSION
from kchaos.harness.images.versions import (
    KafkaVersion,
    check_source,
    jar_version,
    kafka_tag,
    parse_kafka_version,
    toxiproxy_tag,
)


def test_default_version_is_the_contract() -> None:
    assert DEFAULT_KAFKA_VERSION == "4.4.0"
    assert TOXIPROXY_VERSION == "2.12.0"
    assert parse_kafka_version(None) == KafkaVersion(4, 4, 0)


@pytest.mark.parametrize(
    ("text", "expected", "log4j"),
    [
        ("3.3.0", (3, 3, 0), 1),
        ("3.3.2", (3, 3, 2), 1),
        ("3.9.1", (3, 9, 1), 1),
        ("4.0.0", (4, 0, 0), 2),
        (" 4.4.0 ", (4, 4, 0), 2),
        ("10.0.12", (10, 0, 12), 2),
    ],
)
def test_parse_accepts_releases_from_3_3(
    text: str, expected: tuple[int, int, int], log4j: int
) -> None:
    version = parse_kafka_version(text)
    assert (version.major, version.minor, version.patch) == expected
    assert version.log4j == log4j
    assert str(version) == text.strip()


@pytest.mark.parametrize("text", ["3.2.3", "2.8.0", "3.2.99"])
def test_parse_refuses_releases_without_production_kraft(text: str) -> None:
    with pytest.raises(ConfigError, match="too old") as info:
        parse_kafka_version(text)
    assert info.value.field == "kafka-version"


@pytest.mark.parametrize("text", ["4.4", "latest", "4.4.0-rc1", "v4.4.0", "", "4.4.0.1"])
def test_parse_refuses_what_is_not_a_release_number(text: str) -> None:
    with pytest.raises(ConfigError, match="not a Kafka release number"):
        parse_kafka_version(text)


def test_versions_order_numerically() -> None:
    assert parse_kafka_version("3.10.0") > parse_kafka_version("3.9.2")


def test_tags_per_source() -> None:
    version = parse_kafka_version("3.3.2")
    assert kafka_tag(version, "offline") == "kchaos/kafka:3.3.2"
    assert kafka_tag(version, "registry") == "apache/kafka:3.3.2"
    assert toxiproxy_tag("offline") == "kchaos/toxiproxy:2.12.0"
    assert toxiproxy_tag("registry") == "ghcr.io/shopify/toxiproxy:2.12.0"


def test_unknown_source_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as info:
        check_source("dockerhub")
    assert info.value.field == "source"


@pytest.mark.parametrize(
    ("name", "artifact", "expected"),
    [
        ("kafka-tools-4.3.1.jar", "kafka-tools", "4.3.1"),
        ("kafka-tools-api-4.3.1.jar", "kafka-tools", None),
        ("kafka_2.13-3.3.2.jar", "kafka_2.13", "3.3.2"),
        ("kafka-tools.jar", "kafka-tools", None),
    ],
)
def test_jar_version(name: str, artifact: str, expected: str | None) -> None:
    assert jar_version(name, artifact) == expected
