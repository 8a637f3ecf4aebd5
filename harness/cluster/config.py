"""Broker configuration: server properties per node, and their KAFKA_* environment form.

The Kafka images (official ``apache/kafka`` and the offline ``kchaos/kafka``) turn every
environment variable ``KAFKA_X_Y`` into the server property ``x.y``: after the prefix,
``___`` stands for ``-``, ``__`` for ``_`` and ``_`` for ``.``, and the name is lowercased.
A handful of ``KAFKA_*`` names are JVM settings instead and never become properties.
"""

from __future__ import annotations

import base64
import re
import uuid
from collections.abc import Mapping

from kchaos.harness.cluster.api import (
    CLIENT_PORT,
    CONTROLLER_PORT,
    PROXY_PORT_BASE,
    REPLICATION_PORT,
    NodeHandle,
    Topology,
)
from kchaos.harness.cluster.spec import ClusterSpec
from kchaos.harness.errors import ConfigError

ENV_PREFIX = "KAFKA_"
# Names the images read as JVM/launcher settings, never as server properties.
JVM_ENV_VARS = frozenset(
    {
        "KAFKA_HEAP_OPTS",
        "KAFKA_OPTS",
        "KAFKA_JVM_PERFORMANCE_OPTS",
        "KAFKA_LOG4J_OPTS",
        "KAFKA_GC_LOG_OPTS",
        "KAFKA_JMX_OPTS",
        "KAFKA_DEBUG",
        "KAFKA_VERSION",
        "KAFKA_LOG4J_ROOT_LOGLEVEL",
        "KAFKA_LOG4J_LOGGERS",
        "KAFKA_TOOLS_LOG4J_LOGLEVEL",
        "KAFKA_JMX_HOSTNAME",
    }
)
DATA_DIR = "/var/lib/kafka/data"
# KAFKA_LOG4J_LOGGERS of every node. The state-change logger at INFO (the images quiet it
# to WARN); KafkaApis at DEBUG, where it logs only requests it refused ("Produce request
# with correlation id N from client C on partition P failed due to E"): a late produce a
# leader refused is otherwise in no log at all (KIP-890's verification, 3.6+).
NODE_LOGGERS = "state.change.logger=INFO,kafka.server.KafkaApis=DEBUG"
DATA_UID = 1000  # the official image runs Kafka as appuser (uid 1000)
LISTENER_PROTOCOLS = "CLIENT:PLAINTEXT,REPLICATION:PLAINTEXT,CONTROLLER:PLAINTEXT"
_PROPERTY_NAME = re.compile(r"[a-z0-9][a-z0-9._-]*")


def env_to_property(env_name: str) -> str:
    """``KAFKA_LOG_RETENTION_MS`` -> ``log.retention.ms`` (the images' own rule)."""
    if not env_name.startswith(ENV_PREFIX) or len(env_name) == len(ENV_PREFIX):
        raise ValueError(f"not a KAFKA_* variable: {env_name!r}")
    body = env_name[len(ENV_PREFIX) :]
    body = body.replace("___", "\0").replace("__", "\1").replace("_", ".")
    return body.replace("\0", "-").replace("\1", "_").lower()


def property_to_env(name: str) -> str:
    """``log.retention.ms`` -> ``KAFKA_LOG_RETENTION_MS``; names with ``_`` or ``-`` too.

    A name the environment form cannot carry unchanged (uppercase letters, characters
    other than letters, digits, ``.``, ``_``, ``-``, or an ``_`` next to another separator,
    which would read back differently) is a ConfigError naming the property.
    """
    if not _PROPERTY_NAME.fullmatch(name):
        raise ConfigError(
            "cannot be passed to the Kafka image as a KAFKA_* variable (use lowercase "
            "letters, digits, '.', '_' and '-')",
            field=name,
        )
    env = ENV_PREFIX + name.replace("_", "__").replace("-", "___").replace(".", "_").upper()
    if env_to_property(env) != name:
        raise ConfigError(
            f"the KAFKA_* form {env} would read back as {env_to_property(env)!r}", field=name
        )
    if env in JVM_ENV_VARS:
        raise ConfigError(f"{env} is a JVM setting in the Kafka image, not a property", field=name)
    return env


def properties_to_env(properties: Mapping[str, str]) -> dict[str, str]:
    return {property_to_env(name): value for name, value in properties.items()}


def new_cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, URL-safe base64 without padding (22 chars)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def proxy_port(link: str, node_id: int) -> int:
    return PROXY_PORT_BASE[link] + node_id  # type: ignore[index]


def quorum_voters(spec: ClusterSpec, toxiproxy_ip: str) -> str:
    """Static ``controller.quorum.voters``: every voter reached through its controller proxy."""
    return ",".join(
        f"{nid}@{toxiproxy_ip}:{proxy_port('controller', nid)}" for nid in spec.controller_ids
    )


def controller_is_advertised(spec: ClusterSpec) -> bool:
    """Kafka 3.9 (KIP-853) lets a combined node advertise its controller listener; before
    that, advertised.listeners must not name it. Controller-only nodes advertise nothing:
    the Kafka images refuse KAFKA_ADVERTISED_LISTENERS there."""
    return spec.version[:2] >= (3, 9)


def harness_defaults(spec: ClusterSpec) -> dict[str, str]:
    """Defaults suited to a small test cluster; any user property overrides them."""
    rf = str(min(3, spec.brokers))
    return {
        "offsets.topic.replication.factor": rf,
        "offsets.topic.num.partitions": "10",
        "transaction.state.log.replication.factor": rf,
        "transaction.state.log.min.isr": str(min(2, spec.brokers)),
        "group.initial.rebalance.delay.ms": "0",
    }


def node_properties(spec: ClusterSpec, node_id: int, toxiproxy_ip: str) -> dict[str, str]:
    """Every server property of one node: defaults, topology, then the user's own."""
    roles = spec.roles(node_id)
    is_broker = "broker" in roles
    is_controller = "controller" in roles
    listeners: list[str] = []
    advertised: list[str] = []
    if is_broker:
        listeners += [
            f"CLIENT://0.0.0.0:{CLIENT_PORT}",
            f"REPLICATION://0.0.0.0:{REPLICATION_PORT}",
        ]
        advertised += [
            f"CLIENT://{toxiproxy_ip}:{proxy_port('client', node_id)}",
            f"REPLICATION://{toxiproxy_ip}:{proxy_port('replication', node_id)}",
        ]
    if is_controller:
        listeners.append(f"CONTROLLER://0.0.0.0:{CONTROLLER_PORT}")
        # The images refuse KAFKA_ADVERTISED_LISTENERS on a controller-only node.
        if is_broker and controller_is_advertised(spec):
            advertised.append(f"CONTROLLER://{toxiproxy_ip}:{proxy_port('controller', node_id)}")
    props = harness_defaults(spec) if is_broker else {}
    props.update(
        {
            "node.id": str(node_id),
            "process.roles": ",".join(roles),
            "listeners": ",".join(listeners),
            "listener.security.protocol.map": LISTENER_PROTOCOLS,
            "controller.listener.names": "CONTROLLER",
            "controller.quorum.voters": quorum_voters(spec, toxiproxy_ip),
            "log.dirs": DATA_DIR,
        }
    )
    if advertised:
        props["advertised.listeners"] = ",".join(advertised)
    if is_broker:
        props["inter.broker.listener.name"] = "REPLICATION"
    if node_id in spec.racks:
        props["broker.rack"] = spec.racks[node_id]
    props.update({k: str(v) for k, v in spec.server_properties.items()})
    props.update({k: str(v) for k, v in spec.broker_properties.get(node_id, {}).items()})
    return props


def given_properties(cluster: Topology, node: NodeHandle) -> dict[str, str]:
    """The server properties the harness gives ``node`` of ``cluster`` (from the cluster's
    ``spec``, which harness.cluster.Cluster has and the protocols do not); empty for a
    cluster without a spec, where the image's defaults hold."""
    spec = getattr(cluster, "spec", None)
    if not isinstance(spec, ClusterSpec):
        return {}
    try:
        return node_properties(spec, node.node_id, cluster.toxiproxy_ip)
    except Exception:  # noqa: BLE001 - a cluster without a spec: the image's default
        return {}


def node_environment(
    spec: ClusterSpec, node_id: int, toxiproxy_ip: str, cluster_id: str
) -> dict[str, str]:
    """The container environment of one node (properties plus CLUSTER_ID and the heap)."""
    env = properties_to_env(node_properties(spec, node_id, toxiproxy_ip))
    env["CLUSTER_ID"] = cluster_id
    env["KAFKA_HEAP_OPTS"] = f"-Xms{spec.heap} -Xmx{spec.heap}"
    # A stock broker logs state changes at INFO and a run keeps them
    # (RUN_DIR/logs/*/state-change.log: which broker led from when); see NODE_LOGGERS.
    env["KAFKA_LOG4J_LOGGERS"] = NODE_LOGGERS
    if spec.jvm_performance_opts:
        env["KAFKA_JVM_PERFORMANCE_OPTS"] = spec.jvm_performance_opts
    return env
