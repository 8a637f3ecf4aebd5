"""The shared 3-broker cluster against real Kafka, Toxiproxy and Docker."""

from __future__ import annotations

import time
from typing import Any

import pytest
import requests
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import NewTopic
from kafka import KafkaConsumer, TopicPartition

from kchaos.harness.cluster import Cluster
from kchaos.harness.cluster.readiness import admin_client, answers_requests

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]

RECORDS = 10_000


def _create_topic(cluster: Cluster, name: str, partitions: int = 6) -> None:
    admin = cluster.admin()
    futures = admin.create_topics(
        [
            NewTopic(
                name,
                num_partitions=partitions,
                replication_factor=3,
                config={"min.insync.replicas": "2"},
            )
        ]
    )
    futures[name].result(timeout=30)
    cluster.wait_isr_full([name], timeout=60)


def _produce(cluster: Cluster, topic: str, n: int) -> dict[int, list[tuple[bytes, bytes]]]:
    """acks=all, idempotent; returns what was acknowledged, per partition in offset order."""
    acked: dict[int, list[tuple[int, bytes, bytes]]] = {}
    errors: list[str] = []

    def report(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(str(err))
        else:
            acked.setdefault(msg.partition(), []).append((msg.offset(), msg.key(), msg.value()))

    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
        }
    )
    for i in range(n):
        producer.produce(
            topic, key=f"k-{i}".encode(), value=f"value-{i}".encode(), on_delivery=report
        )
        if i % 1000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0, "records still in flight after 60 s"
    assert errors == []
    return {p: [(k, v) for _, k, v in sorted(recs)] for p, recs in acked.items()}


def _consume(
    cluster: Cluster, topic: str, partitions: int, n: int
) -> dict[int, list[tuple[bytes, bytes]]]:
    consumer = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap_servers.split(","),
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        consumer_timeout_ms=15_000,
    )
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        consumer.seek_to_beginning()
        got: dict[int, list[tuple[bytes, bytes]]] = {}
        total = 0
        deadline = time.monotonic() + 90
        while total < n and time.monotonic() < deadline:
            batch = consumer.poll(timeout_ms=1000, max_records=5000)
            for tp, records in batch.items():
                for rec in records:
                    got.setdefault(tp.partition, []).append((rec.key, rec.value))
                    total += 1
        return got
    finally:
        consumer.close()


def test_records_survive_and_isr_refills_after_a_restart(cluster: Cluster) -> None:
    topic = "it-cluster-durable"
    _create_topic(cluster, topic)
    produced = _produce(cluster, topic, RECORDS)
    assert sum(len(v) for v in produced.values()) == RECORDS
    assert len(produced) == 6, "the default partitioner spreads keys over every partition"

    consumed = _consume(cluster, topic, 6, RECORDS)
    assert consumed == produced

    node = cluster.node(2)
    cluster.restart_node(node, hard=False, timeout=90)
    cluster.wait_isr_full([topic], timeout=90)
    md = cluster.admin().list_topics(topic=topic, timeout=10)
    for pmd in md.topics[topic].partitions.values():
        assert sorted(pmd.isrs) == [1, 2, 3]
    assert _consume(cluster, topic, 6, RECORDS) == produced


def test_client_traffic_goes_through_the_nodes_toxiproxy_link(healthy_cluster: Cluster) -> None:
    cluster = healthy_cluster
    node = cluster.node(1)
    proxy = node.proxies["client"]
    host, port = proxy.listen_host, proxy.listen_port
    lone = admin_client(proxy.address)  # bootstrap through node 1's client proxy only
    assert answers_requests(host, port)
    assert 1 in lone.list_topics(timeout=10).brokers
    cluster.set_proxy_enabled(node, "client", False)
    try:
        assert not answers_requests(host, port, timeout=2)
        assert answers_requests(node.ip, 9092), "the broker itself is still up"
        with pytest.raises(KafkaException):
            admin_client(proxy.address).list_topics(timeout=5)
    finally:
        cluster.set_proxy_enabled(node, "client", True)
    assert answers_requests(host, port)
    assert 1 in admin_client(proxy.address).list_topics(timeout=10).brokers


def test_signals_reach_the_broker_jvm(healthy_cluster: Cluster) -> None:
    cluster = healthy_cluster
    node = cluster.node(3)
    cluster.signal(node, "STOP")
    try:
        assert not answers_requests(node.ip, 9092, timeout=2)
    finally:
        cluster.signal(node, "CONT")
    deadline = time.monotonic() + 20
    while not answers_requests(node.ip, 9092) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert answers_requests(node.ip, 9092)


def test_every_node_has_its_own_mounted_filesystem(cluster: Cluster) -> None:
    for node in cluster.nodes:
        assert cluster.is_mounted(node)
        assert node.loop_device.startswith("/dev/loop")
        code, out = cluster.exec(node, ["sh", "-c", "ls /var/lib/kafka/data"])
        assert code == 0
        assert "meta.properties" in out
        assert (node.mount_path / "meta.properties").exists()


def test_racks_and_metrics_endpoints(cluster: Cluster) -> None:
    admin = cluster.admin()  # keep the client alive until its future has resolved
    described = admin.describe_cluster(request_timeout=10).result(timeout=15)
    racks = {node.id: node.rack for node in described.nodes}
    assert racks == {1: "rack-a", 2: "rack-b", 3: "rack-c"}
    for node in cluster.nodes:
        resp = requests.get(cluster.metrics_url(node), timeout=10)
        assert resp.status_code == 200
        assert "# TYPE" in resp.text and "kafka" in resp.text.lower()


def test_dedicated_controllers_serve_a_cluster(cluster_factory: Any) -> None:
    """Optional dedicated controllers: brokers register with a controller-only quorum."""
    own = cluster_factory(brokers=2, controllers=1, heap="256m")
    assert [n.name for n in own.controllers] == ["controller-101"]
    assert not own.node("controller-101").is_broker
    md = own.admin().list_topics(timeout=20)
    assert sorted(md.brokers) == [1, 2]
    # the controller-only node must not be a broker in the metadata
    assert 101 not in md.brokers


def test_formatted_storage_is_written_back_once_started(cluster_factory: Any) -> None:
    """A power cut right after start loses no storage-format files: the broker restarts.

    Without the write-back at the end of start(), Kafka 3.4's bootstrap checkpoint (not
    fsynced by its storage tool) vanished in such a cut and the broker could not start.
    """
    # 3.3 has the unsynced checkpoint too (4.x fsyncs its format files itself); its image
    # is built by the images tests anyway (ensure_images is quick when it exists).
    from kchaos.harness.images import ensure_images

    old = ensure_images("3.3.2")
    own = cluster_factory(brokers=1, heap="256m", image=old.kafka, kafka_version="3.3.2")
    node = own.node(1)
    own.stop_node(node, hard=True)
    # the storage tool's files at the top of the data directory (which ones depends on
    # the version: meta.properties always, bootstrap.checkpoint on 3.x)
    formatted = {p.name: p.stat().st_size for p in node.mount_path.iterdir() if p.is_file()}
    assert formatted.get("meta.properties", 0) > 0, formatted
    own.shutdown_fs(node)  # what a power cut does: unflushed pages are gone
    own.remount_fs(node)
    after = {p.name: p.stat().st_size for p in node.mount_path.iterdir() if p.is_file()}
    lost = {n: size for n, size in formatted.items() if after.get(n, 0) < size}
    assert not lost, f"lost in the cut: {lost}"
    own.start_node(node, wait=True, timeout=90)
    own.wait_ready(90)  # registered again, probe topic fully in sync


def test_a_node_starts_while_another_stays_stopped(healthy_cluster: Cluster) -> None:
    """Overlapping faults: starting one node must not wait on a node a fault still holds."""
    two, three = healthy_cluster.node(2), healthy_cluster.node(3)
    healthy_cluster.stop_node(two, hard=True)
    healthy_cluster.stop_node(three, hard=True)
    try:
        healthy_cluster.start_node(two, wait=True, timeout=90)
        assert healthy_cluster.container(three).status == "exited"
    finally:
        healthy_cluster.start_node(three, wait=True, timeout=90)
    healthy_cluster.wait_ready(120)
