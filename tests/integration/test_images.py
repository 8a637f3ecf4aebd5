"""The offline images against the real thing: a single-node KRaft broker of the default
image (and of Kafka 3.3.2) starts, answers clients and tools, serves its metrics on :7071,
keeps its storage over a restart, and shows a refused config's error in its log.

Everything created here carries harness.labels labels (role "tool") and is removed in
finally blocks. No Docker engine is an error, never a skip.
"""

from __future__ import annotations

import contextlib
import random
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import docker
import pytest
import requests
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from docker.models.containers import Container
from docker.models.networks import Network

from kchaos.harness.images import DEFAULT_KAFKA_VERSION, ensure_images
from kchaos.harness.labels import labels_for, new_run_id

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]

SUBNET_PREFIX = "10.214"  # the cluster uses 10.213.x.0/24; stay clear of it
REQUIRED_METRICS = (
    "kafka_server_replicamanager_underreplicatedpartitions",
    "kafka_server_replicamanager_underminisrpartitioncount",
    "kafka_controller_kafkacontroller_offlinepartitionscount",
    "kafka_controller_kafkacontroller_activecontrollercount",
    "kafka_server_replicamanager_isrshrinks_total",
    "kafka_server_replicamanager_isrexpands_total",
)


@dataclass
class Lab:
    client: docker.DockerClient
    network: Network
    subnet: str
    run_id: str
    containers: list[Container]

    def ip(self, offset: int) -> str:
        return f"{self.subnet.rsplit('.', 1)[0]}.{offset}"


@pytest.fixture(scope="module")
def lab() -> Iterator[Lab]:
    client = docker.from_env()
    client.ping()  # no engine: error here, loudly
    run_id = "images-" + new_run_id()
    labels = labels_for(run_id, "tool")
    network = None
    last_error: Exception | None = None
    for _ in range(8):
        subnet = f"{SUBNET_PREFIX}.{random.randrange(256)}.0/24"
        ipam = docker.types.IPAMConfig(
            pool_configs=[docker.types.IPAMPool(subnet=subnet, gateway=subnet[:-4] + "1")]
        )
        try:
            network = client.networks.create(
                f"kchaos-{run_id}", driver="bridge", ipam=ipam, labels=labels
            )
            break
        except docker.errors.APIError as exc:  # subnet taken by someone else: try another
            last_error = exc
    if network is None:
        raise RuntimeError(f"could not create a test network: {last_error}")
    lab = Lab(client, network, subnet, run_id, [])
    try:
        yield lab
    finally:
        for container in lab.containers:
            with contextlib.suppress(docker.errors.NotFound):
                container.remove(force=True, v=True)
        network.remove()


def broker_env(ip: str, **extra: str) -> dict[str, str]:
    env = {
        "CLUSTER_ID": "a2NoYW9zLWltYWdlcy10MQ",
        "KAFKA_NODE_ID": "1",
        "KAFKA_PROCESS_ROLES": "broker,controller",
        "KAFKA_LISTENERS": "CLIENT://0.0.0.0:9092,CONTROLLER://0.0.0.0:9094",
        "KAFKA_ADVERTISED_LISTENERS": f"CLIENT://{ip}:9092",
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "CLIENT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "KAFKA_INTER_BROKER_LISTENER_NAME": "CLIENT",
        "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
        "KAFKA_CONTROLLER_QUORUM_VOTERS": f"1@{ip}:9094",
        "KAFKA_LOG_DIRS": "/var/lib/kafka/data",
        "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
        "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
        "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
        "KAFKA_HEAP_OPTS": "-Xmx256m -Xms256m",
    }
    env.update(extra)
    return env


def start_broker(lab: Lab, image: str, offset: int, **extra: str) -> tuple[Container, str]:
    """A broker container at a fixed address of the lab network."""
    ip = lab.ip(offset)
    api = lab.client.api
    created = api.create_container(
        image,
        name=f"kchaos-{lab.run_id}-b{offset}",
        environment=broker_env(ip, **extra),
        labels=labels_for(lab.run_id, "tool"),
        host_config=api.create_host_config(),
        networking_config=api.create_networking_config(
            {lab.network.name: api.create_endpoint_config(ipv4_address=ip)}
        ),
    )
    container = lab.client.containers.get(created["Id"])
    lab.containers.append(container)
    container.start()
    return container, ip


def wait_for_broker(container: Container, ip: str, timeout: float = 180.0) -> AdminClient:
    admin = AdminClient({"bootstrap.servers": f"{ip}:9092", "socket.timeout.ms": 5000})
    deadline = time.monotonic() + timeout
    while True:
        container.reload()
        if container.status == "exited":
            raise AssertionError("broker exited:\n" + logs(container))
        try:
            metadata = admin.list_topics(timeout=5)
            if metadata.brokers:
                return admin
        except Exception:  # noqa: BLE001 - not up yet
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"broker at {ip} not ready in {timeout} s:\n" + logs(container))
        time.sleep(1)


def logs(container: Container, tail: int = 60) -> str:
    return container.logs(tail=tail).decode(errors="replace")


def run_tool(container: Container, *cmd: str) -> str:
    code, out = container.exec_run(list(cmd), demux=True)
    stdout = (out[0] or b"").decode()
    stderr = (out[1] or b"").decode()
    assert code == 0, f"{cmd} exited {code}: {stdout}\n{stderr}"
    return stdout


def produce_and_read_back(admin: AdminClient, ip: str, topic: str) -> None:
    futures = admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])
    futures[topic].result(timeout=60)
    producer = Producer({"bootstrap.servers": f"{ip}:9092", "acks": "all"})
    sent = [f"value-{i}" for i in range(20)]
    for value in sent:
        producer.produce(topic, value.encode())
    assert producer.flush(30) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": f"{ip}:9092",
            "group.id": uuid.uuid4().hex,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe([topic])
        got: list[str] = []
        deadline = time.monotonic() + 60
        while len(got) < len(sent) and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is not None and msg.error() is None:
                got.append(msg.value().decode())
    finally:
        consumer.close()
    assert sorted(got) == sorted(sent)


def test_default_image_runs_a_kraft_broker_with_metrics_and_tools(lab: Lab) -> None:
    images = ensure_images()
    assert images.kafka == f"kchaos/kafka:{DEFAULT_KAFKA_VERSION}"
    assert images.toxiproxy == "kchaos/toxiproxy:2.12.0"
    container, ip = start_broker(
        lab, images.kafka, 11, KAFKA_LOG4J_LOGGERS="org.apache.kafka.controller=DEBUG"
    )
    admin = wait_for_broker(container, ip)

    # the broker JVM is PID 1, so host-side signals reach it, and it maps the image's
    # class-data archive (-Xshare:on fails if the archive cannot be used)
    assert run_tool(container, "cat", "/proc/1/comm").strip() == "java"
    cmdline = run_tool(container, "cat", "/proc/1/cmdline").split("\0")
    assert "-XX:SharedArchiveFile=/opt/kafka/kafka.jsa" in cmdline
    run_tool(
        container,
        "java",
        "-Xshare:on",
        "-XX:SharedArchiveFile=/opt/kafka/kafka.jsa",
        "-cp",
        "/opt/kafka/libs/*",
        "-version",
    )
    produce_and_read_back(admin, ip, "images-check")

    # the image's own tool scripts work and exit 0 (tools may run from their own classpath)
    assert (
        "images-check"
        in run_tool(
            container, "kafka-topics.sh", "--bootstrap-server", "localhost:9092", "--list"
        ).split()
    )
    status = run_tool(
        container,
        "kafka-metadata-quorum.sh",
        "--bootstrap-server",
        "localhost:9092",
        "describe",
        "--status",
    )
    assert "LeaderId:" in status and "1" in status.split("LeaderId:")[1].split()[0]
    perf = run_tool(
        container,
        "kafka-producer-perf-test.sh",
        "--topic",
        "images-check",
        "--num-records",
        "200",
        "--record-size",
        "100",
        "--throughput",
        "-1",
        "--producer-props",
        "bootstrap.servers=localhost:9092",
        "acks=all",
    )
    assert "200 records sent" in perf

    # metrics from the JMX exporter agent, straight from the container
    text = requests.get(f"http://{ip}:7071/metrics", timeout=10).text
    for name in REQUIRED_METRICS:
        assert any(line.startswith(name) for line in text.splitlines()), name
    active = [
        ln
        for ln in text.splitlines()
        if ln.startswith("kafka_controller_kafkacontroller_activecontrollercount ")
    ]
    assert active and float(active[0].split()[1]) == 1.0

    # broker logs go to stdout (docker logs), name the properties it was given, and follow
    # the official image's KAFKA_LOG4J_LOGGERS
    everything = logs(container, tail=100_000)
    assert "[kchaos]   node.id=1" in everything
    assert any(
        " DEBUG " in ln and "(org.apache.kafka.controller." in ln for ln in everything.splitlines()
    )

    # restart: storage is formatted only on the first start, and the topic survives
    container.restart(timeout=20)
    admin = wait_for_broker(container, ip)
    all_logs = container.logs().decode(errors="replace")
    assert all_logs.count("[kchaos] formatting") == 1
    assert "images-check" in admin.list_topics(timeout=10).topics


def test_refused_config_stops_the_container_with_kafkas_own_error(lab: Lab) -> None:
    images = ensure_images()
    container, _ = start_broker(lab, images.kafka, 12, KAFKA_NUM_NETWORK_THREADS="lots")
    result = container.wait(timeout=120)
    assert result["StatusCode"] != 0
    tail = logs(container, tail=40)
    assert "num.network.threads" in tail, tail


@pytest.mark.slow
def test_kafka_3_3_2_builds_and_starts(lab: Lab) -> None:
    images = ensure_images("3.3.2")
    assert images.kafka == "kchaos/kafka:3.3.2" and images.kafka_version == "3.3.2"
    container, ip = start_broker(
        lab, images.kafka, 13, KAFKA_LOG4J_LOGGERS="org.apache.kafka.controller=DEBUG"
    )
    admin = wait_for_broker(container, ip)
    assert run_tool(container, "cat", "/proc/1/comm").strip() == "java"
    produce_and_read_back(admin, ip, "old-release")
    assert (
        "old-release"
        in run_tool(
            container, "kafka-topics.sh", "--bootstrap-server", "localhost:9092", "--list"
        ).split()
    )
    text = requests.get(f"http://{ip}:7071/metrics", timeout=10).text
    assert "kafka_server_replicamanager_underreplicatedpartitions" in text
    # log4j 1 (reload4j) configuration is in effect: broker lines on stdout, with the
    # KAFKA_LOG4J_LOGGERS level applied and no complaint from log4j about its config
    everything = logs(container, tail=100_000)
    assert " INFO " in everything and "log4j:WARN" not in everything
    assert any(
        " DEBUG " in ln and "(org.apache.kafka.controller." in ln for ln in everything.splitlines()
    )


def test_no_settings_at_all_start_a_single_node_like_the_official_image(lab: Lab) -> None:
    images = ensure_images()
    container = lab.client.containers.run(
        images.kafka,
        detach=True,
        network_mode="none",
        labels=labels_for(lab.run_id, "tool"),
        environment={"KAFKA_HEAP_OPTS": "-Xmx256m -Xms256m"},
    )
    lab.containers.append(container)
    deadline = time.monotonic() + 180
    while "Kafka Server started" not in logs(container, tail=100_000):
        container.reload()
        assert container.status != "exited", logs(container)
        assert time.monotonic() < deadline, logs(container)
        time.sleep(1)
    assert "single-node defaults" in logs(container, tail=100_000)
    run_tool(
        container,
        "kafka-topics.sh",
        "--bootstrap-server",
        "localhost:9092",
        "--create",
        "--topic",
        "solo",
        "--partitions",
        "1",
        "--replication-factor",
        "1",
    )
    listed = run_tool(
        container, "kafka-topics.sh", "--bootstrap-server", "localhost:9092", "--list"
    )
    assert "solo" in listed.split()
