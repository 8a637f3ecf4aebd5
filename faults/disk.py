"""Disk faults on each node's own ext4 filesystem (host mount at ``NodeHandle.mount_path``).

``disk-stall``  fsfreeze for the whole fault: every write (and fsync) of the broker blocks
                in uninterruptible sleep until the thaw. No params.
``slow-disk``   a freeze/thaw duty cycle: frozen ``freeze_ms``, thawed ``thaw_ms``, repeated.
``disk-full``   a labelled file (``kchaos-diskfill-<id>``) fills the filesystem, leaving
                ``leave_mb`` free (``max_mb`` caps it; 0 = no cap); deleted on stop. Kafka
                halts a broker whose only log dir failed on ENOSPC; the stop starts such a
                broker again (its log says why it halted), so the fault ends healed.
``slow-sync``   the node's container may submit only ``write_iops`` writes (and, with
                ``write_bps`` > 0, that many bytes) a second to its data device: a
                throttle in its cgroup-v1 blkio group. Buffered writes stay fast (the
                kernel writes them back from outside the group); every fsync the broker
                makes waits for the throttle. Stop removes the container's throttles.

A frozen filesystem makes its writers unkillable: every exit path thaws first.
"""

from __future__ import annotations

from functools import partial

from kchaos.faults import hostfs
from kchaos.faults.base import Fault, register
from kchaos.faults.cycle import DutyCycle, apply_each, release_each
from kchaos.faults.heal import HealContext, register_heal
from kchaos.faults.params import Param
from kchaos.harness.cluster.api import NodeHandle
from kchaos.harness.errors import HealError

# What LogManager logs (FATAL) just before it halts the JVM when the last live log dir
# failed, in every release kchaos supports: "Shutdown broker because all log dirs in
# /var/lib/kafka/data have failed" (measured on 4.4.0 in test_fault_effects).
HALT_MARKER = "Shutdown broker because all log dirs in"
LOG_TAIL = 300
START_TIMEOUT_S = 90.0


class _FreezeBase(Fault):
    family = "disk"
    default_target = "random"
    _frozen: set[int]

    def _freeze_all(self) -> None:
        apply_each(self.targets, self._frozen, partial(hostfs.freeze, self.cluster))

    def _thaw_all(self) -> None:
        release_each(self.targets, self._frozen, partial(hostfs.thaw, self.cluster), "thaw")


@register
class DiskStall(_FreezeBase):
    """Freeze the targets' filesystems for the whole fault."""

    name = "disk-stall"
    summary = "fsfreeze for the fault's duration"

    def _start(self) -> None:
        self._frozen: set[int] = set()
        self._freeze_all()

    def _stop(self) -> None:
        self._thaw_all()


@register
class SlowDisk(_FreezeBase):
    """Freeze/thaw duty cycle: the disk works in bursts."""

    name = "slow-disk"
    summary = "freeze/thaw duty cycle"
    params_spec = (
        Param("freeze_ms", "int", 200, "frozen time per cycle, ms", minimum=1),
        Param("thaw_ms", "int", 200, "thawed time per cycle, ms", minimum=1),
    )

    def _start(self) -> None:
        self._frozen: set[int] = set()
        self._cycle = DutyCycle(
            self._freeze_all,
            self._thaw_all,
            self.params["freeze_ms"] / 1000,
            self.params["thaw_ms"] / 1000,
            name=f"slow-disk-{self.id}",
        )
        self._cycle.start()

    def _stop(self) -> None:
        try:
            self._cycle.stop()
        finally:
            self._thaw_all()

    def abort(self) -> None:
        cycle = getattr(self, "_cycle", None)
        if cycle is not None:
            cycle.abort()


@register
class DiskFull(Fault):
    """Fill the targets' filesystems with a labelled file; delete it on stop."""

    name = "disk-full"
    family = "disk"
    summary = "filesystem filled by a labelled file"
    default_target = "random"
    params_spec = (
        Param("leave_mb", "float", 0.0, "space left free, MiB", minimum=0),
        Param("max_mb", "float", 0.0, "largest fill file, MiB (0 = no cap)", minimum=0),
    )

    def _start(self) -> None:
        self._filled: list[int] = []
        sizes = {}
        for node in self.targets:
            self._filled.append(node.node_id)
            sizes[node.name] = hostfs.fill(
                node,
                self.id,
                int(self.params["leave_mb"] * 2**20),
                int(self.params["max_mb"] * 2**20),
            )
        self.detail["fill_bytes"] = sizes

    def _stop(self) -> None:
        restarted = []
        for node in self.targets:
            if node.node_id not in getattr(self, "_filled", []):
                continue
            hostfs.unfill(self.cluster, node, self.id)
            if self._halted_by_full_disk(node):
                try:
                    self.cluster.start_node(node, wait=True, timeout=START_TIMEOUT_S)
                except Exception as exc:
                    raise HealError(f"disk-full: start {node.name}: {exc}") from exc
                restarted.append(node.name)
        if restarted:
            self.detail["restarted"] = restarted

    def _halted_by_full_disk(self, node: NodeHandle) -> bool:
        """The broker's container is down and its log since it last started says Kafka
        halted it because its log dirs failed (not another fault's kill, which that fault
        restarts, after an earlier halt and restart)."""
        if self.cluster.jvm_state(node) is not None:
            return False  # running (or SIGSTOPped): not halted
        try:
            tail = self.cluster.logs(node, tail=LOG_TAIL, last_start=True)
        except Exception:  # noqa: BLE001 - no log: leave the node to the final heal
            return False
        return HALT_MARKER in tail


@register
class SlowSync(Fault):
    """Throttle the writes the targets' containers submit to their data devices."""

    name = "slow-sync"
    family = "disk"
    summary = "fsync slow, buffered writes fast (blkio write throttle)"
    default_target = "random"
    params_spec = (
        Param(
            "write_iops",
            "int",
            1,
            "writes a second the container may submit to its data device",
            minimum=1,
        ),
        Param("write_bps", "int", 0, "bytes a second it may write there, 0 = no limit", minimum=0),
    )

    def _start(self) -> None:
        self._throttled: set[int] = set()
        lines: dict[str, list[str]] = {}

        def apply(node: NodeHandle) -> None:
            lines[node.name] = hostfs.throttle(
                self.cluster, node, self.params["write_iops"], self.params["write_bps"]
            )

        apply_each(self.targets, self._throttled, apply)
        self.detail["throttles"] = lines

    def _stop(self) -> None:
        release_each(
            self.targets,
            getattr(self, "_throttled", set()),
            partial(hostfs.unthrottle, self.cluster),
            "remove write throttle",
        )


@register_heal(10, "disk", "thaw every frozen filesystem")
def _thaw_every_node(ctx: HealContext) -> None:
    for node in ctx.nodes:
        ok, thawed = ctx.attempt(f"thaw {node.name}", partial(hostfs.thaw, ctx.cluster, node))
        if ok and thawed:
            ctx.done.append(f"thawed filesystem of {node.name} ({node.mount_path})")


@register_heal(45, "disk", "remove blkio write throttles")
def _unthrottle_every_node(ctx: HealContext) -> None:
    for node in ctx.nodes:
        ok, removed = ctx.attempt(
            f"unthrottle {node.name}", partial(hostfs.unthrottle, ctx.cluster, node)
        )
        ctx.done.extend(f"removed {line} from {node.name}'s blkio group" for line in removed or [])


@register_heal(50, "disk", "delete disk-fill files")
def _unfill_every_node(ctx: HealContext) -> None:
    for node in ctx.nodes:
        ok, removed = ctx.attempt(f"unfill {node.name}", partial(hostfs.unfill, ctx.cluster, node))
        ctx.done.extend(f"deleted disk-fill file {path}" for path in removed or [])
