"""kchaos faults: the nemesis.

Public API::

    from kchaos.faults import make_fault, heal_everything, build_nemesis, from_spec, Nemesis

    with make_fault(cluster, "pause", "leader:t:0", mode="freezer"):
        ...                                    # the fault is in effect in the block

    nemesis = build_nemesis(cluster, {"type": "random", "seed": 7, ...}, history_writer)
    with nemesis:                               # start(); on exit stop() + final heal
        nemesis.wait()

    heal_everything(cluster)                    # stateless: heals whatever is left

Families, their params and target specs: docs/faults.md, ``kchaos.faults.registry()``.
"""

from __future__ import annotations

from kchaos.faults.base import (
    Fault,
    FaultSpec,
    abort_all,
    active_faults,
    fault_spec,
    instantiate,
    make_fault,
    registry,
)
from kchaos.faults.heal import heal_everything
from kchaos.faults.nemesis import FaultRecord, Nemesis, build_nemesis
from kchaos.faults.safety import protect, protected, unprotect
from kchaos.faults.schedule import Schedule, ScheduledFault, from_spec, scripted
from kchaos.faults.schema import nemesis_schema
from kchaos.faults.targets import TargetSpec, parse_target, resolve

__all__ = [
    "Fault",
    "FaultRecord",
    "FaultSpec",
    "Nemesis",
    "Schedule",
    "ScheduledFault",
    "TargetSpec",
    "abort_all",
    "active_faults",
    "build_nemesis",
    "fault_spec",
    "from_spec",
    "heal_everything",
    "instantiate",
    "make_fault",
    "nemesis_schema",
    "parse_target",
    "protect",
    "protected",
    "registry",
    "resolve",
    "scripted",
    "unprotect",
]
