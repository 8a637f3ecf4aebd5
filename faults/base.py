"""The fault interface, the registry of fault families, and the unresolved FaultSpec.

A :class:`Fault` is one concrete fault on concrete nodes: ``start()`` puts it in effect,
``stop()`` heals exactly what it did. It is also a context manager. Targets and random
choices are resolved by :func:`instantiate` at the moment the fault is about to start.

Every started fault is tracked in this process until stopped, so exit paths (signal
handlers, atexit, the nemesis's final heal) can stop background duty cycles before
:func:`kchaos.faults.heal.heal_everything` repairs the cluster without relying on that memory.
"""

from __future__ import annotations

import contextlib
import random
import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, ClassVar

from kchaos.faults.params import Param, Where, validate_params
from kchaos.faults.targets import parse_target, resolve
from kchaos.harness.cluster.api import ClusterHandle, NodeHandle, Topology
from kchaos.harness.errors import FaultError

_REGISTRY: dict[str, type[Fault]] = {}
_ACTIVE: set[Fault] = set()
_ACTIVE_LOCK = threading.Lock()
_EXITING = threading.Event()  # set on the exit path: no fault may start after the heal


class Fault(ABC):
    """One fault on resolved targets. Subclasses implement ``_start`` and ``_stop``."""

    name: ClassVar[str]
    family: ClassVar[str]
    summary: ClassVar[str] = ""
    params_spec: ClassVar[tuple[Param, ...]] = ()
    # "none": the fault acts on the cluster as a whole and takes no target (any other
    # target spec is refused by fault_spec).
    default_target: ClassVar[str] = "random"
    min_targets: ClassVar[int] = 1
    # True: the fault acts on a client process and its one target is ``client:KIND:KEY``
    # (given to it as ``client``); False: a ``client:`` target is refused.
    takes_client: ClassVar[bool] = False

    def __init__(
        self,
        cluster: ClusterHandle,
        targets: Sequence[NodeHandle],
        params: Mapping[str, Any],
        *,
        fault_id: str = "f-0",
        rng: random.Random | None = None,
        client: str | None = None,
    ) -> None:
        if len(targets) < self.min_targets:
            raise FaultError(f"{self.name}: needs at least {self.min_targets} target node(s)")
        self.cluster = cluster
        self.targets = tuple(targets)
        self.params = dict(params)
        self.id = fault_id
        self.rng = rng or random.Random(0)
        self.client = client  # "txn:ID" of a client target (takes_client faults)
        # Resolved details worth recording in the history (e.g. both sides of a split).
        self.detail: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._started = False

    @property
    def target_names(self) -> list[str]:
        return [n.name for n in self.targets]

    @property
    def active(self) -> bool:
        return self._started

    def start(self) -> None:
        with self._lock:
            if self._started:
                return
            if _EXITING.is_set():
                raise FaultError(f"{self.name} {self.id}: the process is exiting, not started")
            with _ACTIVE_LOCK:
                _ACTIVE.add(self)
            try:
                self._start()
            except BaseException as exc:
                # Undo whatever part took effect, then report the start as failed.
                try:
                    self._stop()
                except Exception as undo:  # noqa: BLE001 - the start error matters more
                    exc.add_note(f"undoing the partial start failed too: {undo}")
                finally:
                    with _ACTIVE_LOCK:
                        _ACTIVE.discard(self)
                raise
            self._started = True

    def stop(self) -> None:
        with self._lock:
            if not self._started:
                return
            try:
                self._stop()
            finally:
                self._started = False
                with _ACTIVE_LOCK:
                    _ACTIVE.discard(self)

    def abort(self) -> None:  # noqa: B027 - optional hook, most faults have no thread
        """Stop background threads (duty cycles) at once, without healing; cheap, no I/O."""

    @abstractmethod
    def _start(self) -> None: ...

    @abstractmethod
    def _stop(self) -> None: ...

    def __enter__(self) -> Fault:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<{self.name} {self.id} on {','.join(self.target_names)}>"


def register(cls: type[Fault]) -> type[Fault]:
    """Class decorator: make a fault family available by its ``name``."""
    if cls.name in _REGISTRY and _REGISTRY[cls.name] is not cls:
        raise ValueError(f"fault name {cls.name!r} registered twice")
    _REGISTRY[cls.name] = cls
    return cls


def registry() -> dict[str, type[Fault]]:
    """Every fault by name (importing a family's module registers its faults)."""
    from kchaos.faults import (  # noqa: F401
        controller_hold,
        crash,
        disk,
        leadership,
        network,
        partition,
        pause,
        request_hold,
        zombie,
    )

    return dict(_REGISTRY)


def fault_class(name: str, where: Where | None = None) -> type[Fault]:
    reg = registry()
    if name not in reg:
        where = where or Where(field="fault")
        raise where.error(f"unknown fault {name!r}; known: {', '.join(sorted(reg))}")
    return reg[name]


def active_faults() -> list[Fault]:
    with _ACTIVE_LOCK:
        return list(_ACTIVE)


def forget_healed(cluster: Topology) -> list[Fault]:
    """After a stateless heal that undid everything on ``cluster``, its faults are no
    longer in effect: mark them stopped (a later ``stop()`` is then a no-op) and drop them
    from the active set, so progress lines and exit heals stop listing them. Returns them."""
    with _ACTIVE_LOCK:
        healed = [f for f in _ACTIVE if f.cluster.run_id == cluster.run_id]
        _ACTIVE.difference_update(healed)
    for f in healed:
        f._started = False
    return healed


def refuse_new_faults() -> None:
    """Called on the exit path (signal, atexit): later ``start()`` calls fail at once, so
    no worker thread can put a fault back after the exit heal."""
    _EXITING.set()


def exiting() -> bool:
    """True once the exit path refused new faults (a fault's long start may give up)."""
    return _EXITING.is_set()


def abort_all() -> None:
    """Stop every in-process duty cycle (before a stateless heal)."""
    for f in active_faults():
        with contextlib.suppress(Exception):  # an exit path must go on
            f.abort()


@dataclass(frozen=True)
class FaultSpec:
    """A fault by name with validated params and an unresolved target spec."""

    fault: str
    target: str
    params: Mapping[str, Any] = field(default_factory=dict, hash=False)
    id: str = "f-0"
    seed: int | str = 0

    def rng(self) -> random.Random:
        """The fault's own RNG: same seed and id, same draws."""
        return random.Random(f"{self.seed}/{self.id}")


NO_TARGET = "none"


def takes_no_target(fault: str) -> bool:
    """True for a registered fault that acts on the cluster as a whole (its only target
    spec is ``none``); False for any other name, unknown ones included."""
    cls = registry().get(fault)
    return cls is not None and cls.default_target == NO_TARGET


def fault_spec(
    fault: str,
    target: str | int | None = None,
    params: Mapping[str, Any] | None = None,
    *,
    id: str = "f-0",
    seed: int | str = 0,
    where: Where | None = None,
) -> FaultSpec:
    """Validate a fault's name, target and params; ConfigError names the bad field."""
    where = where or Where()
    if not isinstance(fault, str):
        raise where.child("fault").error(f"must be a fault name, got {fault!r}")
    cls = fault_class(fault, where.child("fault"))
    if target is None and cls.takes_client:
        raise where.child("target").error(
            f"{fault} acts on a client process: give a target {cls.default_target}"
        )
    target_text = cls.default_target if target is None else str(target)
    parsed = parse_target(target_text, where.child("target"))
    if cls.takes_client and parsed.kind != "client":
        raise where.child("target").error(
            f"{fault} acts on a client process: its target is {cls.default_target}, "
            f"got {target_text!r}"
        )
    if parsed.kind == "client" and not cls.takes_client:
        raise where.child("target").error(
            f"{fault} acts on nodes, not on a client process: got {target_text!r} "
            "(the faults aimed at a transactional client are zombie and hold-request)"
        )
    if cls.default_target == NO_TARGET and parsed.kind != NO_TARGET:
        raise where.child("target").error(
            f"{fault} takes no target (it acts on the cluster as a whole): write `none` "
            f"or leave the target out, got {target_text!r}"
        )
    checked = validate_params(cls.params_spec, params, where.child("params"))
    return FaultSpec(fault, target_text, checked, id=id, seed=seed)


def instantiate(cluster: ClusterHandle, spec: FaultSpec) -> Fault:
    """Resolve the spec's targets against the cluster as it is now; build the fault."""
    cls = fault_class(spec.fault)
    rng = spec.rng()
    parsed = parse_target(spec.target)
    targets = resolve(cluster, parsed, rng)
    client = parsed.key if parsed.kind == "client" else None
    return cls(cluster, targets, spec.params, fault_id=spec.id, rng=rng, client=client)


def make_fault(
    cluster: ClusterHandle,
    fault: str,
    target: str | int | None = None,
    *,
    id: str = "f-0",
    seed: int | str = 0,
    **params: Any,
) -> Fault:
    """Convenience for tests and scripts: ``make_fault(c, "pause", "broker-2", mode="freezer")``."""
    return instantiate(cluster, fault_spec(fault, target, params, id=id, seed=seed))


def checked(name: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """Validate params for a family (raising ConfigError) without a target."""
    return validate_params(fault_class(name).params_spec, params, Where(field="params"))
