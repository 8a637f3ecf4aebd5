"""compose/docker-compose.yml: Debian's docker-compose accepts it, and it describes the
harness's topology with the official images and the same KAFKA_* contract.

`docker-compose config` needs no Docker engine (checked: it works with DOCKER_HOST
pointing nowhere), so this test is not marked docker; it needs the docker-compose
program, which the set-up installs, and fails loudly without it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from kchaos.harness import paths
from kchaos.harness.cluster.api import (
    CLIENT_PORT,
    CONTROLLER_PORT,
    PROXY_PORT_BASE,
    REPLICATION_PORT,
)
from kchaos.harness.cluster.config import JVM_ENV_VARS, env_to_property, property_to_env
from kchaos.harness.images import DEFAULT_KAFKA_VERSION, TOXIPROXY_VERSION

COMPOSE_FILE = paths.COMPOSE_DIR / "docker-compose.yml"
LISTENER_PORTS = {
    "client": CLIENT_PORT,
    "replication": REPLICATION_PORT,
    "controller": CONTROLLER_PORT,
}


def compose_config(file: Path, **env: str) -> dict[str, Any]:
    program = shutil.which("docker-compose")
    assert program, "docker-compose is not installed (compose/setup.sh installs it)"
    full_env = {k: v for k, v in os.environ.items() if k != "KAFKA_VERSION"}
    full_env.update({"DOCKER_HOST": "unix:///nonexistent/docker.sock", **env})
    done = subprocess.run(
        [program, "-f", str(file), "config"],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = YAML(typ="safe").load(StringIO(done.stdout))
    return data


@pytest.fixture(scope="module")
def config() -> dict[str, Any]:
    return compose_config(COMPOSE_FILE)


def brokers(config: dict[str, Any]) -> dict[int, dict[str, Any]]:
    out = {}
    for name, service in config["services"].items():
        if name.startswith("kafka-"):
            out[int(service["environment"]["KAFKA_NODE_ID"])] = service
    return out


def test_three_brokers_and_toxiproxy_with_official_images(config: dict[str, Any]) -> None:
    nodes = brokers(config)
    assert sorted(nodes) == [1, 2, 3]
    assert set(config["services"]) == {"kafka-1", "kafka-2", "kafka-3", "toxiproxy"}
    for node in nodes.values():
        assert node["image"] == f"apache/kafka:{DEFAULT_KAFKA_VERSION}"
        assert node["environment"]["KAFKA_PROCESS_ROLES"] == "broker,controller"
        assert any(
            v.endswith(":/var/lib/kafka/data:rw") or v.endswith(":/var/lib/kafka/data")
            for v in node["volumes"]
        )
    assert config["services"]["toxiproxy"]["image"] == (
        f"ghcr.io/shopify/toxiproxy:{TOXIPROXY_VERSION}"
    )
    # the Kafka release is a parameter, as in the harness
    assert brokers(compose_config(COMPOSE_FILE, KAFKA_VERSION="3.9.1"))[1]["image"] == (
        "apache/kafka:3.9.1"
    )


def test_environment_is_the_kafka_contract(config: dict[str, Any]) -> None:
    for node_id, node in brokers(config).items():
        env = node["environment"]
        props = {
            env_to_property(k): str(v)
            for k, v in env.items()
            if k.startswith("KAFKA_") and k not in JVM_ENV_VARS
        }
        # every name round-trips through the harness's own conversion
        for name in props:
            assert property_to_env(name) in env
        assert props["node.id"] == str(node_id)
        assert props["log.dirs"] == "/var/lib/kafka/data"
        assert props["inter.broker.listener.name"] == "REPLICATION"
        assert props["controller.listener.names"] == "CONTROLLER"
        assert len(env["CLUSTER_ID"]) == 22  # base64url of 16 bytes, as KRaft requires
        listeners = dict(item.split("://") for item in props["listeners"].split(","))
        assert listeners == {
            "CLIENT": f"0.0.0.0:{CLIENT_PORT}",
            "REPLICATION": f"0.0.0.0:{REPLICATION_PORT}",
            "CONTROLLER": f"0.0.0.0:{CONTROLLER_PORT}",
        }


def _proxies(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    mounts = config["services"]["toxiproxy"]["volumes"]
    source = next(m.split(":")[0] for m in mounts if ":/config/toxiproxy.json" in m)
    command = config["services"]["toxiproxy"]["command"]
    assert "-config=/config/toxiproxy.json" in command and "-host=0.0.0.0" in command
    entries = json.loads(Path(source).read_text())
    return {entry["name"]: entry for entry in entries}


def test_every_listener_goes_through_its_own_proxy(config: dict[str, Any]) -> None:
    proxies = _proxies(config)
    toxi_ip = config["services"]["toxiproxy"]["networks"]["kchaos"]["ipv4_address"]
    nodes = brokers(config)
    assert len(proxies) == 3 * len(nodes)
    for node_id, node in nodes.items():
        ip = node["networks"]["kchaos"]["ipv4_address"]
        env = node["environment"]
        advertised = dict(
            item.split("://") for item in env["KAFKA_ADVERTISED_LISTENERS"].split(",")
        )
        for link, port in LISTENER_PORTS.items():
            proxy = proxies[f"node-{node_id}-{link}"]
            listen_port = PROXY_PORT_BASE[link] + node_id  # type: ignore[index]
            assert proxy["listen"] == f"0.0.0.0:{listen_port}"
            assert proxy["upstream"] == f"{ip}:{port}"
            assert proxy.get("enabled", True)
            assert advertised[link.upper()] == f"{toxi_ip}:{listen_port}"
        voters = env["KAFKA_CONTROLLER_QUORUM_VOTERS"].split(",")
        assert voters == [f"{n}@{toxi_ip}:{PROXY_PORT_BASE['controller'] + n}" for n in nodes]


def test_network_has_an_explicit_subnet_holding_every_address(config: dict[str, Any]) -> None:
    import ipaddress

    ipam = config["networks"]["kchaos"]["ipam"]["config"][0]
    subnet = ipaddress.ip_network(ipam["subnet"])
    addresses = [s["networks"]["kchaos"]["ipv4_address"] for s in config["services"].values()]
    assert len(set(addresses)) == len(addresses)
    assert all(ipaddress.ip_address(a) in subnet for a in addresses)


def test_a_broken_file_is_refused(tmp_path: Path) -> None:
    # the check can fail: docker-compose rejects an unknown key
    bad = tmp_path / "docker-compose.yml"
    bad.write_text(COMPOSE_FILE.read_text().replace("    hostname: kafka-1", "    hostnam: x", 1))
    program = shutil.which("docker-compose")
    assert program
    done = subprocess.run(
        [program, "-f", str(bad), "config"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode != 0 and "hostnam" in done.stderr


def test_same_server_properties_as_the_harness_would_give(config: dict[str, Any]) -> None:
    """The compose file must not drift from kchaos.harness.cluster's own node configuration."""
    from kchaos.harness.cluster.config import node_properties
    from kchaos.harness.cluster.spec import ClusterSpec

    toxi_ip = config["services"]["toxiproxy"]["networks"]["kchaos"]["ipv4_address"]
    nodes = brokers(config)
    racks = {n: str(s["environment"]["KAFKA_BROKER_RACK"]) for n, s in nodes.items()}
    spec = ClusterSpec(
        brokers=3,
        kafka_version=DEFAULT_KAFKA_VERSION,
        racks=racks,
        server_properties={"min.insync.replicas": "2"},
    )
    for node_id, node in nodes.items():
        env = node["environment"]
        compose_props = {
            env_to_property(k): str(v)
            for k, v in env.items()
            if k.startswith("KAFKA_") and k not in JVM_ENV_VARS
        }
        assert compose_props == node_properties(spec, node_id, toxi_ip), node_id
