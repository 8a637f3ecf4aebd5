"""Process pauses, GC-pause style: SIGSTOP/SIGCONT of the broker JVM, or the cgroup
freezer (``docker pause``) of the whole container.

``pause`` params:

* ``mode``: ``sigstop`` (the JVM is stopped by a signal the host sends to its pid; the
  kernel still answers TCP handshakes and buffers data for it) or ``freezer`` (every
  process of the container frozen by the cgroup freezer). Neither needs anything inside
  the image.
* ``pause_s``: 0 (default) pauses for the whole fault; > 0 repeats a duty cycle of
  ``pause_s`` paused then ``run_s`` running until the fault stops.
* ``run_s``: running time between pauses in a duty cycle.
"""

from __future__ import annotations

from functools import partial

from kchaos.faults.base import Fault, register
from kchaos.faults.cycle import DutyCycle, apply_each, release_each
from kchaos.faults.heal import HealContext, register_heal
from kchaos.faults.params import Param
from kchaos.harness.cluster.api import NodeHandle


@register
class Pause(Fault):
    """Pause the targets (one-shot or a duty cycle)."""

    name = "pause"
    family = "pause"
    summary = "SIGSTOP or cgroup-freezer pause, one-shot or duty cycle"
    default_target = "random"
    params_spec = (
        Param("mode", "str", "sigstop", "how to pause", choices=("sigstop", "freezer")),
        Param("pause_s", "float", 0.0, "0 = pause for the whole fault; else cycle", minimum=0),
        Param("run_s", "float", 1.0, "running time between cycled pauses", minimum=0.01),
    )

    def _pause(self, node: NodeHandle) -> None:
        if self.params["mode"] == "freezer":
            self.cluster.pause(node)
        else:
            self.cluster.signal(node, "STOP")

    def _resume(self, node: NodeHandle) -> None:
        if self.params["mode"] == "freezer":
            self.cluster.unpause(node)
        else:
            self.cluster.signal(node, "CONT")

    def _pause_all(self) -> None:
        apply_each(self.targets, self._paused, self._pause)

    def _resume_all(self) -> None:
        release_each(self.targets, self._paused, self._resume, "resume")

    def _start(self) -> None:
        self._paused: set[int] = set()
        self._cycle: DutyCycle | None = None
        if self.params["pause_s"] > 0:
            self._cycle = DutyCycle(
                self._pause_all,
                self._resume_all,
                self.params["pause_s"],
                self.params["run_s"],
                name=f"pause-{self.id}",
            )
            self._cycle.start()
        else:
            self._pause_all()

    def _stop(self) -> None:
        if getattr(self, "_cycle", None) is not None:
            self._cycle.stop()  # type: ignore[union-attr]
        self._resume_all()

    def abort(self) -> None:
        if getattr(self, "_cycle", None) is not None:
            self._cycle.abort()  # type: ignore[union-attr]


@register_heal(20, "pause", "unpause frozen containers, SIGCONT stopped JVMs")
def _resume_every_node(ctx: HealContext) -> None:
    for node in ctx.nodes:
        state = ctx.state(node)
        if state is None:
            # Paused (cgroup freezer) or stopped: try unpausing, then look again.
            try:
                ctx.cluster.unpause(node)
            except Exception:  # noqa: BLE001 - not paused: not an error
                continue
            state = ctx.state(node)
            if state is not None:
                ctx.done.append(f"unpaused container of {node.name}")
        if state in ("T", "t"):
            ok, _ = ctx.attempt(f"SIGCONT {node.name}", partial(ctx.cluster.signal, node, "CONT"))
            if ok:
                ctx.done.append(f"sent SIGCONT to the stopped JVM of {node.name}")
