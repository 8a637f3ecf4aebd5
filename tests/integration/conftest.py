"""Shared fixtures for tests against real brokers (every test here is marked ``docker``).

* ``cluster`` (session): one 3-broker KRaft cluster shared by every Docker test: short
  Kafka timeouts, small heaps, racks set, rack-aware replica selector. A test that harms
  it should use ``healthy_cluster`` (heals and waits first) or heal in its own finally.
* ``healthy_cluster``: the shared cluster after :func:`cluster_health.ensure_healthy`
  (every fault healed, stopped nodes started, ready).
* ``cluster_factory``: ``make(**spec_overrides) -> Cluster`` for tests that need a cluster
  of their own (removed at the end of the test).
* ``docker_client`` / ``kafka_images``: the engine and the image tags.

No Docker engine, or no images, is a test ERROR with a clear message, never a skip.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import docker
import pytest
from cluster_health import ensure_healthy

from kchaos.harness.cluster import Cluster, ClusterSpec

os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")

# Short timeouts so that ISR shrink/expand and failover happen within seconds.
TEST_SERVER_PROPERTIES: dict[str, str] = {
    "replica.lag.time.max.ms": "5000",
    "broker.session.timeout.ms": "6000",
    "broker.heartbeat.interval.ms": "1000",
    "replica.selector.class": "org.apache.kafka.common.replica.RackAwareReplicaSelector",
    "group.initial.rebalance.delay.ms": "0",
}
TEST_RACKS = {1: "rack-a", 2: "rack-b", 3: "rack-c"}
TEST_HEAP = "320m"


def cluster_spec_for_tests(images: Any = None, **overrides: Any) -> ClusterSpec:
    """The spec of test clusters; ``overrides`` replace fields (properties are merged)."""
    brokers = overrides.get("brokers", 3)
    fields: dict[str, Any] = {
        "brokers": brokers,
        "heap": TEST_HEAP,
        "racks": {k: v for k, v in TEST_RACKS.items() if k <= brokers},
        "ready_timeout": 120.0,
        "disk_size_mb": 512,
        "images": images,
    }
    props = dict(TEST_SERVER_PROPERTIES)
    props.update(overrides.pop("server_properties", {}))
    fields.update(overrides)
    fields["server_properties"] = props
    return ClusterSpec(**fields)


@pytest.fixture(scope="session")
def docker_client() -> docker.DockerClient:
    try:
        client = docker.from_env()
        client.ping()
    except docker.errors.DockerException as exc:
        pytest.fail(
            f"Docker engine not reachable ({exc}). The docker tests need it: run `make setup` "
            "(it starts dockerd) or start dockerd with --iptables=false --bridge=none.",
            pytrace=False,
        )
    return client


@pytest.fixture(scope="session")
def kafka_images(docker_client: docker.DockerClient) -> Any:
    """The ImageSet (built or fetched by harness.images, quick when present)."""
    try:
        from kchaos.harness.images import ensure_images

        return ensure_images()
    except Exception as exc:  # noqa: BLE001 - any failure here must fail the tests loudly
        pytest.fail(f"kchaos images not available ({exc}); run `make setup`", pytrace=False)


@pytest.fixture(scope="session")
def cluster(kafka_images: Any) -> Iterator[Cluster]:
    with Cluster(cluster_spec_for_tests(kafka_images)) as shared:
        yield shared


@pytest.fixture
def healthy_cluster(cluster: Cluster) -> Cluster:
    ensure_healthy(cluster)
    return cluster


@pytest.fixture
def cluster_factory(kafka_images: Any) -> Iterator[Callable[..., Cluster]]:
    made: list[Cluster] = []

    def make(**overrides: Any) -> Cluster:
        new = Cluster(cluster_spec_for_tests(kafka_images, **overrides))
        made.append(new)
        return new.start()

    yield make
    for c in made:
        c.cleanup()
