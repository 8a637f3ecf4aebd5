"""``<state root>/runs/RUN_ID/cluster.json``: what a run created, for attach and cleanup.

Written before anything is created (the plan) and again after every step, so that a
harness killed at any point leaves enough behind for ``kchaos cleanup`` and ``attach``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kchaos.harness.cluster.api import NodeHandle, ProxyHandle
from kchaos.harness.cluster.spec import ClusterSpec
from kchaos.harness.cluster.topology import run_dir
from kchaos.harness.errors import ClusterError
from kchaos.harness.rundir.files import write_bytes

STATE_FILE = "cluster.json"
FORMAT_VERSION = 1


@dataclass
class RunState:
    run_id: str
    spec: ClusterSpec
    kafka_image: str = ""
    toxiproxy_image: str = ""
    subnet: str = ""
    toxiproxy_ip: str = ""
    network: str = ""
    cluster_id: str = ""
    toxiproxy_container: str = ""
    nodes: list[NodeHandle] = field(default_factory=list)
    phase: str = "planned"  # planned -> creating -> started -> stopped


def state_path(run_id: str) -> Path:
    return run_dir(run_id) / STATE_FILE


def _node_to_dict(node: NodeHandle) -> dict[str, Any]:
    return {
        "node_id": node.node_id,
        "name": node.name,
        "roles": list(node.roles),
        "container_name": node.container_name,
        "ip": node.ip,
        "mount_path": str(node.mount_path),
        "loop_device": node.loop_device,
        "image_file": str(node.image_file),
        "proxies": {
            link: {
                "name": p.name,
                "listen_host": p.listen_host,
                "listen_port": p.listen_port,
                "upstream": p.upstream,
            }
            for link, p in node.proxies.items()
        },
    }


def _node_from_dict(data: dict[str, Any]) -> NodeHandle:
    proxies = {
        link: ProxyHandle(
            name=p["name"],
            link=link,
            listen_host=p["listen_host"],
            listen_port=int(p["listen_port"]),
            upstream=p["upstream"],
        )
        for link, p in data.get("proxies", {}).items()
    }
    return NodeHandle(
        node_id=int(data["node_id"]),
        name=data["name"],
        roles=tuple(data["roles"]),
        container_name=data["container_name"],
        ip=data["ip"],
        mount_path=Path(data["mount_path"]),
        loop_device=data.get("loop_device", ""),
        image_file=Path(data["image_file"]),
        proxies=proxies,
    )


def to_dict(state: RunState) -> dict[str, Any]:
    return {
        "format": FORMAT_VERSION,
        "run_id": state.run_id,
        "phase": state.phase,
        "spec": state.spec.to_dict(),
        "kafka_image": state.kafka_image,
        "toxiproxy_image": state.toxiproxy_image,
        "subnet": state.subnet,
        "toxiproxy_ip": state.toxiproxy_ip,
        "network": state.network,
        "cluster_id": state.cluster_id,
        "toxiproxy_container": state.toxiproxy_container,
        "nodes": [_node_to_dict(n) for n in state.nodes],
    }


def from_dict(data: dict[str, Any]) -> RunState:
    return RunState(
        run_id=data["run_id"],
        spec=ClusterSpec.from_dict(data["spec"]),
        kafka_image=data.get("kafka_image", ""),
        toxiproxy_image=data.get("toxiproxy_image", ""),
        subnet=data.get("subnet", ""),
        toxiproxy_ip=data.get("toxiproxy_ip", ""),
        network=data.get("network", ""),
        cluster_id=data.get("cluster_id", ""),
        toxiproxy_container=data.get("toxiproxy_container", ""),
        nodes=[_node_from_dict(n) for n in data.get("nodes", [])],
        phase=data.get("phase", "planned"),
    )


def save(state: RunState) -> Path:
    """Write atomically (temp file + rename), so a crash never leaves half a file."""
    path = state_path(state.run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes(path, (json.dumps(to_dict(state), indent=2, sort_keys=True) + "\n").encode())
    return path


def load(run_id: str) -> RunState:
    path = state_path(run_id)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ClusterError(f"no saved cluster state for run {run_id} ({path})") from None
    except (OSError, ValueError) as exc:
        raise ClusterError(f"{path}: unreadable cluster state: {exc}") from exc
    try:
        return from_dict(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise ClusterError(f"{path}: malformed cluster state: {exc}") from exc
