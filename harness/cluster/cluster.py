"""``Cluster``: a KRaft cluster in Docker, every link behind Toxiproxy, every node on its
own ext4 filesystem. Implements :class:`kchaos.harness.cluster.api.ClusterHandle`.

    with Cluster(ClusterSpec(brokers=3)) as cluster:
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
        cluster.restart_node(cluster.node(2), hard=True)

A failed start removes whatever it had created before the error propagates, and the
context manager removes everything on exit; ``kchaos cleanup --run RUN_ID`` does the same
after a crash, from labels and ``cluster.json``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import docker
import docker.errors
import requests
from confluent_kafka.admin import AdminClient
from docker.models.containers import Container

from kchaos.harness.cluster import blkio, filesystem, observe, readiness
from kchaos.harness.cluster.api import (
    CLIENT_PORT,
    CONTROLLER_PORT,
    TOXIPROXY_API_PORT,
    LinkClass,
    NodeHandle,
)
from kchaos.harness.cluster.cleanup import cleanup_run
from kchaos.harness.cluster.config import DATA_UID, new_cluster_id, node_environment
from kchaos.harness.cluster.containers import (
    container_pids,
    create_network,
    create_node_container,
    docker_client,
    error_lines,
    get_container,
    jvm_pid,
    log_tail,
    pause_container,
    process_state,
    run_toxiproxy,
    send_signal,
    status_report,
)
from kchaos.harness.cluster.netns import run_in_netns
from kchaos.harness.cluster.proxies import Toxiproxy
from kchaos.harness.cluster.spec import ClusterSpec
from kchaos.harness.cluster.state import RunState, load, save
from kchaos.harness.cluster.topology import (
    container_name,
    fs_label,
    network_name,
    plan_nodes,
    run_dir,
    stop_order,
    toxiproxy_ip,
)
from kchaos.harness.cluster.wait import Check, Until, http_answers
from kchaos.harness.errors import (
    BrokerStartError,
    ClientGone,
    ClusterError,
    ReadinessTimeout,
    SetupError,
    WaitTimeout,
)
from kchaos.harness.labels import LABEL_ROLE, LABEL_RUN, new_run_id

METRICS_PORT = 7071
JMX_PORT = METRICS_PORT
TOXIPROXY_UP_TIMEOUT = 30.0
OBSERVE_TIMEOUT = 3.0  # one metadata request of a trigger (polled again and again)
LOOKUP_TIMEOUT = 10.0  # one lookup of a fault's target (the leader, the active controller)
T = TypeVar("T")


class Cluster:
    """One run's cluster. Construct, then ``start()`` (or use ``with``)."""

    def __init__(self, spec: ClusterSpec | None = None) -> None:
        spec = spec or ClusterSpec()
        self.run_id: str = spec.run_id or new_run_id()
        self.spec: ClusterSpec = dataclasses.replace(spec, run_id=self.run_id)
        self._state = RunState(run_id=self.run_id, spec=self.spec)
        self._client: docker.DockerClient | None = None
        self._toxiproxy: Toxiproxy | None = None
        self._observe_admin: AdminClient | None = None
        self._epochs: observe.EpochReader | None = None
        self._stopped: set[int] = set()  # stopped on purpose (stop_node)
        self._starting: set[int] = set()  # (re)starting: an exit means "refused to start"
        self.subnet: str = ""  # e.g. "10.213.7.0/24", set by start()
        self.toxiproxy_ip: str = ""
        self.start_seconds: float | None = None  # start() to full ISR, images excluded
        self.images_seconds: float | None = None  # resolving/building the images
        # start() found the run id in use: everything under it is another run's, and
        # stop() and cleanup() of this object leave it alone
        self.foreign = False

    # -- ClusterHandle ------------------------------------------------------------------
    @property
    def nodes(self) -> Sequence[NodeHandle]:
        return tuple(self._state.nodes)

    @property
    def brokers(self) -> Sequence[NodeHandle]:
        return tuple(n for n in self._state.nodes if n.is_broker)

    @property
    def controllers(self) -> Sequence[NodeHandle]:
        return tuple(n for n in self._state.nodes if n.is_controller)

    def node(self, key: int | str) -> NodeHandle:
        for n in self._state.nodes:
            if key in (n.node_id, n.name, n.container_name) or str(key) == str(n.node_id):
                return n
        raise ClusterError(f"run {self.run_id} has no node {key!r}")

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(n.proxies["client"].address for n in self.brokers)

    @property
    def toxiproxy_url(self) -> str:
        return f"http://{self.toxiproxy_ip}:{TOXIPROXY_API_PORT}"

    def exec(self, node: NodeHandle, cmd: Sequence[str], *, user: str = "root") -> tuple[int, str]:
        result = self.container(node).exec_run(list(cmd), user=user)
        output = result.output or b""
        return int(result.exit_code or 0), bytes(output).decode("utf-8", "replace")

    def net_exec(self, node: NodeHandle, cmd: Sequence[str]) -> tuple[int, str]:
        return run_in_netns(self.container(node), cmd)

    def client_net_exec(self, address: str, cmd: Sequence[str]) -> tuple[int, str]:
        net = network_name(self.run_id)
        found = [
            c
            for c in self.client.containers.list(
                filters={"label": [f"{LABEL_RUN}={self.run_id}", f"{LABEL_ROLE}=client"]}
            )
            if ((c.attrs.get("NetworkSettings") or {}).get("Networks") or {})
            .get(net, {})
            .get("IPAddress")
            == address
        ]
        if not found:
            raise ClientGone(f"run {self.run_id}: no running client container at {address}")
        return run_in_netns(found[0], cmd)

    def signal(self, node: NodeHandle, sig: str | int) -> None:
        send_signal(jvm_pid(self.container(node)), sig)

    def jvm_state(self, node: NodeHandle) -> str | None:
        container = self.container(node)
        if (container.attrs.get("State") or {}).get("Status") != "running":
            return None  # paused (cgroup freezer), exited or created
        try:
            return process_state(jvm_pid(container))
        except ClusterError:
            return None

    def pause(self, node: NodeHandle) -> None:
        pause_container(self.container(node))

    def unpause(self, node: NodeHandle) -> None:
        self.container(node).unpause()

    def stop_node(self, node: NodeHandle, *, hard: bool, timeout: float = 60.0) -> int | None:
        container = self.container(node)
        self._stopped.add(node.node_id)
        try:
            if hard:
                container.kill(signal="SIGKILL")
            else:
                container.stop(timeout=int(timeout))
        except docker.errors.APIError as exc:
            if "is not running" not in str(exc):
                raise ClusterError(f"cannot stop {node.name}: {exc}") from exc
        code = container.wait(timeout=timeout).get("StatusCode")
        return code if isinstance(code, int) else None

    def start_node(self, node: NodeHandle, *, wait: bool = True, timeout: float = 60.0) -> None:
        container = self.container(node)
        self._starting.add(node.node_id)
        container.start()
        self._stopped.discard(node.node_id)
        if wait:
            self._wait_nodes([node], timeout)

    def restart_node(
        self, node: NodeHandle, *, hard: bool = False, timeout: float = 60.0
    ) -> int | None:
        code = self.stop_node(node, hard=hard)
        self.start_node(node, wait=True, timeout=timeout)
        return code

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Every node answering, every broker registered, the probe topic's ISR full."""
        deadline = time.monotonic() + timeout
        self._wait_nodes(self.nodes, timeout)
        brokers = {n.node_id for n in self.brokers}
        admin = self.admin()
        created = False

        def check() -> str | None:
            nonlocal created
            self._check_containers()
            missing = brokers - readiness.registered_brokers(admin)
            if missing:
                return f"brokers not registered: {sorted(missing)}"
            try:
                if not created:
                    readiness.ensure_topic(
                        admin, readiness.PROBE_TOPIC, len(brokers), min(3, len(brokers))
                    )
                    created = True
                problems = readiness.isr_problems(admin, [readiness.PROBE_TOPIC])
            except Exception as exc:  # noqa: BLE001 - an observation; retried until the timeout
                problems = [f"{type(exc).__name__}: {exc}"]
            return "probe topic not in sync: " + "; ".join(problems) if problems else None

        self._until("cluster ready", check, timeout, max(0.0, deadline - time.monotonic()))

    def logs(self, node: NodeHandle, tail: int = 50, *, last_start: bool = False) -> str:
        container = self.container(node)
        if not last_start:
            return log_tail(container, tail)
        container.reload()
        started = datetime.fromisoformat(container.attrs["State"]["StartedAt"]).timestamp()
        # a container that never started says 0001-01-01: its whole log, which is empty
        return log_tail(container, tail, since=started if started > 0 else None)

    def full_log(self, node: NodeHandle) -> bytes:
        """The node's whole container log (the images log to stdout): every line since
        the container was created, across restarts; also of a stopped container."""
        return bytes(self.container(node).logs(stdout=True, stderr=True, tail="all"))

    # -- extras for runner, tests and faults ------------------------------------------------
    @property
    def client(self) -> docker.DockerClient:
        if self._client is None:
            self._client = docker_client()
        return self._client

    @property
    def cluster_id(self) -> str:
        return self._state.cluster_id

    @property
    def kafka_image(self) -> str:
        return self._state.kafka_image

    @property
    def toxiproxy_image(self) -> str:
        return self._state.toxiproxy_image

    @property
    def toxiproxy(self) -> Toxiproxy:
        """The client of this run's Toxiproxy server (faults add and remove toxics here)."""
        if self._toxiproxy is None or self._toxiproxy.url != self.toxiproxy_url:
            self._toxiproxy = Toxiproxy(self.toxiproxy_url)
        return self._toxiproxy

    def container(self, node: NodeHandle | str) -> Container:
        name = node if isinstance(node, str) else node.container_name
        found = get_container(self.client, name)
        if found is None:
            raise ClusterError(f"container {name} of run {self.run_id} does not exist")
        return found

    def admin(self, **conf: Any) -> AdminClient:
        """A confluent-kafka AdminClient on the client proxies."""
        return readiness.admin_client(self.bootstrap_servers, **conf)

    def metrics_url(self, node: NodeHandle) -> str:
        """The node's Prometheus endpoint (direct, not through Toxiproxy)."""
        return f"http://{node.ip}:{METRICS_PORT}/metrics"

    def set_proxy_enabled(self, node: NodeHandle, link: LinkClass, enabled: bool) -> None:
        self.toxiproxy.set_enabled(node.proxies[link].name, enabled)

    def wait_isr_full(self, topics: Iterable[str] | None = None, timeout: float = 60.0) -> None:
        """Until every partition of the topics (None: of every topic, internal ones too,
        as the cluster lists them at each check) has a leader and ISR == replicas."""
        named = None if topics is None else list(topics)
        with_admin = self.admin()

        def check() -> str | None:
            problems = readiness.isr_problems(with_admin, named)
            return "ISR not full: " + "; ".join(problems) if problems else None

        self._until("ISR full", check, timeout)

    # the cluster's state, read for faults and triggers (kchaos.harness.cluster.observe)
    def _observer(self) -> AdminClient:
        if self._observe_admin is None:
            self._observe_admin = self.admin(
                **{
                    "socket.timeout.ms": int(OBSERVE_TIMEOUT * 1000),
                    "reconnect.backoff.max.ms": 500,
                    "log_level": 0,
                }
            )
        return self._observe_admin

    def partition_leader(self, topic: str, partition: int) -> int:
        return observe.partition_leader(self._observer(), topic, partition, LOOKUP_TIMEOUT)

    def partition_isr(self, topic: str, partition: int) -> list[int]:
        return self._observed(
            lambda admin: observe.partition_isr(admin, topic, partition, OBSERVE_TIMEOUT)
        )

    def partition_count(self, topic: str) -> int:
        return self._observed(lambda admin: observe.partition_count(admin, topic, OBSERVE_TIMEOUT))

    def alive_brokers(self) -> set[int]:
        return self._observed(lambda admin: observe.alive_brokers(admin, OBSERVE_TIMEOUT))

    def _observed(self, read: Callable[[AdminClient], T]) -> T:
        """One read on the observer; a failed read drops the observer. librdkafka sends an
        admin's metadata request to the broker it used last, so a paused broker that let
        one request time out gets the next one too and blinds a trigger for as long as the
        pause lasts; a new client only uses a broker that answers its handshake."""
        try:
            return read(self._observer())
        except ClusterError:
            self._observe_admin = None
            raise

    def active_controller_id(self) -> int:
        """From ActiveControllerCount on each controller's :7071, else the quorum tool."""
        errors = []
        for node in sorted(self.controllers, key=lambda n: n.node_id):
            try:
                text = requests.get(self.metrics_url(node), timeout=LOOKUP_TIMEOUT).text
            except requests.RequestException as exc:
                errors.append(f"{node.name}: {exc.__class__.__name__}")
                continue
            if observe.active_controller_count(text) >= 1:
                return node.node_id
        for node in sorted(self.brokers, key=lambda n: n.node_id):
            try:
                code, out = self.exec(node, observe.QUORUM_STATUS)
            except (ClusterError, docker.errors.APIError) as exc:  # stopped or paused
                errors.append(f"{node.name}: {exc}")
                continue
            # Trust the printed LeaderId even when the tool fails later on its way out.
            leader = observe.quorum_leader(out)
            if leader is not None:
                return leader
            errors.append(f"{node.name}: quorum tool exit {code}")
        raise ClusterError("no active controller found: " + "; ".join(errors))

    def broker_epoch(self, broker: int) -> int | None:
        if self._epochs is None:
            self._epochs = observe.EpochReader(lambda b, tail: self.logs(self.node(b), tail))
        return self._epochs.epoch(broker)

    def process_ids(self, node: NodeHandle) -> list[int]:
        """Host pids of every process in the node's container."""
        return container_pids(self.container(node))

    # disk operations on the node's own filesystem (host side)
    def freeze_fs(self, node: NodeHandle) -> None:
        """FIFREEZE: every writer to the node's data filesystem blocks until thaw_fs."""
        filesystem.freeze(node.mount_path)

    def thaw_fs(self, node: NodeHandle) -> bool:
        """FITHAW; False when the filesystem was not frozen."""
        return filesystem.thaw(node.mount_path)

    def shutdown_fs(self, node: NodeHandle) -> None:
        """EXT4_IOC_SHUTDOWN with NOLOGFLUSH: unflushed writes are lost (power cut)."""
        filesystem.shutdown_nologflush(node.mount_path)

    def unmount_fs(self, node: NodeHandle) -> None:
        filesystem.unmount(node.mount_path)

    def mount_fs(self, node: NodeHandle) -> None:
        filesystem.mount(node.loop_device, node.mount_path, self.spec.data_mount_options)

    def remount_fs(self, node: NodeHandle) -> None:
        """Unmount if mounted, then mount the node's loop device again (container stopped).
        ClusterError when the loop device no longer backs the node's image file."""
        if filesystem.is_mounted(node.mount_path):
            filesystem.unmount(node.mount_path)
        if not filesystem.loop_backs(node.loop_device, node.image_file):
            raise ClusterError(f"{node.loop_device} no longer backs {node.image_file}")
        filesystem.mount(node.loop_device, node.mount_path, self.spec.data_mount_options)

    def is_mounted(self, node: NodeHandle) -> bool:
        return filesystem.is_mounted(node.mount_path)

    # write throttles on the node's data device (its container's blkio group)
    def _container_pid(self, node: NodeHandle) -> int:
        """PID 1 of the node's container on the host; 0 when it is not running or gone."""
        container = get_container(self.client, node.container_name)
        if container is None:
            return 0
        try:
            container.reload()
        except docker.errors.NotFound:
            return 0
        return int((container.attrs.get("State") or {}).get("Pid") or 0)

    def throttle_writes(self, node: NodeHandle, *, iops: int, bps: int) -> list[str]:
        pid = self._container_pid(node)
        if pid <= 0:
            raise ClusterError(f"container {node.container_name} is not running")
        group = blkio.group_dir(pid)
        device = blkio.device_number(node.loop_device)
        return [str(t) for t in blkio.throttle_writes(group, device, iops=iops, bps=bps)]

    def clear_throttles(self, node: NodeHandle) -> list[str]:
        pid = self._container_pid(node)
        if pid <= 0:
            return []
        return [str(t) for t in blkio.clear_throttles(blkio.group_dir(pid))]

    # -- lifecycle ------------------------------------------------------------------------
    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.cleanup()

    def start(self) -> Cluster:
        """Create everything and wait until ready; on any failure remove it all again.

        The run id is reserved first (:func:`reserve_run_id`): one in use is refused before
        anything is created, and nothing is removed then, since all of it is the other
        run's."""
        try:
            reserve_run_id(self.run_id)
        except ClusterError:
            self.foreign = True
            raise
        try:
            began = time.monotonic()
            self._resolve_images()
            self.images_seconds = time.monotonic() - began
            began = time.monotonic()
            self._start()
            self.start_seconds = time.monotonic() - began
        except BaseException:
            self.cleanup()
            raise
        return self

    def _resolve_images(self) -> None:
        spec = self.spec
        kafka, toxi = spec.image_tag, spec.toxiproxy_image
        if (kafka is None or toxi is None) and spec.images is not None:
            kafka, toxi = kafka or spec.images.kafka, toxi or spec.images.toxiproxy
        if kafka is None or toxi is None:
            from kchaos.harness.images import ensure_images

            images = ensure_images(spec.kafka_version)
            kafka, toxi = kafka or images.kafka, toxi or images.toxiproxy
        for tag in (kafka, toxi):
            try:
                self.client.images.get(tag)
            except docker.errors.ImageNotFound:
                raise SetupError(f"image {tag} is missing; build it with `kchaos images`") from None
        self._state.kafka_image, self._state.toxiproxy_image = kafka, toxi

    def _start(self) -> None:
        st = self._state
        run_dir(self.run_id).mkdir(parents=True, exist_ok=True)
        save(st)
        _net, st.subnet = create_network(self.client, self.run_id)
        st.network = _net.name or ""
        st.toxiproxy_ip = toxiproxy_ip(st.subnet)
        self.subnet, self.toxiproxy_ip = st.subnet, st.toxiproxy_ip
        st.cluster_id = new_cluster_id()
        st.toxiproxy_container = container_name(self.run_id, "toxiproxy")
        st.nodes = plan_nodes(self.spec, self.run_id, st.subnet)
        st.phase = "creating"
        save(st)
        for i, node in enumerate(st.nodes):
            loop = filesystem.create_filesystem(
                node.image_file,
                node.mount_path,
                size_mb=self.spec.disk_size_mb,
                label=fs_label(self.run_id, node.node_id),
                uid=DATA_UID,
                options=self.spec.data_mount_options,
            )
            st.nodes[i] = dataclasses.replace(node, loop_device=loop)
            save(st)
            # the options a scenario needs (KAFKA-16541's noauto_da_alloc) must have taken:
            # the start fails here, before any container, when the kernel did not apply one
            filesystem.check_mount_options(node.mount_path, self.spec.data_mount_options)
        run_toxiproxy(
            self.client,
            self.run_id,
            st.toxiproxy_image,
            st.network,
            st.toxiproxy_ip,
            st.toxiproxy_container,
        )
        api = self.toxiproxy
        version = http_answers(f"{self.toxiproxy_url}/version")
        self._until("Toxiproxy API answering", version, TOXIPROXY_UP_TIMEOUT)
        api.populate(p for n in st.nodes for p in n.proxies.values())
        containers = [
            create_node_container(
                self.client,
                self.run_id,
                node,
                st.kafka_image,
                node_environment(self.spec, node.node_id, st.toxiproxy_ip, st.cluster_id),
                st.network,
            )
            for node in st.nodes
        ]
        self._starting = {n.node_id for n in st.nodes}
        for container in containers:
            container.start()
        save(st)
        self.wait_ready(self.spec.ready_timeout)
        # Write back what formatting and start-up wrote, as on a broker that has been up
        # for a while: a later lost-page-cache fault then loses only the run's own writes,
        # not the storage format (Kafka 3.4 does not fsync its bootstrap checkpoint).
        for node in st.nodes:
            filesystem.sync(node.mount_path)
        st.phase = "started"
        save(st)

    def stop(self, timeout: float = 20.0) -> None:
        """Stop the nodes with SIGTERM (controlled shutdown), brokers before controllers
        (see :func:`~kchaos.harness.cluster.topology.stop_order`), then remove everything.

        ``timeout`` bounds the whole stop, not each node: what has not exited by then is
        killed by the cleanup. A run that has collected its evidence (logs, replica
        dumps) already, whose cluster nobody reads again, calls :meth:`cleanup` instead:
        no controlled shutdown, everything removed at once.
        """
        if self.foreign:
            return
        deadline = time.monotonic() + timeout
        try:
            for group in stop_order(self.nodes):
                signalled = []
                for node in group:
                    c = get_container(self.client, node.container_name)
                    if c is not None and c.status == "running":
                        c.kill(signal="SIGTERM")
                        signalled.append(c)
                for c in signalled:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return  # the finally clause's cleanup kills what is left
                    with contextlib.suppress(Exception):
                        c.wait(timeout=left)
        finally:
            self.cleanup()

    def cleanup(self) -> list[str]:
        """Remove every container, network, mount, loop device and file of this run
        (nothing when :meth:`start` found its run id in use: all that is another run's)."""
        if self.foreign:
            return []
        try:
            client: docker.DockerClient | None = self.client
        except SetupError:
            client = None
        return cleanup_run(self.run_id, client=client)

    # -- internals ------------------------------------------------------------------------
    def _check_containers(self, nodes: Sequence[NodeHandle] | None = None) -> None:
        """BrokerStartError as soon as a node's container has exited on its own.

        ``nodes``: only these (start_node waits for its node alone, so another node that a
        fault deliberately stopped does not count); by default every node.
        """
        toxi = get_container(self.client, self._state.toxiproxy_container)
        if toxi is None or toxi.status not in ("running", "paused"):
            raise ClusterError(
                f"Toxiproxy container of run {self.run_id} is not running\n"
                + status_report([toxi], [self._state.toxiproxy_container])
            )
        for node in self.nodes if nodes is None else nodes:
            c = get_container(self.client, node.container_name)
            if c is None:
                raise ClusterError(f"container {node.container_name} disappeared")
            if c.status in ("exited", "dead"):
                if node.node_id in self._starting:
                    self._broker_failed(node, c)
                code = c.attrs.get("State", {}).get("ExitCode")
                why = "was stopped" if node.node_id in self._stopped else f"exited ({code})"
                raise ClusterError(f"{node.name} {why}; start_node() it first")

    def _broker_failed(self, node: NodeHandle, container: Container) -> None:
        code = container.attrs.get("State", {}).get("ExitCode")
        full = bytes(container.logs(tail=400)).decode("utf-8", "replace")
        errors = error_lines(full) or [ln for ln in full.splitlines() if ln.strip()][-3:]
        tail = "\n".join(full.splitlines()[-40:])
        raise BrokerStartError(
            f"{node.name} ({node.container_name}) exited with code {code} during start.\n"
            "Its own error:\n  "
            + ("\n  ".join(errors) if errors else "(no error line found)")
            + f"\n--- last lines of its log:\n{tail}"
        )

    def _wait_nodes(self, nodes: Sequence[NodeHandle], timeout: float) -> None:
        waiting = list(nodes)

        def check() -> str | None:
            nonlocal waiting
            self._check_containers(nodes)
            waiting = [n for n in waiting if not readiness.answers_requests(n.ip, _serving_port(n))]
            self._starting -= {n.node_id for n in nodes if n not in waiting}
            return "not answering: " + ", ".join(n.name for n in waiting) if waiting else None

        self._until("nodes answering", check, timeout)

    def _until(self, what: str, check: Check, timeout: float, left: float | None = None) -> None:
        """Wait with :class:`Until`; on timeout, ReadinessTimeout with the last observation
        and every container's state."""
        wait = Until(what, check, timeout=timeout if left is None else left)
        try:
            wait.wait_until_ready()
        except WaitTimeout as exc:
            self._timeout(timeout, exc.last)

    def _timeout(self, timeout: float, what: str) -> None:
        names = [self._state.toxiproxy_container] + [n.container_name for n in self.nodes]
        containers = [get_container(self.client, name) for name in names]
        raise ReadinessTimeout(
            f"cluster {self.run_id} not ready after {timeout:.0f}s: {what}\n"
            + status_report(containers, names)
        )


def reserve_run_id(run_id: str) -> None:
    """Create the run's state directory, ``<state root>/runs/RUN_ID``, which must not
    exist: two runs on one host can then never share a run id (an id is a second's time
    stamp and 16 random bits; ``--parallel`` starts several runs in the same second), so
    one run's cleanup, which selects by run id, cannot remove the other's containers,
    network or mounts. ClusterError when it exists: another run holds the id, or a run
    that died left it (``kchaos cleanup --run RUN_ID`` removes that)."""
    base = run_dir(run_id)
    base.parent.mkdir(parents=True, exist_ok=True)
    try:
        base.mkdir()
    except FileExistsError:
        raise ClusterError(
            f"run id {run_id} is in use: {base} exists (another run holds it, or a run "
            f"left it behind: `kchaos cleanup --run {run_id}`)"
        ) from None


def _serving_port(node: NodeHandle) -> int:
    return CLIENT_PORT if node.is_broker else CONTROLLER_PORT


def attach(run_id: str) -> Cluster:
    """Rebuild the Cluster of an existing run from its saved state (after a crash too)."""
    st = load(run_id)
    cluster = Cluster(
        st.spec if st.spec.run_id == run_id else dataclasses.replace(st.spec, run_id=run_id)
    )
    st.spec = cluster.spec
    cluster._state = st
    cluster.subnet, cluster.toxiproxy_ip = st.subnet, st.toxiproxy_ip
    return cluster


if TYPE_CHECKING:
    from kchaos.harness.cluster import api

    def _satisfies_every_protocol(
        cluster: Cluster,
    ) -> tuple[
        api.Topology,
        api.NodeProcesses,
        api.NodeLifecycle,
        api.ProxyAccess,
        api.Leadership,
        api.ClusterReads,
        api.NodeFilesystems,
        api.DockerAccess,
        api.NodeAccess,
        api.Targeting,
        api.TriggerReads,
        api.ToolHost,
        api.ClusterHandle,
    ]:
        """Never called: mypy checks here that Cluster implements each protocol of
        kchaos.harness.cluster.api (a missing or mistyped member fails `.ci/typecheck`)."""
        c = cluster
        return (c, c, c, c, c, c, c, c, c, c, c, c, c)
