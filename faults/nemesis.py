"""The Nemesis: runs a Schedule against a cluster and records every start and stop.

One runner thread waits for each fault's start time and hands the fault to a worker thread
of its own, which resolves its targets, starts it, waits for its stop time and stops it;
so a slow fault (a restart waiting for its node) never delays the next one. Faults whose
windows overlap in the schedule run at the same time.

History lines (format v1, ``f: fault``) go through the sink's ``append``:

* ``phase: start`` once the fault is in effect, with ``id``, ``fault``, ``targets`` (node
  names), ``params`` and the scheduled offset ``at`` (seconds), plus ``detail`` when the
  fault resolved more (both sides of a split, the proxies touched, ...);
* ``phase: stop`` once it is healed.

A fault that could not start gets a start line with ``error`` and, right after, its stop
line. After the last fault (or on ``stop()``), the final heal runs
:func:`faults.heal.heal_everything` between two lines of the pseudo-fault ``heal``
(id ``heal``), the stop line carrying the ``actions`` taken. While it runs, the cluster is
registered with :mod:`faults.safety`, so SIGINT, SIGTERM and exit heal it too.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Protocol

from faults import safety
from faults.base import Fault, instantiate
from faults.heal import heal_everything
from faults.schedule import Schedule, ScheduledFault, from_spec
from harness.cluster.api import ClusterHandle

log = logging.getLogger(__name__)


class Sink(Protocol):
    def append(self, event: dict[str, Any]) -> object: ...


@dataclass
class FaultRecord:
    """What happened to one scheduled fault; times in seconds since the nemesis started."""

    id: str
    fault: str
    at: float
    until: float
    targets: list[str] = field(default_factory=list)
    start_began: float | None = None
    start_done: float | None = None
    stop_began: float | None = None
    stop_done: float | None = None
    error: str | None = None
    heal_error: str | None = None

    @property
    def start_late(self) -> float | None:
        return None if self.start_began is None else self.start_began - self.at

    @property
    def stop_late(self) -> float | None:
        return None if self.stop_began is None else self.stop_began - self.until


class Nemesis:
    def __init__(
        self,
        cluster: ClusterHandle,
        schedule: Schedule,
        sink: Sink,
        *,
        final_heal: bool = True,
        wait_ready: bool = False,
        ready_timeout: float = 120.0,
        protect: bool = True,
        factory: Callable[[ClusterHandle, Any], Fault] = instantiate,
    ) -> None:
        self.cluster = cluster
        self.schedule = schedule
        self.sink = sink
        self.final_heal = final_heal
        self.wait_ready = wait_ready
        self.ready_timeout = ready_timeout
        self._protect = protect
        self._factory = factory
        self._cancel = threading.Event()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="nemesis", daemon=True)
        self._workers: list[threading.Thread] = []
        self._t0 = 0.0
        self.records: dict[str, FaultRecord] = {
            f.id: FaultRecord(f.id, f.spec.fault, f.at, f.end) for f in schedule.faults
        }
        self.heal_actions: list[str] = []
        self.heal_error: str | None = None

    # --- control ---------------------------------------------------------------------

    def start(self) -> Nemesis:
        if self._protect:
            safety.protect(self.cluster)
        self._t0 = time.monotonic()
        self._thread.start()
        return self

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the schedule has run and the final heal is done."""
        return self._done.wait(timeout)

    def stop(self, timeout: float = 300.0) -> None:
        """Cancel what has not started, stop what is active, heal; wait for all of it."""
        self._cancel.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def run(self) -> None:
        """Start and block until done (stopping early on KeyboardInterrupt)."""
        self.start()
        try:
            while not self.wait(0.5):
                pass
        finally:
            self.stop()

    def __enter__(self) -> Nemesis:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self._t0

    # --- the threads -----------------------------------------------------------------

    def _sleep_until(self, offset: float) -> bool:
        """Sleep until ``offset`` s after start; True when cancelled first."""
        delay = self._t0 + offset - time.monotonic()
        if delay <= 0:
            return self._cancel.is_set()
        return self._cancel.wait(delay)

    def _run(self) -> None:
        try:
            for sf in self.schedule.faults:
                if self._sleep_until(sf.at):
                    break
                worker = threading.Thread(
                    target=self._run_one, args=(sf,), name=f"nemesis-{sf.id}", daemon=True
                )
                self._workers.append(worker)
                worker.start()
            for worker in self._workers:
                worker.join()
        finally:
            try:
                if self.final_heal:
                    self._heal()
            finally:
                if self._protect:
                    safety.unprotect(self.cluster)
                self._done.set()

    def _line(self, phase: str, sf: ScheduledFault, targets: list[str], **extra: Any) -> None:
        if phase == "start":
            extra = {"params": _jsonable(sf.spec.params), "at": round(sf.at, 6), **extra}
        self._emit(phase, sf.id, sf.spec.fault, targets, extra)

    def _emit(
        self, phase: str, fid: str, fault: str, targets: list[str], extra: dict[str, Any]
    ) -> None:
        event: dict[str, Any] = {
            "process": "nemesis",
            "type": "info",
            "f": "fault",
            "phase": phase,
            "id": fid,
            "fault": fault,
            "targets": targets,
        }
        event.update({k: v for k, v in extra.items() if v is not None and v != {}})
        try:
            self.sink.append(event)
        except Exception as exc:  # noqa: BLE001 - a broken sink must not leave faults on
            log.error("nemesis: history append failed: %s", exc)

    def _run_one(self, sf: ScheduledFault) -> None:
        rec = self.records[sf.id]
        rec.start_began = self.elapsed
        fault: Fault | None = None
        try:
            fault = self._factory(self.cluster, sf.spec)
            rec.targets = fault.target_names
            fault.start()
        except Exception as exc:  # noqa: BLE001 - recorded, the run goes on
            rec.error = str(exc)
            rec.start_done = self.elapsed  # no stop to be late for: stop_began stays None
            self._line("start", sf, rec.targets, error=rec.error)
            rec.stop_done = self.elapsed
            self._line("stop", sf, rec.targets)
            log.warning("nemesis: %s %s failed to start: %s", sf.id, sf.spec.fault, exc)
            return
        rec.start_done = self.elapsed
        self._line("start", sf, rec.targets, detail=_jsonable(fault.detail))
        self._sleep_until(sf.end)
        rec.stop_began = self.elapsed
        try:
            fault.stop()
        except Exception as exc:  # noqa: BLE001 - the final heal follows
            rec.heal_error = str(exc)
            log.warning("nemesis: %s %s failed to stop: %s", sf.id, sf.spec.fault, exc)
        rec.stop_done = self.elapsed
        self._line("stop", sf, rec.targets, error=rec.heal_error)

    def _heal(self) -> None:
        names = [n.name for n in self.cluster.nodes]
        self._emit("start", "heal", "heal", names, {"params": {}})
        try:
            self.heal_actions = heal_everything(
                self.cluster, wait_ready=self.wait_ready, timeout=self.ready_timeout
            )
        except Exception as exc:  # noqa: BLE001
            self.heal_error = str(exc)
        extra = {"actions": self.heal_actions, "error": self.heal_error}
        self._emit("stop", "heal", "heal", names, extra)

    # --- results ---------------------------------------------------------------------

    def lateness(self) -> list[float]:
        """Seconds each start and stop began after its scheduled time."""
        out = []
        for rec in self.records.values():
            out += [x for x in (rec.start_late, rec.stop_late) if x is not None]
        return out


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_jsonable(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


def build_nemesis(
    cluster: ClusterHandle,
    spec: Mapping[str, Any],
    sink: Sink,
    *,
    seed: int | str | None = None,
    file: str | None = None,
    **options: Any,
) -> Nemesis:
    """A Nemesis from a schedule spec mapping (see :mod:`faults.schedule`)."""
    from faults.params import Where

    schedule = from_spec(spec, seed=seed, where=Where(file=file, field="nemesis"))
    return Nemesis(cluster, schedule, sink, **options)
