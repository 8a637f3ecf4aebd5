"""heal_everything: repair every fault family on every node, with no memory of what ran.

It looks at the cluster as it is and undoes whatever kchaos can have left. Each fault
family registers its own stateless heal (:func:`register_heal`, in the family's module)
at a position in one ordered list, which heal_everything walks. The order cannot deadlock
(a frozen filesystem blocks its writers, even ``docker stop``):

    order  family     heal
    0      (core)     stop this process's own duty cycles (they would re-apply a fault)
    5      client     SIGCONT the client processes a fault stopped (the pids recorded
                      under the run's state directory by harness.cluster.clientpids)
    10     disk       thaw every node's filesystem (FITHAW; EINVAL: it was not frozen)
    20     pause      unpause frozen containers, SIGCONT stopped JVMs (process state T,
                      read on the host from /proc)
    25     (core)     sort the nodes into running and stopped
    30     network    Toxiproxy ``POST /reset``: no toxics, every proxy enabled (this also
                      heals the partition family's client-cut)
    40     partition  remove every ``KCHAOS*`` iptables chain in every running node's
                      network namespace (the host's iptables, entered with nsenter)
    45     disk       remove every blkio throttle from each node container's group
                      (``slow-sync``; a stopped container has no group, a started one
                      gets a new group without throttles)
    50     disk       delete disk-fill files
    60     crash      a node left mid-reboot: its container stopped, its unmounted or
                      shut-down filesystem mounted again
    70     crash      start every stopped node again (``restart_stopped``), then wait
                      until the cluster is ready (``wait_ready``)

A heal records what it did in ``HealContext.done`` and what failed, through
``HealContext.attempt``, in ``HealContext.errors``; one failure never stops the others.
heal_everything returns one line per thing done (failures prefixed ``error:``); with
``strict=True`` failures raise :class:`HealError` after everything else was tried.
tests/unit/faults/test_heal_registry.py checks that the registered order is this table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kchaos.faults.base import abort_all, forget_healed, registry
from kchaos.harness.cluster.api import ClusterHandle, NodeHandle
from kchaos.harness.errors import HealError


@dataclass
class HealContext:
    """What the heals of one heal_everything share: the cluster, its nodes (sorted by
    id), which of them run, and what was done or failed so far."""

    cluster: ClusterHandle
    nodes: list[NodeHandle]
    restart_stopped: bool = True
    wait_ready: bool = False
    timeout: float = 120.0
    running: list[NodeHandle] = field(default_factory=list)
    stopped: list[NodeHandle] = field(default_factory=list)
    done: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def attempt(self, what: str, fn: Callable[[], Any]) -> tuple[bool, Any]:
        """(True, fn()) or, when it raised, (False, None) with the error recorded."""
        try:
            return True, fn()
        except Exception as exc:  # noqa: BLE001 - keep healing the rest
            self.errors.append(f"{what}: {exc}")
            return False, None

    def state(self, node: NodeHandle) -> str | None:
        """State letter of the node's JVM, read on the host; None when the container is
        paused or stopped (or cannot be looked at)."""
        try:
            return self.cluster.jvm_state(node)
        except Exception:  # noqa: BLE001 - container gone: treated as stopped
            return None


HealFn = Callable[[HealContext], None]


@dataclass(frozen=True)
class Heal:
    """One registered heal: where it runs in the order, whose it is, what it does."""

    order: int
    family: str  # a fault family, or "core" for heal_everything's own steps
    what: str
    run: HealFn


_HEALS: dict[int, Heal] = {}


def register_heal(order: int, family: str, what: str) -> Callable[[HealFn], HealFn]:
    """Decorator: run this heal at ``order`` in every heal_everything (one heal a place)."""

    def add(fn: HealFn) -> HealFn:
        known = _HEALS.get(order)
        if known is not None and (known.family, known.what) != (family, what):
            raise ValueError(f"heal order {order} is taken by {known.family}: {known.what}")
        _HEALS[order] = Heal(order, family, what, fn)
        return fn

    return add


def heals() -> list[Heal]:
    """Every registered heal, in the order heal_everything runs them."""
    registry()  # imports every family's module, which registers its heals
    return [_HEALS[order] for order in sorted(_HEALS)]


@register_heal(0, "core", "stop this process's duty cycles")
def _stop_duty_cycles(ctx: HealContext) -> None:
    abort_all()


@register_heal(25, "core", "sort the nodes into running and stopped")
def _sort_nodes(ctx: HealContext) -> None:
    for node in ctx.nodes:
        (ctx.stopped if ctx.state(node) is None else ctx.running).append(node)


def heal_everything(
    cluster: ClusterHandle,
    *,
    restart_stopped: bool = True,
    wait_ready: bool = False,
    timeout: float = 120.0,
    strict: bool = False,
) -> list[str]:
    ctx = HealContext(
        cluster,
        sorted(cluster.nodes, key=lambda n: n.node_id),
        restart_stopped=restart_stopped,
        wait_ready=wait_ready,
        timeout=timeout,
    )
    for heal in heals():
        heal.run(ctx)
    if not ctx.errors and (restart_stopped or not ctx.stopped):
        # Everything kchaos can leave is undone: the faults still registered as active on
        # this cluster were undone by this heal, not by their own stop.
        forget_healed(cluster)
    done = ctx.done + [f"error: {e}" for e in ctx.errors]
    if strict and ctx.errors:
        raise HealError("heal incomplete: " + "; ".join(ctx.errors))
    return done
