"""Docker side of a run: the engine, the network, the containers, their processes."""

from __future__ import annotations

import ipaddress
import math
import os
import re
import socket
import struct
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import docker
import docker.errors
from docker.models.containers import Container
from docker.models.networks import Network
from docker.types import IPAMConfig, IPAMPool, Mount

from kchaos.harness.cluster.api import NodeHandle
from kchaos.harness.cluster.config import DATA_DIR
from kchaos.harness.cluster.procfs import stat_fields
from kchaos.harness.cluster.retry import Poll
from kchaos.harness.cluster.topology import choose_subnets, gateway_ip, network_name
from kchaos.harness.errors import ClusterError, SetupError
from kchaos.harness.labels import labels_for


def docker_client() -> docker.DockerClient:
    """The engine `docker info` answers; a SetupError saying so when there is none."""
    try:
        client = docker.from_env(timeout=120)
        client.ping()
    except docker.errors.DockerException as exc:
        raise SetupError(
            f"Docker engine not reachable ({exc}); run `make setup` or start dockerd "
            "(see docs/cluster.md)"
        ) from exc
    return client


def host_routes(route_table: str | None = None) -> list[str]:
    """Destinations of the host's IPv4 routes (from /proc/net/route), default excluded."""
    if route_table is None:
        try:
            route_table = Path("/proc/net/route").read_text()
        except OSError:
            return []
    routes = []
    for line in route_table.splitlines()[1:]:
        parts = line.split()
        if len(parts) < 8:
            continue
        dest = socket.inet_ntoa(struct.pack("<I", int(parts[1], 16)))
        mask = socket.inet_ntoa(struct.pack("<I", int(parts[7], 16)))
        if mask == "0.0.0.0":
            continue
        routes.append(str(ipaddress.ip_network(f"{dest}/{mask}", strict=False)))
    return routes


def docker_subnets(client: docker.DockerClient) -> list[str]:
    subnets = []
    for net in client.networks.list():
        try:
            configs = (net.attrs.get("IPAM") or {}).get("Config") or []
        except docker.errors.NotFound:
            continue
        subnets += [c["Subnet"] for c in configs if c.get("Subnet")]
    return subnets


def create_network(client: docker.DockerClient, run_id: str) -> tuple[Network, str]:
    """A bridge network with a free /24 (retrying when another run took it meanwhile)."""
    taken = docker_subnets(client) + host_routes()
    last: Exception | None = None
    for subnet in choose_subnets(run_id, taken)[:20]:
        ipam = IPAMConfig(pool_configs=[IPAMPool(subnet=subnet, gateway=gateway_ip(subnet))])
        try:
            net = client.networks.create(
                network_name(run_id),
                driver="bridge",
                ipam=ipam,
                labels=labels_for(run_id, "network"),
                check_duplicate=True,
            )
            return net, subnet
        except docker.errors.APIError as exc:
            if "overlap" in str(exc).lower() or "pool" in str(exc).lower():
                last = exc
                continue
            raise ClusterError(f"cannot create network {network_name(run_id)}: {exc}") from exc
    raise ClusterError(f"no free /24 subnet in 10.213.0.0/16 for the run's network: {last}")


def _endpoint(client: docker.DockerClient, ip: str) -> Any:
    return client.api.create_endpoint_config(ipv4_address=ip)


def run_toxiproxy(
    client: docker.DockerClient, run_id: str, image: str, net: str, ip: str, name: str
) -> Container:
    return client.containers.run(
        image,
        name=name,
        hostname="toxiproxy",
        detach=True,
        labels=labels_for(run_id, "toxiproxy"),
        restart_policy={"Name": "no"},
        network=net,
        networking_config={net: _endpoint(client, ip)},
    )


def create_node_container(
    client: docker.DockerClient,
    run_id: str,
    node: NodeHandle,
    image: str,
    env: Mapping[str, str],
    net: str,
) -> Container:
    role = "broker" if node.is_broker else "controller"
    return client.containers.create(
        image,
        name=node.container_name,
        hostname=node.name,
        labels=labels_for(run_id, role, node.node_id),
        environment=dict(env),
        restart_policy={"Name": "no"},
        mounts=[Mount(target=DATA_DIR, source=str(node.mount_path), type="bind")],
        network=net,
        networking_config={net: _endpoint(client, node.ip)},
        stop_signal="SIGTERM",
    )


def get_container(client: docker.DockerClient, name: str) -> Container | None:
    try:
        return client.containers.get(name)
    except docker.errors.NotFound:
        return None


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            kids += [int(x) for x in (task / "children").read_text().split()]
        except OSError:
            continue
    return kids


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def container_pids(container: Container) -> list[int]:
    """Host pids of every process of a running container (PID 1 and its descendants)."""
    container.reload()
    root = int(container.attrs["State"].get("Pid") or 0)
    if root <= 0:
        return []
    seen, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.append(pid)
        todo += _children(pid)
    return seen


def jvm_pid(container: Container) -> int:
    """The broker JVM's host pid: the container's PID 1, or the first java below it."""
    pids = container_pids(container)
    if not pids:
        raise ClusterError(f"{container.name} is not running")
    for pid in pids:
        if _comm(pid) == "java":
            return pid
    return pids[0]


def process_state(pid: int) -> str | None:
    """State letter of a host process (R, S, D, T, ...) from /proc; None when it is gone."""
    fields = stat_fields(pid)
    return fields[0] if fields else None


def send_signal(pid: int, sig: str | int) -> None:
    import signal as _signal

    if isinstance(sig, int):
        signum = sig
    else:
        name = sig.upper()
        name = name if name.startswith("SIG") else "SIG" + name
        try:
            signum = int(getattr(_signal, name))
        except AttributeError:
            raise ClusterError(f"unknown signal {sig!r}") from None
    os.kill(pid, signum)


_ERROR_LINE = re.compile(
    r"\bERROR\b|\bFATAL\b|Exception|requirement failed|Invalid value|^Error|error:", re.I
)


def error_lines(log: str, limit: int = 12) -> list[str]:
    """The broker's own complaint: ERROR/exception lines of its log, first ones first."""
    lines = [ln.rstrip() for ln in log.splitlines() if _ERROR_LINE.search(ln)]
    return lines[:limit]


#: How often to ask the cgroup freezer before giving up, and the pause between asks.
FREEZE_ATTEMPTS = 3
FREEZE_RETRY_S = 0.5


def pause_container(
    container: Container,
    attempts: int = FREEZE_ATTEMPTS,
    retry_s: float = FREEZE_RETRY_S,
    sleep: Any = None,
) -> int:
    """``docker pause`` (the cgroup freezer), asked again when the freezer gave up.

    runc waits a bounded time for every task of the cgroup to freeze and fails with
    "unable to freeze" when one does not (seen once in 20 soak runs under load: a thread
    in uninterruptible sleep, e.g. in a write); it leaves the cgroup thawed, so asking
    again is safe. Returns the number of attempts it took; other errors are not retried,
    and after the last attempt its error is raised."""

    def paused() -> str | None:
        container.pause()
        return None

    def freezer_gave_up(exc: Exception) -> bool:
        return isinstance(exc, docker.errors.APIError) and "unable to freeze" in str(exc)

    until = Poll("docker pause", paused, timeout=math.inf, interval=retry_s,
                  transient=freezer_gave_up, sleep=sleep, attempts=attempts)  # fmt: skip
    if not until.wait():
        assert until.error is not None  # only a failed pause is retried
        raise until.error
    return until.checks


def log_tail(container: Container, tail: int = 40, since: float | None = None) -> str:
    """The container's last ``tail`` log lines (written at or after unix time ``since``)."""
    try:
        return bytes(container.logs(tail=tail, since=since)).decode("utf-8", "replace")
    except docker.errors.APIError as exc:
        return f"(logs unavailable: {exc})"


def status_report(
    containers: Iterable[Container | None], names: Iterable[str], tail: int = 15
) -> str:
    """Every container's status, exit code and last log lines, for error messages."""
    parts = []
    for name, container in zip(names, containers, strict=True):
        if container is None:
            parts.append(f"--- {name}: missing")
            continue
        try:
            container.reload()
        except docker.errors.NotFound:
            parts.append(f"--- {name}: removed")
            continue
        state = container.attrs.get("State", {})
        parts.append(
            f"--- {name}: {state.get('Status')} (exit code {state.get('ExitCode')})\n"
            + log_tail(container, tail).rstrip()
        )
    return "\n".join(parts)
