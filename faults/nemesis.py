"""The Nemesis: runs a Schedule against a cluster and records every start and stop.

One runner thread waits for each fault's start time and hands the fault to a worker thread
of its own, which resolves its targets, starts it, waits for its stop time and stops it;
so a slow fault (a restart waiting for its node) never delays the next one. Faults whose
windows overlap in the schedule run at the same time.

History lines (format v1, ``f: fault``) go through the sink's ``append``:

* ``phase: start`` once the fault is in effect, with ``id``, ``fault``, ``targets`` (node
  names), ``params`` and the scheduled offset ``at`` (seconds), plus ``detail`` when the
  fault resolved more (both sides of a split, the proxies touched, ...);
* ``phase: stop`` once it is healed, with ``error`` when the stop failed and ``detail``
  when the stop found out more (disk-full: ``restarted``, the brokers Kafka had halted).

A fault that could not start gets a start line with ``error`` and, right after, its stop
line.

A step with a trigger (:mod:`kchaos.faults.trigger`) waits in its worker thread, from its ``at``,
until its condition holds; the start line then carries ``trigger`` (the condition,
``held_at`` in ns on the history's clock, ``waited_s``) and the fault stops ``for``
seconds after it started. With ``on_timeout: start`` a trigger that times out starts
the fault anyway (``trigger.timed_out`` true). Otherwise a trigger that times out (or one
still waiting when the nemesis stops) writes no line at all: nothing was started; its
record carries the error, and :meth:`Nemesis.errors` lists it for run.json.

After the last fault (or on ``stop()``), the final heal runs
:func:`kchaos.faults.heal.heal_everything` between two lines of the pseudo-fault ``heal``
(id ``heal``), the stop line carrying the ``actions`` taken. While it runs, the cluster is
registered with :mod:`kchaos.faults.safety`, so SIGINT, SIGTERM and exit heal it too.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Protocol

from kchaos.faults import safety
from kchaos.faults.base import Fault, instantiate
from kchaos.faults.heal import heal_everything
from kchaos.faults.schedule import Schedule, ScheduledFault, from_spec
from kchaos.faults.trigger import (
    ClusterState,
    HandleState,
    TriggerContext,
    wait_for,
)
from kchaos.harness.cluster.api import ClusterHandle
from kchaos.harness.errors import FaultError, TriggerTimeout
from kchaos.harness.rundir.files import jsonable

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
    trigger: dict[str, Any] | None = None  # what the start line's ``trigger`` said
    trigger_error: str | None = None  # timed out / cancelled: never started

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
        state: Callable[[ClusterHandle], ClusterState] = HandleState,
    ) -> None:
        self.cluster = cluster
        self.schedule = schedule
        self.sink = sink
        self.final_heal = final_heal
        self.wait_ready = wait_ready
        self.ready_timeout = ready_timeout
        self._protect = protect
        self._factory = factory
        self._state = state
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
            extra = {"params": jsonable(sf.spec.params), "at": round(sf.at, 6), **extra}
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

    def _clock_ns(self) -> int:
        """The history's clock when the sink has one (HistoryWriter, ListSink), else ns
        since the nemesis started."""
        own = getattr(self.sink, "elapsed_ns", None)
        if callable(own):
            return int(own())
        return time.monotonic_ns() - int(self._t0 * 1e9)

    def _await_trigger(self, sf: ScheduledFault) -> dict[str, Any] | None:
        """Wait for the step's condition; its record for the start line, or None when it
        never held (the error is on the step's record, nothing was started)."""
        assert sf.trigger is not None
        rec = self.records[sf.id]
        state = self._state(self.cluster)
        try:
            held = wait_for(
                sf.trigger,
                state,
                clock_ns=self._clock_ns,
                cancel=self._cancel,
                label=f"{sf.id} {sf.spec.fault}: ",
            )
        except TriggerTimeout as exc:
            if sf.trigger.on_timeout != "start":
                rec.trigger_error = rec.error = str(exc)
                log.warning("nemesis: %s", exc)
                return None
            log.info("nemesis: %s; starting it anyway (on_timeout: start)", exc)
            now = self.elapsed
            rec.at, rec.until = now, now + sf.duration
            rec.trigger = {
                "condition": sf.trigger.condition_spec(),
                "timed_out": True,
                "waited_s": round(sf.trigger.timeout, 3),
                "last_observed": exc.last_observed,
            }
            return rec.trigger
        except FaultError as exc:  # cancelled: the nemesis is stopping
            rec.trigger_error = rec.error = str(exc)
            log.warning("nemesis: %s", exc)
            return None
        finally:
            try:
                state.close()
            except Exception:  # noqa: BLE001 - a client that will not close is harmless
                log.debug("nemesis: closing the trigger's client failed", exc_info=True)
        now = self.elapsed
        rec.at, rec.until = now, now + sf.duration  # lateness counts from the hold
        rec.trigger = held.record(sf.trigger)
        return rec.trigger

    def _run_one(self, sf: ScheduledFault) -> None:
        rec = self.records[sf.id]
        end = sf.end
        trigger = None
        if sf.trigger is not None:
            trigger = self._await_trigger(sf)
            if trigger is None:
                return
            end = rec.until
        rec.start_began = self.elapsed
        fault: Fault | None = None
        try:
            fault = self._factory(self.cluster, sf.spec)
            rec.targets = fault.target_names
            fault.start()
        except Exception as exc:  # noqa: BLE001 - recorded, the run goes on
            rec.error = str(exc)
            rec.start_done = self.elapsed  # no stop to be late for: stop_began stays None
            self._line("start", sf, rec.targets, error=rec.error, trigger=trigger)
            rec.stop_done = self.elapsed
            self._line("stop", sf, rec.targets)
            log.warning("nemesis: %s %s failed to start: %s", sf.id, sf.spec.fault, exc)
            return
        rec.start_done = self.elapsed
        self._line("start", sf, rec.targets, detail=jsonable(fault.detail), trigger=trigger)
        at_start = set(fault.detail)
        self._sleep_until(end)
        rec.stop_began = self.elapsed
        try:
            fault.stop()
        except Exception as exc:  # noqa: BLE001 - the final heal follows
            rec.heal_error = str(exc)
            log.warning("nemesis: %s %s failed to stop: %s", sf.id, sf.spec.fault, exc)
        rec.stop_done = self.elapsed
        # what the stop itself found out (disk-full: the brokers Kafka halted it restarted)
        learnt = {k: v for k, v in fault.detail.items() if k not in at_start}
        self._line("stop", sf, rec.targets, error=rec.heal_error, detail=jsonable(learnt))

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

    def errors(self) -> list[dict[str, Any]]:
        """Every fault that failed to start, timed out waiting for its trigger, or failed
        to heal, plus a failed final heal: for run.json (``nemesis_errors``)."""
        out: list[dict[str, Any]] = []
        for rec in self.records.values():
            if rec.trigger_error is not None:
                out.append(
                    {
                        "id": rec.id,
                        "fault": rec.fault,
                        "phase": "trigger",
                        "error": rec.trigger_error,
                    }
                )
            elif rec.error is not None:
                out.append({"id": rec.id, "fault": rec.fault, "phase": "start", "error": rec.error})
            if rec.heal_error is not None:
                out.append(
                    {"id": rec.id, "fault": rec.fault, "phase": "stop", "error": rec.heal_error}
                )
        if self.heal_error is not None:
            out.append({"id": "heal", "fault": "heal", "phase": "stop", "error": self.heal_error})
        return out

    def lateness(self) -> list[float]:
        """Seconds each start and stop began after its scheduled time."""
        out = []
        for rec in self.records.values():
            out += [x for x in (rec.start_late, rec.stop_late) if x is not None]
        return out


def build_nemesis(
    cluster: ClusterHandle,
    spec: Mapping[str, Any],
    sink: Sink,
    *,
    seed: int | str | None = None,
    file: str | None = None,
    context: TriggerContext | None = None,
    **options: Any,
) -> Nemesis:
    """A Nemesis from a schedule spec mapping (see :mod:`kchaos.faults.schedule`); triggers are
    checked against the cluster's broker ids (and ``context``'s topics, when given)."""
    from kchaos.faults.params import Where

    brokers = {n.node_id for n in cluster.brokers}
    topics = context.topics if context is not None else None
    schedule = from_spec(
        spec,
        seed=seed,
        where=Where(file=file, field="nemesis"),
        context=TriggerContext(topics=topics, brokers=brokers),
    )
    return Nemesis(cluster, schedule, sink, **options)
