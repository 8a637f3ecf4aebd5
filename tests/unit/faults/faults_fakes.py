"""Fakes for the faults unit tests: a ClusterHandle that records calls, a history sink."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from kchaos.harness.cluster.api import PROXY_PORT_BASE, NodeHandle, ProxyHandle
from kchaos.harness.errors import ClusterError


def make_nodes(n: int, root: Path, controllers: int = 0) -> list[NodeHandle]:
    nodes = []
    ids = list(range(1, n + 1)) + list(range(101, 101 + controllers))
    for i in ids:
        combined = i < 100
        roles = ("broker", "controller") if combined else ("controller",)
        links = ("client", "replication", "controller") if combined else ("controller",)
        proxies = {
            link: ProxyHandle(
                f"node-{i}-{link}",
                link,  # type: ignore[arg-type]
                "10.9.0.2",
                PROXY_PORT_BASE[link] + i,  # type: ignore[index]
                f"10.9.0.{10 + i}:9093",
            )
            for link in links
        }
        mount = root / f"node-{i}"
        mount.mkdir(parents=True, exist_ok=True)
        nodes.append(
            NodeHandle(
                node_id=i,
                name=f"broker-{i}" if combined else f"controller-{i}",
                roles=roles,
                container_name=f"kchaos-test-{i}",
                ip=f"10.9.0.{10 + i}",
                mount_path=mount,
                loop_device="/dev/loop-none",
                image_file=root / f"node-{i}.img",
                proxies=proxies,
            )
        )
    return nodes


class FakeCluster:
    """Records every call; containers have a state: running, paused or exited."""

    def __init__(self, n: int, root: Path, *, leader: int = 1, controller: int = 1) -> None:
        self.run_id = "test-run"
        self.subnet = "10.9.0.0/24"
        self.toxiproxy_ip = "10.9.0.2"
        self._nodes = make_nodes(n, root)
        self.calls: list[tuple[Any, ...]] = []
        self.state = {node.node_id: "running" for node in self._nodes}
        self.jvm = {node.node_id: "S" for node in self._nodes}
        self.frozen: set[int] = set()
        # blkio throttle lines per node (what throttle_writes set); refuse: node ids whose
        # throttle_writes fails as on a host without a blkio hierarchy
        self.throttles: dict[int, list[str]] = {}
        self.throttle_refused: set[int] = set()
        self.leader = leader
        # per-partition leaders and topic sizes, for coordinator targets (else ``leader``)
        self.leaders: dict[tuple[str, int], int] = {}
        self.partition_counts: dict[str, int] = {}
        self.controller = controller
        self.exec_code = 0
        # the exit code stop_node reports per node id (else 137 for SIGKILL, 143 for SIGTERM)
        self.exit_codes: dict[int, int | None] = {}
        self.lock = threading.Lock()
        # cluster state for triggers: ISR per (topic, partition), broker epochs, alive set;
        # on_observe(cluster, n) runs at every observation (n counts them) to change it
        self.isr: dict[tuple[str, int], list[int]] = {}
        self.isr_error: Exception | None = None
        self.epochs: dict[int, int] = {node.node_id: 10 + node.node_id for node in self._nodes}
        self.alive: set[int] = {node.node_id for node in self._nodes}
        self.observations = 0
        self.on_observe: Callable[[FakeCluster, int], None] | None = None
        self.log_text: dict[int, str] = {}  # what logs() returns, per node
        self.log_start: dict[int, int] = {}  # where the current life begins in log_text

    def _log(self, *call: Any) -> None:
        with self.lock:
            self.calls.append(call)

    @property
    def nodes(self) -> Sequence[NodeHandle]:
        return tuple(self._nodes)

    @property
    def brokers(self) -> Sequence[NodeHandle]:
        return tuple(n for n in self._nodes if n.is_broker)

    @property
    def controllers(self) -> Sequence[NodeHandle]:
        return tuple(n for n in self._nodes if n.is_controller)

    def node(self, key: int | str) -> NodeHandle:
        for n in self._nodes:
            if key in (n.node_id, n.name) or str(key) == str(n.node_id):
                return n
        raise ClusterError(f"no node {key!r}")

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(n.proxies["client"].address for n in self.brokers)

    @property
    def toxiproxy_url(self) -> str:
        return "http://127.0.0.1:9"  # nothing listens: a real call fails fast

    def exec(self, node: NodeHandle, cmd: Sequence[str], *, user: str = "root") -> tuple[int, str]:
        self._log("exec", node.name, tuple(cmd))
        if self.state[node.node_id] != "running":
            raise ClusterError(f"{node.name} is {self.state[node.node_id]}")
        return self.exec_code, ""

    def net_exec(self, node: NodeHandle, cmd: Sequence[str]) -> tuple[int, str]:
        # The network namespace outlives a pause (freezer), not a stop.
        self._log("net_exec", node.name, tuple(cmd))
        if self.state[node.node_id] == "exited":
            raise ClusterError(f"container of {node.name} is not running")
        return self.exec_code, ""

    def signal(self, node: NodeHandle, sig: str) -> None:
        self._log("signal", node.name, sig)
        self.jvm[node.node_id] = "T" if sig == "STOP" else "S"

    def jvm_state(self, node: NodeHandle) -> str | None:
        if self.state[node.node_id] != "running":
            return None
        return self.jvm[node.node_id]

    def pause(self, node: NodeHandle) -> None:
        self._log("pause", node.name)
        self.state[node.node_id] = "paused"

    def unpause(self, node: NodeHandle) -> None:
        self._log("unpause", node.name)
        if self.state[node.node_id] != "paused":
            raise ClusterError("not paused")
        self.state[node.node_id] = "running"

    def stop_node(self, node: NodeHandle, *, hard: bool) -> int | None:
        self._log("stop_node", node.name, hard)
        self.state[node.node_id] = "exited"
        return self._exit_code(node, hard)

    def start_node(self, node: NodeHandle, *, wait: bool = True, timeout: float = 60.0) -> None:
        self._log("start_node", node.name, wait)
        self.state[node.node_id] = "running"
        self.log_start[node.node_id] = len(self.log_text.get(node.node_id, ""))

    def restart_node(
        self, node: NodeHandle, *, hard: bool = False, timeout: float = 60.0
    ) -> int | None:
        self._log("restart_node", node.name, hard)
        time.sleep(0.01)
        return self._exit_code(node, hard)

    def _exit_code(self, node: NodeHandle, hard: bool) -> int | None:
        """The container's exit code: as set in ``exit_codes``, else what Docker gives
        after SIGKILL (137) or a JVM's clean SIGTERM (143)."""
        return self.exit_codes.get(node.node_id, 137 if hard else 143)

    def wait_ready(self, timeout: float = 60.0) -> None:
        self._log("wait_ready")

    def wait_isr_full(self, topics: Iterable[str] | None = None, timeout: float = 60.0) -> None:
        self._log("wait_isr_full", None if topics is None else tuple(topics))

    def logs(self, node: NodeHandle, tail: int = 50, *, last_start: bool = False) -> str:
        text = self.log_text.get(node.node_id, "")
        return text[self.log_start.get(node.node_id, 0) :] if last_start else text

    @property
    def toxiproxy(self) -> FakeToxiproxy:
        return FakeToxiproxy(self.toxiproxy_url)

    def freeze_fs(self, node: NodeHandle) -> None:
        self._log("freeze", node.name)
        self.frozen.add(node.node_id)

    def thaw_fs(self, node: NodeHandle) -> bool:
        self._log("thaw", node.name)
        was = node.node_id in self.frozen
        self.frozen.discard(node.node_id)
        return was

    def shutdown_fs(self, node: NodeHandle) -> None:
        self._log("shutdown", node.name)

    def remount_fs(self, node: NodeHandle) -> None:
        self._log("remount", node.name)

    def is_mounted(self, node: NodeHandle) -> bool:
        return True

    def throttle_writes(self, node: NodeHandle, *, iops: int, bps: int) -> list[str]:
        self._log("throttle", node.name, iops, bps)
        if self.state[node.node_id] == "exited":
            raise ClusterError(f"{node.name} is not running")
        if node.node_id in self.throttle_refused:
            raise ClusterError("no cgroup-v1 blkio group")
        lines = [f"blkio.throttle.write_iops_device 7:{node.node_id} {iops}"]
        if bps:
            lines.append(f"blkio.throttle.write_bps_device 7:{node.node_id} {bps}")
        self.throttles[node.node_id] = lines
        return list(lines)

    def clear_throttles(self, node: NodeHandle) -> list[str]:
        self._log("unthrottle", node.name)
        if self.state[node.node_id] == "exited":
            return []
        return self.throttles.pop(node.node_id, [])

    def partition_leader(self, topic: str, partition: int) -> int:
        return self.leaders.get((topic, partition), self.leader)

    def partition_count(self, topic: str) -> int:
        if topic not in self.partition_counts:
            raise ClusterError(f"topic {topic!r}: not in metadata")
        return self.partition_counts[topic]

    def active_controller_id(self) -> int:
        return self.controller

    # state read by faults.trigger
    def partition_isr(self, topic: str, partition: int) -> list[int]:
        self._observed()
        if self.isr_error is not None:
            raise self.isr_error
        return list(self.isr.get((topic, partition), [n.node_id for n in self.brokers]))

    def broker_epoch(self, broker: int) -> int | None:
        self._observed()
        return self.epochs.get(broker)

    def alive_brokers(self) -> set[int]:
        return set(self.alive)

    def _observed(self) -> None:
        with self.lock:
            self.observations += 1
            n = self.observations
        if self.on_observe is not None:
            self.on_observe(self, n)

    def names(self, kind: str) -> list[tuple[Any, ...]]:
        return [c for c in self.calls if c[0] == kind]


class FakeSink:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self._t0 = time.monotonic_ns()
        self._lock = threading.Lock()

    def elapsed_ns(self) -> int:
        return time.monotonic_ns() - self._t0

    def append(self, event: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            event = {"index": len(self.events), "time": time.monotonic_ns() - self._t0, **event}
            self.events.append(event)
            return event


class FakeToxiproxy:
    """Stands in for kchaos.harness.cluster.proxies.Toxiproxy (FakeCluster.toxiproxy);
    shared state across instances, reset by the ``toxiproxy`` and ``cluster`` fixtures."""

    toxics: dict[tuple[str, str], dict[str, Any]] = {}
    disabled: set[str] = set()

    def __init__(self, url: str, timeout: float = 5.0) -> None:
        self.url = url

    def add_toxic(
        self,
        proxy: str,
        name: str,
        type_: str,
        stream: str,
        attributes: dict[str, Any],
        toxicity: float = 1.0,
    ) -> None:
        self.toxics[(proxy, name)] = {"type": type_, "stream": stream, **attributes}

    def remove_toxic(self, proxy: str, name: str) -> bool:
        return self.toxics.pop((proxy, name), None) is not None

    def set_enabled(self, proxy: str, enabled: bool, *, heal: bool = False) -> None:
        if enabled:
            self.disabled.discard(proxy)
        else:
            self.disabled.add(proxy)

    def leftovers(self) -> list[str]:
        return [f"toxic {t} on {p}" for p, t in self.toxics] + [
            f"proxy {p} disabled" for p in self.disabled
        ]

    def reset(self) -> None:
        self.toxics.clear()
        self.disabled.clear()
