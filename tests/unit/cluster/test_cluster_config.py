"""Server properties per node and their KAFKA_* environment form."""

from __future__ import annotations

import pytest

from kchaos.harness.cluster.config import (
    JVM_ENV_VARS,
    env_to_property,
    new_cluster_id,
    node_environment,
    node_properties,
    property_to_env,
    quorum_voters,
)
from kchaos.harness.cluster.spec import ClusterSpec
from kchaos.harness.errors import ConfigError

TOXI = "10.213.5.2"


@pytest.mark.parametrize(
    ("prop", "env"),
    [
        ("log.retention.ms", "KAFKA_LOG_RETENTION_MS"),
        ("node.id", "KAFKA_NODE_ID"),
        ("min.insync.replicas", "KAFKA_MIN_INSYNC_REPLICAS"),
        ("listener.name.client.some_prop", "KAFKA_LISTENER_NAME_CLIENT_SOME__PROP"),
        ("remote.log-storage.x", "KAFKA_REMOTE_LOG___STORAGE_X"),
        ("a_b-c.d", "KAFKA_A__B___C_D"),
        ("broker.rack", "KAFKA_BROKER_RACK"),
    ],
)
def test_property_env_round_trip(prop: str, env: str) -> None:
    assert property_to_env(prop) == env
    assert env_to_property(env) == prop


def test_env_to_property_reads_the_image_rule() -> None:
    assert env_to_property("KAFKA_CONTROLLER_QUORUM_VOTERS") == "controller.quorum.voters"
    assert env_to_property("KAFKA_X__Y___Z") == "x_y-z"
    with pytest.raises(ValueError):
        env_to_property("HEAP_OPTS")


@pytest.mark.parametrize("bad", ["Upper.case", "a_.b", "a._b", "a__b", "a_-b", "sp ace", ""])
def test_names_the_env_form_cannot_carry_are_config_errors(bad: str) -> None:
    with pytest.raises(ConfigError) as info:
        property_to_env(bad)
    assert info.value.field == bad


def test_property_that_would_become_a_jvm_variable_is_refused() -> None:
    with pytest.raises(ConfigError, match="JVM setting"):
        property_to_env("heap.opts")


def test_combined_node_properties_go_through_proxies() -> None:
    spec = ClusterSpec(brokers=3, kafka_version="4.4.0")
    props = node_properties(spec, 2, TOXI)
    assert props["node.id"] == "2"
    assert props["process.roles"] == "broker,controller"
    assert props["listeners"] == (
        "CLIENT://0.0.0.0:9092,REPLICATION://0.0.0.0:9093,CONTROLLER://0.0.0.0:9094"
    )
    assert props["advertised.listeners"] == (
        f"CLIENT://{TOXI}:19002,REPLICATION://{TOXI}:19102,CONTROLLER://{TOXI}:19202"
    )
    assert props["controller.quorum.voters"] == f"1@{TOXI}:19201,2@{TOXI}:19202,3@{TOXI}:19203"
    assert props["inter.broker.listener.name"] == "REPLICATION"
    assert props["controller.listener.names"] == "CONTROLLER"
    assert "CLIENT:PLAINTEXT" in props["listener.security.protocol.map"]
    assert props["log.dirs"] == "/var/lib/kafka/data"
    assert props["offsets.topic.replication.factor"] == "3"


def test_before_3_9_the_controller_listener_is_not_advertised() -> None:
    spec = ClusterSpec(brokers=3, kafka_version="3.8.1")
    props = node_properties(spec, 1, TOXI)
    assert "CONTROLLER" not in props["advertised.listeners"]
    assert "CONTROLLER://0.0.0.0:9094" in props["listeners"]


def test_dedicated_controllers() -> None:
    spec = ClusterSpec(brokers=3, controllers=3, kafka_version="3.7.0")
    broker = node_properties(spec, 1, TOXI)
    assert broker["process.roles"] == "broker"
    assert "CONTROLLER" not in broker["listeners"]
    assert broker["controller.quorum.voters"].startswith(f"101@{TOXI}:19301")
    ctrl = node_properties(spec, 102, TOXI)
    assert ctrl["process.roles"] == "controller"
    assert ctrl["listeners"] == "CONTROLLER://0.0.0.0:9094"
    assert "advertised.listeners" not in ctrl  # must be empty before 3.9
    assert "offsets.topic.replication.factor" not in ctrl
    new = node_properties(ClusterSpec(brokers=1, controllers=1, kafka_version="4.0.0"), 101, TOXI)
    assert "advertised.listeners" not in new  # the images refuse it on a controller


def test_user_properties_pass_through_and_win() -> None:
    spec = ClusterSpec(
        brokers=3,
        server_properties={
            "offsets.topic.replication.factor": 1,
            "unclean.leader.election.enable": True,
        },
        broker_properties={3: {"num.network.threads": "not-a-number"}},
        racks={1: "a", 2: "b", 3: "c"},
    )
    props1 = node_properties(spec, 1, TOXI)
    assert props1["offsets.topic.replication.factor"] == "1"
    assert props1["unclean.leader.election.enable"] == "true"
    assert props1["broker.rack"] == "a"
    assert "num.network.threads" not in props1
    assert node_properties(spec, 3, TOXI)["num.network.threads"] == "not-a-number"


def test_environment_holds_cluster_id_heap_and_every_property() -> None:
    spec = ClusterSpec(brokers=1, heap="256m")
    cid = new_cluster_id()
    env = node_environment(spec, 1, TOXI, cid)
    assert env["CLUSTER_ID"] == cid and len(cid) == 22
    assert env["KAFKA_HEAP_OPTS"] == "-Xms256m -Xmx256m"
    assert "TieredStopAtLevel=1" in env["KAFKA_JVM_PERFORMANCE_OPTS"]
    plain = node_environment(ClusterSpec(brokers=1, jvm_performance_opts=""), 1, TOXI, cid)
    assert "KAFKA_JVM_PERFORMANCE_OPTS" not in plain
    props = node_properties(spec, 1, TOXI)
    back = {
        env_to_property(k): v
        for k, v in env.items()
        if k.startswith("KAFKA_") and k not in JVM_ENV_VARS
    }
    assert back == props
    assert env["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"] == "1"
    assert env["KAFKA_LOG4J_LOGGERS"] == (  # RUN_DIR/logs; refused requests
        "state.change.logger=INFO,kafka.server.KafkaApis=DEBUG"
    )


def test_quorum_voters_for_one_broker() -> None:
    assert quorum_voters(ClusterSpec(brokers=1), TOXI) == f"1@{TOXI}:19201"
