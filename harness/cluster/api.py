"""The cluster's public shape: what faults, workloads and the runner may rely on.

`kchaos.harness.cluster.Cluster` implements :class:`ClusterHandle`, the union of the small
protocols below (:class:`Topology`, :class:`NodeProcesses`, :class:`NodeLifecycle`,
:class:`ProxyAccess`, :class:`Leadership` and :class:`ClusterReads`,
:class:`NodeFilesystems`). Faults act only through these handles (never through Docker
directly), so that `kchaos cleanup` knows every kind of thing that can be left behind.

Topology (one Docker network per run, explicit /24 subnet, static addresses):

    .1      host (bridge gateway): the harness and its clients
    .2      toxiproxy           API on :8474
    .10+i   node i              CLIENT :9092, REPLICATION :9093, CONTROLLER :9094

Every listener of node i is reached only through a Toxiproxy proxy on the toxiproxy
container: ``node-i-client`` on :19000+i, ``node-i-replication`` on :19100+i,
``node-i-controller`` on :19200+i. Advertised listeners and the controller quorum voters
point at these proxies, so a toxic on one proxy hits one kind of traffic *to* one node.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from kchaos.harness.cluster.proxies import Toxiproxy

LinkClass = Literal["client", "replication", "controller"]
LINK_CLASSES: tuple[LinkClass, ...] = ("client", "replication", "controller")

CLIENT_PORT = 9092
REPLICATION_PORT = 9093
CONTROLLER_PORT = 9094
TOXIPROXY_API_PORT = 8474
PROXY_PORT_BASE: Mapping[LinkClass, int] = {
    "client": 19000,
    "replication": 19100,
    "controller": 19200,
}


@dataclass(frozen=True)
class ProxyHandle:
    """One Toxiproxy proxy in front of one listener of one node."""

    name: str  # e.g. "node-2-replication"
    link: LinkClass
    listen_host: str  # toxiproxy container address
    listen_port: int
    upstream: str  # "10.x.y.12:9093"

    @property
    def address(self) -> str:
        return f"{self.listen_host}:{self.listen_port}"


@dataclass(frozen=True)
class NodeHandle:
    """One KRaft node (broker, controller or both) and everything attached to it."""

    node_id: int
    name: str  # "broker-1", "controller-101"
    roles: tuple[str, ...]  # ("broker", "controller") in combined mode
    container_name: str
    ip: str
    mount_path: Path  # host mount point of this node's own ext4 filesystem
    loop_device: str  # "/dev/loopN" backing that filesystem
    image_file: Path  # the sparse file behind the loop device
    proxies: Mapping[LinkClass, ProxyHandle] = field(default_factory=dict)

    @property
    def is_broker(self) -> bool:
        return "broker" in self.roles

    @property
    def is_controller(self) -> bool:
        return "controller" in self.roles


# The cluster's members come in small protocols, one concern each; a consumer is annotated
# with the smallest one it needs (or a named union of two), so a test fake implements only
# that. ClusterHandle is the union of all of them: what the real Cluster offers (checked
# by mypy in harness/cluster/cluster.py) and what a fault, which may act on anything, holds.


class Topology(Protocol):
    """The cluster's layout: names, addresses and nodes, fixed once it has started."""

    run_id: str
    subnet: str
    toxiproxy_ip: str

    @property
    def nodes(self) -> Sequence[NodeHandle]: ...

    @property
    def brokers(self) -> Sequence[NodeHandle]: ...

    @property
    def controllers(self) -> Sequence[NodeHandle]: ...

    def node(self, key: int | str) -> NodeHandle:
        """A node by id (1) or by name ("broker-1")."""
        ...

    @property
    def bootstrap_servers(self) -> str:
        """Comma-separated client-proxy addresses, for producers and consumers."""
        ...


class NodeProcesses(Protocol):
    """Processes in a node's container: run a command, signal or freeze the JVM, read
    its output."""

    def exec(self, node: NodeHandle, cmd: Sequence[str], *, user: str = "root") -> tuple[int, str]:
        """Run a command inside the node's container; (exit code, combined output)."""
        ...

    def net_exec(self, node: NodeHandle, cmd: Sequence[str]) -> tuple[int, str]:
        """Run a *host* program (iptables, ss) inside the node's network namespace, so
        that it needs nothing from the image; (exit code, combined output). ClusterError
        "... is not running" when the container has no process (and so no namespace)."""
        ...

    def client_net_exec(self, address: str, cmd: Sequence[str]) -> tuple[int, str]:
        """:meth:`net_exec` in the network namespace of the run's running client container
        (role ``client``) at ``address`` on the run's network; ClusterError when none is."""
        ...

    def signal(self, node: NodeHandle, sig: str) -> None:
        """Send a signal ("STOP", "CONT", "KILL", "TERM") to the node's broker JVM, from
        the host by its pid."""
        ...

    def jvm_state(self, node: NodeHandle) -> str | None:
        """State letter of the broker JVM read on the host (T: stopped by SIGSTOP); None
        when the container is not running (stopped, or paused by the freezer)."""
        ...

    def pause(self, node: NodeHandle) -> None:
        """Freeze the whole container with the cgroup freezer (docker pause)."""
        ...

    def unpause(self, node: NodeHandle) -> None: ...

    def logs(self, node: NodeHandle, tail: int = 50, *, last_start: bool = False) -> str:
        """The node's last ``tail`` log lines; with ``last_start`` only lines written since
        its container last started (docker keeps a container's log across restarts)."""
        ...

    def full_log(self, node: NodeHandle) -> bytes:
        """The node's whole container log, across restarts; also of a stopped container."""
        ...


class NodeLifecycle(Protocol):
    """Stopping and starting nodes, and waiting for the cluster to be whole again."""

    def stop_node(self, node: NodeHandle, *, hard: bool) -> int | None:
        """SIGKILL (hard) or SIGTERM and wait for the container to exit; its exit code
        (None when Docker did not give one)."""
        ...

    def start_node(self, node: NodeHandle, *, wait: bool = True, timeout: float = 60.0) -> None:
        """Start a stopped node's container; with wait, until it is registered again."""
        ...

    def restart_node(
        self, node: NodeHandle, *, hard: bool = False, timeout: float = 60.0
    ) -> int | None:
        """stop_node then start_node; the exit code stop_node gave."""
        ...

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Every broker registered and the probe topic's ISR full, or ReadinessTimeout."""
        ...

    def wait_isr_full(self, topics: Iterable[str] | None = None, timeout: float = 60.0) -> None:
        """Every partition of the topics (None: of every topic) has a leader and its whole
        replica set in the ISR, or ReadinessTimeout."""
        ...


class ProxyAccess(Protocol):
    """This run's Toxiproxy server, in front of every listener."""

    @property
    def toxiproxy_url(self) -> str:
        """Base URL of the Toxiproxy HTTP API, e.g. http://10.x.y.2:8474."""
        ...

    @property
    def toxiproxy(self) -> Toxiproxy:
        """The client of this run's Toxiproxy server (toxics, proxies, reset)."""
        ...


class Leadership(Protocol):
    """Who leads now: what fault targets are resolved from (ClusterError when a read
    fails). The scenario validator answers these from the plan."""

    def partition_leader(self, topic: str, partition: int) -> int:
        """Node id of the partition's current leader."""
        ...

    def partition_count(self, topic: str) -> int:
        """How many partitions the topic has now (internal topics included)."""
        ...

    def active_controller_id(self) -> int: ...


class ClusterReads(Leadership, Protocol):
    """Leadership and the rest of the cluster's state that triggers watch."""

    def partition_isr(self, topic: str, partition: int) -> list[int]: ...

    def alive_brokers(self) -> set[int]:
        """Brokers in the client metadata now."""
        ...

    def broker_epoch(self, broker: int) -> int | None:
        """The epoch of the broker's last registration, from its own log (None: none yet)."""
        ...


class NodeFilesystems(Protocol):
    """The node's own data filesystem, on the host (ClusterError when an operation fails)."""

    def is_mounted(self, node: NodeHandle) -> bool: ...

    def freeze_fs(self, node: NodeHandle) -> None:
        """FIFREEZE: every writer blocks until thaw_fs; freezing a frozen fs is no error."""
        ...

    def thaw_fs(self, node: NodeHandle) -> bool:
        """FITHAW; False when the filesystem was not frozen."""
        ...

    def shutdown_fs(self, node: NodeHandle) -> None:
        """EXT4_IOC_SHUTDOWN with NOLOGFLUSH: what was not written back is lost."""
        ...

    def remount_fs(self, node: NodeHandle) -> None:
        """Unmount if mounted and mount the node's loop device again (node stopped)."""
        ...

    def throttle_writes(self, node: NodeHandle, *, iops: int, bps: int) -> list[str]:
        """Limit what the node's container itself writes to its data device (its loop
        device) to ``iops`` writes and ``bps`` bytes a second, 0 = no limit (the blkio
        group of cgroup v1, ``kchaos.harness.cluster.blkio``): its syncs get slow, its
        buffered writes do not. The lines set, as text. ClusterError when the container
        is not running or the host has no blkio hierarchy."""
        ...

    def clear_throttles(self, node: NodeHandle) -> list[str]:
        """Remove every blkio throttle of the node's container (any device); the lines
        removed, as text. [] when the container is not running or gone (a new start has none)."""
        ...


class DockerAccess(Protocol):
    """The Docker side of the cluster: its client and the Kafka image the brokers run."""

    @property
    def client(self) -> Any:
        """The Docker client (docker.DockerClient)."""
        ...

    @property
    def kafka_image(self) -> str: ...


# Named unions, for consumers that need two of the above.


class NodeAccess(Topology, NodeProcesses, Protocol):
    """The nodes and commands in them: iptables rules, the after-run collectors."""


class Targeting(Topology, Leadership, Protocol):
    """The nodes and who leads: resolving a fault's target spec."""


class ToolHost(Topology, DockerAccess, Protocol):
    """What starts a labelled helper container (a Java client, a perf tool) on the run's
    network."""


class TriggerReads(ClusterReads, NodeAccess, Protocol):
    """What a state trigger reads: leaders, ISRs, registrations, and the brokers' own
    logs (the ``log_line`` condition)."""


class ClusterHandle(
    Topology,
    NodeProcesses,
    NodeLifecycle,
    ProxyAccess,
    ClusterReads,
    NodeFilesystems,
    DockerAccess,
    Protocol,
):
    """Everything a started cluster offers to faults, workloads and the runner."""
