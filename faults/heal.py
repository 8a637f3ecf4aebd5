"""heal_everything: repair every fault family on every node, with no memory of what ran.

It looks at the cluster as it is and undoes whatever kchaos can have left, in an order
that cannot deadlock (a frozen filesystem blocks its writers, even ``docker stop``):

1. stop this process's own duty cycles (they would re-apply a fault), and SIGCONT the
   client processes a fault stopped (``zombie``: the pids recorded under the run's state
   directory by :mod:`kchaos.harness.cluster.clientpids`);
2. thaw every node's filesystem (FITHAW; EINVAL means it was not frozen);
3. unpause frozen containers and SIGCONT stopped JVMs (process state T, read on the
   host from /proc);
4. Toxiproxy ``POST /reset``: no toxics, every proxy enabled;
5. remove every ``KCHAOS*`` iptables chain in every running container's network
   namespace (the host's iptables, entered with nsenter: nothing needed in the image);
6. delete disk-fill files;
7. a node left mid-reboot: unmounted or shut-down filesystem mounted again (after making
   sure its container is stopped), and every stopped container started again.

It returns one line per thing it did (or failed to do, prefixed ``error:``); with
``strict=True`` failures raise :class:`HealError` after everything else was tried.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any

from kchaos.faults import hostfs, iptables
from kchaos.faults.base import abort_all, forget_healed
from kchaos.harness.cluster import clientpids
from kchaos.harness.cluster.api import ClusterHandle, NodeHandle
from kchaos.harness.errors import HealError


def _proc_state(cluster: ClusterHandle, node: NodeHandle) -> str | None:
    """State letter of the node's JVM, read on the host; None when the container is
    paused or stopped (or cannot be looked at)."""
    try:
        return cluster.jvm_state(node)
    except Exception:  # noqa: BLE001 - container gone: treated as stopped
        return None


def heal_everything(
    cluster: ClusterHandle,
    *,
    restart_stopped: bool = True,
    wait_ready: bool = False,
    timeout: float = 120.0,
    strict: bool = False,
) -> list[str]:
    done: list[str] = []
    errors: list[str] = []

    def attempt(what: str, fn: Callable[[], Any]) -> tuple[bool, Any]:
        try:
            return True, fn()
        except Exception as exc:  # noqa: BLE001 - keep healing the rest
            errors.append(f"{what}: {exc}")
            return False, None

    abort_all()
    ok, lines = attempt("paused clients", partial(clientpids.release, cluster.run_id))
    for line in lines or []:
        if line.startswith("error: "):
            errors.append(line[len("error: ") :])
        else:
            done.append(line)
    nodes = sorted(cluster.nodes, key=lambda n: n.node_id)

    for node in nodes:
        ok, thawed = attempt(f"thaw {node.name}", partial(hostfs.thaw, cluster, node))
        if ok and thawed:
            done.append(f"thawed filesystem of {node.name} ({node.mount_path})")

    running: list[NodeHandle] = []
    stopped: list[NodeHandle] = []
    for node in nodes:
        state = _proc_state(cluster, node)
        if state is None:
            # Paused (cgroup freezer) or stopped: try unpausing, then look again.
            unpaused, _ = attempt("", partial(cluster.unpause, node))
            if not unpaused:
                errors.pop()  # not paused: not an error
            state = _proc_state(cluster, node)
            if unpaused and state is not None:
                done.append(f"unpaused container of {node.name}")
        if state is None:
            stopped.append(node)
            continue
        running.append(node)
        if state in ("T", "t"):
            ok, _ = attempt(f"SIGCONT {node.name}", partial(cluster.signal, node, "CONT"))
            if ok:
                done.append(f"sent SIGCONT to the stopped JVM of {node.name}")

    api = cluster.toxiproxy
    ok, found = attempt("toxiproxy", api.leftovers)
    if ok and found:
        ok, _ = attempt("toxiproxy reset", api.reset)
        if ok:
            done.extend(f"toxiproxy: removed {item}" for item in found)

    for node in running:
        ok, out = attempt(
            f"iptables {node.name}",
            partial(iptables.run_script, cluster, node, iptables.heal_script(), heal=True),
        )
        for line in str(out or "").splitlines():
            if line.startswith("removed "):
                done.append(f"iptables on {node.name}: {line}")

    for node in nodes:
        ok, removed = attempt(f"unfill {node.name}", partial(hostfs.unfill, cluster, node))
        done.extend(f"deleted disk-fill file {path}" for path in removed or [])

    for node in nodes:
        if not hostfs.loop_backs_image(node) or hostfs.is_healthy(cluster, node):
            continue  # torn down (nothing to mount) or fine
        if node in running:
            ok, _ = attempt(f"stop {node.name}", partial(cluster.stop_node, node, hard=True))
            if ok:
                running.remove(node)
                stopped.append(node)
        if node in stopped:
            ok, _ = attempt(f"remount {node.name}", partial(hostfs.remount, cluster, node))
            if ok and hostfs.is_healthy(cluster, node):
                done.append(f"remounted the filesystem of {node.name} (left mid-reboot)")

    if restart_stopped and stopped:
        for node in stopped:
            ok, _ = attempt(f"start {node.name}", partial(cluster.start_node, node, wait=False))
            if ok:
                done.append(f"started stopped node {node.name}")
        if wait_ready:
            t0 = time.monotonic()
            ok, _ = attempt("wait_ready", lambda: cluster.wait_ready(timeout=timeout))
            if ok:
                done.append(f"cluster ready after {time.monotonic() - t0:.1f}s")

    if not errors and (restart_stopped or not stopped):
        # Everything kchaos can leave is undone: the faults still registered as active on
        # this cluster were undone by this heal, not by their own stop.
        forget_healed(cluster)
    done.extend(f"error: {e}" for e in errors)
    if strict and errors:
        raise HealError("heal incomplete: " + "; ".join(errors))
    return done
