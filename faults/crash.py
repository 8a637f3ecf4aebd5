"""Crashes and reboots.

``kill``            SIGKILL the broker (hard bounce); restarted when the fault stops.
``term``            SIGTERM (clean shutdown); restarted when the fault stops. The start
                    line's ``detail`` has ``exit_codes``: per node, the container's exit
                    code (143 or 0 for a JVM that ran its shutdown; 137 when Docker had
                    to SIGKILL it), which tells the start-log checker a clean stop from a
                    crash when the last log lines were lost.
``rolling-restart`` restart the targets one after another (``hard``: SIGKILL instead of
                    SIGTERM), in node id order, ``interval_s`` apart; each is waited for
                    before the next: answering requests and, with ``wait_isr`` (the
                    default, as an operator's safe rolling restart does), every
                    partition of every topic back to a full ISR. The fault ends when the
                    last node is back (stop waits for that). The stop line's ``detail``
                    has ``exit_codes``: per node restarted, its container's exit code,
                    as for ``term``.
``hard-reboot``     kill the broker, shut its ext4 down without flushing
                    (EXT4_IOC_SHUTDOWN, NOLOGFLUSH), unmount and mount again: whatever was
                    not yet written back (roughly the last 30 s of unsynced writes) is gone.
                    The node stays down until the fault stops. The start line's ``detail``
                    has ``epoch_checkpoints``: per node, the leader-epoch checkpoints as
                    the remount found them (``kchaos.faults.crashscan``); with ``wait``,
                    the stop line's has ``epoch_checkpoints_after_restart`` for those
                    found lost: their entries once the broker is back, and where each
                    log starts.
``power-loss``      hard-reboot of every target at once (default: all nodes); on stop all
                    are started together and, with ``wait``, the cluster waited for. Its
                    start line has ``epoch_checkpoints`` too.

Common params: ``wait`` (on stop, wait until the node is registered / cluster ready) and
``timeout_s`` (for that wait).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

from kchaos.faults import crashscan, hostfs
from kchaos.faults.base import Fault, register
from kchaos.faults.heal import HealContext, register_heal
from kchaos.faults.params import Param
from kchaos.harness.cluster.api import NodeHandle
from kchaos.harness.errors import FaultError, HealError

WAIT = Param("wait", "bool", True, "on stop, wait until the restarted node(s) are ready")
TIMEOUT = Param("timeout_s", "float", 90.0, "how long that wait may take", minimum=1)


def each(nodes: tuple[NodeHandle, ...], fn: Callable[[NodeHandle], object]) -> list[str]:
    """Run fn on every node in parallel; the errors, one per failed node."""
    errors: list[str] = []
    if not nodes:
        return errors
    with ThreadPoolExecutor(max_workers=len(nodes)) as pool:
        futures = {node.name: pool.submit(fn, node) for node in nodes}
    for name, fut in futures.items():
        exc = fut.exception()
        if exc is not None:
            errors.append(f"{name}: {exc}")
    return errors


class _DownUntilStop(Fault):
    """Base: take the targets down on start; start them again on stop."""

    family = "crash"
    default_target = "random"
    params_spec = (WAIT, TIMEOUT)

    def _take_down(self, node: NodeHandle) -> None:
        raise NotImplementedError

    def _start(self) -> None:
        self._down: list[NodeHandle] = []
        lock = threading.Lock()

        def down(node: NodeHandle) -> None:
            with lock:
                self._down.append(node)
            self._take_down(node)

        errors = each(self.targets, down)
        if errors:
            raise FaultError(f"{self.name}: " + "; ".join(errors))

    def _stop(self) -> None:
        nodes = tuple(sorted(getattr(self, "_down", []), key=lambda n: n.node_id))
        wait, timeout = self.params["wait"], self.params["timeout_s"]
        if len(nodes) == 1:
            try:
                self.cluster.start_node(nodes[0], wait=wait, timeout=timeout)
            except Exception as exc:
                raise HealError(f"{self.name}: start {nodes[0].name}: {exc}") from exc
        else:
            # Several nodes (a quorum) must come up together before any can be ready.
            errors = each(nodes, lambda n: self.cluster.start_node(n, wait=False))
            if errors:
                raise HealError(f"{self.name}: start: " + "; ".join(errors))
            if wait and nodes:
                try:
                    self.cluster.wait_ready(timeout=timeout)
                except Exception as exc:
                    raise HealError(f"{self.name}: cluster not ready: {exc}") from exc
        self._down = []


@register
class Kill(_DownUntilStop):
    """SIGKILL the targets; restart on stop."""

    name = "kill"
    summary = "SIGKILL, restart on stop"

    def _take_down(self, node: NodeHandle) -> None:
        self.cluster.stop_node(node, hard=True)


@register
class Term(_DownUntilStop):
    """SIGTERM (clean shutdown) the targets; restart on stop."""

    name = "term"
    summary = "SIGTERM, restart on stop"

    def _take_down(self, node: NodeHandle) -> None:
        code = self.cluster.stop_node(node, hard=False)
        # each node its own key, as with epoch_checkpoints: the targets go down in
        # parallel threads, and setdefault and an item's store are each one step
        self.detail.setdefault("exit_codes", {})[node.name] = code


def lose_page_cache(fault: Fault, node: NodeHandle) -> None:
    """Kill the node, shut its filesystem down without flushing, unmount and mount."""
    fault.cluster.stop_node(node, hard=True)
    hostfs.thaw(fault.cluster, node)  # a frozen fs cannot be shut down cleanly
    hostfs.shutdown(fault.cluster, node)
    hostfs.remount(fault.cluster, node)
    if not hostfs.is_healthy(fault.cluster, node):
        raise FaultError(f"{node.name}: filesystem unusable after remount")
    record_epoch_checkpoints(fault, node)


def record_epoch_checkpoints(fault: Fault, node: NodeHandle) -> None:
    """Put what the crash left of the node's leader-epoch checkpoints into the fault's
    detail (read now: the restarted broker rewrites them). A scan that fails is recorded
    as such; it never fails the fault."""
    try:
        found: dict[str, Any] = crashscan.summary(crashscan.scan(node.mount_path), node.mount_path)
    except OSError as exc:
        found = {"error": str(exc)}
    # each node its own key: the nodes of one fault are taken down in parallel threads
    fault.detail.setdefault("epoch_checkpoints", {})[node.name] = found


def record_after_restart(fault: Fault, nodes: tuple[NodeHandle, ...]) -> None:
    """Once the nodes are back (their logs loaded), what became of the checkpoints the
    crash emptied: their entries now, and where each log starts (the stop line's detail).
    Nothing when no checkpoint was lost; never fails the fault."""
    scans = fault.detail.get("epoch_checkpoints") or {}
    after: dict[str, Any] = {}
    for node in nodes:
        lost = [x["partition"] for x in (scans.get(node.name) or {}).get("lost") or ()]
        if lost:
            after[node.name] = crashscan.after_restart(node.mount_path, lost)
    if after:
        fault.detail["epoch_checkpoints_after_restart"] = after


class _LosesPageCache(_DownUntilStop):
    """Base of the crashes that lose the page cache: on stop, once the nodes are back
    (with ``wait``), the stop line says what became of the checkpoints the crash lost."""

    def _stop(self) -> None:
        nodes = tuple(getattr(self, "_down", []))
        super()._stop()
        if self.params["wait"]:
            record_after_restart(self, nodes)


@register
class HardReboot(_LosesPageCache):
    """Kill + ext4 shutdown (NOLOGFLUSH) + remount: unsynced data is lost."""

    name = "hard-reboot"
    summary = "kill, lose the page cache (ext4 shutdown), remount; start on stop"

    def _take_down(self, node: NodeHandle) -> None:
        lose_page_cache(self, node)


@register
class PowerLoss(_LosesPageCache):
    """Every target loses power at once (kill, lose page cache); all start on stop."""

    name = "power-loss"
    summary = "hard reboot of every target at once"
    default_target = "all"

    def _start(self) -> None:
        self._down = list(self.targets)
        errors = each(self.targets, lambda n: self.cluster.stop_node(n, hard=True))
        if errors:
            raise FaultError("power-loss: kill: " + "; ".join(errors))

        def lose(node: NodeHandle) -> None:
            hostfs.thaw(self.cluster, node)
            hostfs.shutdown(self.cluster, node)

        errors = each(self.targets, lose)
        errors += each(self.targets, lambda n: hostfs.remount(self.cluster, n))
        if errors:
            raise FaultError("power-loss: " + "; ".join(errors))
        self.detail["epoch_checkpoints"] = {}
        for node in self.targets:
            record_epoch_checkpoints(self, node)


@register
class RollingRestart(Fault):
    """Restart the targets one by one, each waited for (and, with ``wait_isr``, every ISR
    full again) before the next, ``interval_s`` apart."""

    name = "rolling-restart"
    family = "crash"
    summary = "restart nodes one after another"
    default_target = "brokers"
    params_spec = (
        Param("hard", "bool", False, "SIGKILL instead of SIGTERM"),
        Param("interval_s", "float", 5.0, "pause between two nodes", minimum=0),
        Param(
            "wait_isr",
            "bool",
            True,
            "after each node, wait (up to timeout_s) until every partition's ISR is full",
        ),
        TIMEOUT,
    )

    def _start(self) -> None:
        self._halt = threading.Event()
        self._error: BaseException | None = None
        self._codes: dict[str, int | None] = {}
        self._thread = threading.Thread(target=self._run, name=f"rolling-{self.id}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for i, node in enumerate(self.targets):
                if i and self._halt.wait(self.params["interval_s"]):
                    return
                self._codes[node.name] = self.cluster.restart_node(
                    node, hard=self.params["hard"], timeout=self.params["timeout_s"]
                )
                if self.params["wait_isr"]:
                    self.cluster.wait_isr_full(None, timeout=self.params["timeout_s"])
        except BaseException as exc:  # noqa: BLE001 - re-raised by stop
            self._error = exc

    def _stop(self) -> None:
        thread = getattr(self, "_thread", None)
        if thread is not None:
            thread.join(self.params["timeout_s"] * (len(self.targets) + 1))
            if thread.is_alive():
                raise HealError("rolling-restart: still running")
        # put in the detail only now, the thread done: the stop line carries what the
        # detail learnt after the start line, and a code recorded before that line was
        # written would go into it while the later ones would be left out of both
        if getattr(self, "_codes", None):
            self.detail["exit_codes"] = dict(self._codes)
        if getattr(self, "_error", None) is not None:
            raise HealError(f"rolling-restart: {self._error}") from self._error

    def abort(self) -> None:
        halt = getattr(self, "_halt", None)
        if halt is not None:
            halt.set()


@register_heal(60, "crash", "mount again the filesystem of a node left mid-reboot")
def _remount_every_node(ctx: HealContext) -> None:
    cluster = ctx.cluster
    for node in ctx.nodes:
        if not hostfs.loop_backs_image(node) or hostfs.is_healthy(cluster, node):
            continue  # torn down (nothing to mount) or fine
        if node in ctx.running:
            ok, _ = ctx.attempt(f"stop {node.name}", partial(cluster.stop_node, node, hard=True))
            if ok:
                ctx.running.remove(node)
                ctx.stopped.append(node)
        if node in ctx.stopped:
            ok, _ = ctx.attempt(f"remount {node.name}", partial(hostfs.remount, cluster, node))
            if ok and hostfs.is_healthy(cluster, node):
                ctx.done.append(f"remounted the filesystem of {node.name} (left mid-reboot)")


@register_heal(70, "crash", "start every stopped node, then wait until the cluster is ready")
def _start_every_stopped_node(ctx: HealContext) -> None:
    if not (ctx.restart_stopped and ctx.stopped):
        return
    for node in ctx.stopped:
        ok, _ = ctx.attempt(f"start {node.name}", partial(ctx.cluster.start_node, node, wait=False))
        if ok:
            ctx.done.append(f"started stopped node {node.name}")
    if ctx.wait_ready:
        t0 = time.monotonic()
        ok, _ = ctx.attempt("wait_ready", lambda: ctx.cluster.wait_ready(timeout=ctx.timeout))
        if ok:
            ctx.done.append(f"cluster ready after {time.monotonic() - t0:.1f}s")
