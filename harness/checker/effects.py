"""Did each fault bite? ``evidence.faults`` of results.json (history format 1.3, "Evidence").

A fault that started is not yet a fault that did something: a 0 ms latency toxic, a kill
whose broker never came back, a cut between nodes that exchange nothing. For every fault
of the history (each start line, the final ``heal`` aside) this module looks for that
fault's own effect in what the run kept, and says what it found, with numbers:

- ``seen``: the effect is in this run's record (``observed`` says what and where);
- ``not-seen``: it was looked for and is not there (or the fault never started);
- ``not-measured``: the run keeps nothing that shows this family's effect (or lacks the
  file the measure reads: no controller.jsonl, no node logs).

:data:`MEASURES` maps every fault family of :func:`kchaos.faults.registry` to its measure;
docs/checker.md ("Did the faults bite") has the table. Every measure is built so that a
fault aimed where it cannot bite comes out ``not-seen``: a latency is seen only when the
sends' acknowledgements slowed by at least half the configured latency; a crash only when
the broker registered again with a new epoch; a partition only when an ISR lost a
member, or a broker its session, among the nodes the cut separated, or (where it separates
controllers) the metadata quorum moved.
"""

from __future__ import annotations

import re
import statistics
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from kchaos.harness.checker.controller import ControllerRecord, Shrink
from kchaos.harness.checker.facts import OK, Facts, Fault
from kchaos.harness.checker.flushtimes import FlushSample, read_flush_times
from kchaos.harness.checker.quorumlog import ELECTING, LEADER, QuorumChange, quorum_changes
from kchaos.harness.checker.recovery import node_ids
from kchaos.harness.rundir.names import BROKER_METRICS_JSONL, CONTROLLER_JSONL, RUN_JSON
from kchaos.harness.rundir.nodelogs import entry_unix_ms, history_time_ns, timed_node_logs
from kchaos.harness.rundir.rundir import RunDir

EffectState = Literal["seen", "not-seen", "not-measured"]
SEEN: EffectState = "seen"
NOT_SEEN: EffectState = "not-seen"
NOT_MEASURED: EffectState = "not-measured"

#: Fault names that are not faults: the nemesis's final heal.
NOT_FAULTS = frozenset({"heal"})
#: How long after a fault's stop line an effect it caused may still be committed (an ISR
#: shrink the leader sent just before the heal, the controller's record of a fencing).
SETTLE_NS = 5_000_000_000
#: How long before its start line a leadership fault's effect may be committed: the
#: election (and a reassignment, waited for) happens inside the fault's start, before
#: the line is written.
LEADERSHIP_LOOKBACK_NS = 60_000_000_000
#: The shortest stretch of sends before a latency fault compared with those during it.
BASELINE_MIN_NS = 5_000_000_000
#: Fewest acknowledged sends in each stretch for a latency comparison.
MIN_SENDS = 5
#: bandwidth: the least rise of the median ack latency that counts as the limit biting.
BANDWIDTH_RISE_MS = 20.0
#: A disk fault's effect: a log flush at least this slow (ms) during it ...
FLUSH_SLOW_MS = 200.0
#: ... and this many times the slowest before it (a healthy flush takes milliseconds).
FLUSH_FACTOR = 5.0
#: disk-stall, slow-disk: the least rise of the median acknowledgement latency (ms) of
#: the sends a target replicated that counts as its freeze biting (the median must also
#: at least double).
FREEZE_RISE_MS = 200.0
#: How many examples an ``observed`` text names before it counts the rest.
SHOWN = 3
#: Kafka's message for ENOSPC (java.io.IOException's text).
NO_SPACE = "No space left on device"
#: A starting broker that never heard back from the controllers gives up with one of
#: these (BrokerServer's startup failing while it waits to be caught up, the lifecycle
#: manager's failed registration): the consequence of a cut from the controllers that
#: came while it started, when it was not yet registered and so could not be fenced.
START_STALLED = (
    "while waiting for the controller to acknowledge that we are caught up",
    "unable to register with the controller quorum",
)
#: Everything the broker-log measures look for (only such lines are kept).
_LOG_MARKS = (NO_SPACE, *START_STALLED)
_NS = 1e9
_BROKER = re.compile(r"^broker-(\d+)$")
_CONTROLLER = re.compile(r"^controller-(\d+)$")


@dataclass(frozen=True)
class FaultEffect:
    """One fault's entry of ``evidence.faults``."""

    name: str
    family: str
    targets: list[Any]
    started: bool
    effect: EffectState
    observed: str

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "family": self.family,
            "targets": list(self.targets),
            "started": self.started,
            "effect": self.effect,
            "observed": self.observed,
        }


@dataclass
class Context:
    """What the measures read besides the fault itself."""

    facts: Facts
    run_dir: RunDir | None = None
    # per broker: its server.log's lines that a measure looks for (_LOG_MARKS), as (time on
    # the history's base, text); None until read, {} when the run kept no logs (or no
    # time origin)
    _logs: dict[int, list[tuple[int, str]]] | None = field(default=None, repr=False)
    logs_note: str = ""
    # the ok sends by invoke time (times, value ids), built on first use
    _acked: tuple[list[int], list[int]] | None = field(default=None, repr=False)
    _completed: tuple[list[int], list[int]] | None = field(default=None, repr=False)
    _shrinks: list[Shrink] | None = field(default=None, repr=False)
    _leader: Callable[[int, int], int | None] | None = field(default=None, repr=False)
    _holders: Callable[[int, int], frozenset[int]] | None = field(default=None, repr=False)
    # per broker: its log flush timer's samples (broker-metrics.jsonl); None until read,
    # {} when the run kept none (flush_note says why)
    _flushes: dict[int, list[FlushSample]] | None = field(default=None, repr=False)
    flush_note: str = ""
    # every node's raft state changes (quorumlog); None until read, [] when the run kept
    # no node log (quorum_note says why)
    _quorum: list[QuorumChange] | None = field(default=None, repr=False)
    quorum_note: str = ""

    @property
    def record(self) -> ControllerRecord | None:
        return self.facts.controller

    def acked(self) -> tuple[list[int], list[int]]:
        """Every ``ok`` send's invoke time and value id, in invoke-time order."""
        if self._acked is None:
            facts = self.facts
            rows = sorted(
                (facts.inv_time[vid], vid)
                for vid in range(len(facts.value_list))
                if facts.status[vid] == OK and facts.inv_time[vid] >= 0
            )
            self._acked = ([t for t, _ in rows], [v for _, v in rows])
        return self._acked

    def completed(self) -> tuple[list[int], list[int]]:
        """Every ``ok`` send's completion time and value id, in completion order."""
        if self._completed is None:
            facts = self.facts
            rows = sorted(
                (facts.comp_time[vid], vid)
                for vid in range(len(facts.value_list))
                if facts.status[vid] == OK and facts.comp_time[vid] >= 0
            )
            self._completed = ([t for t, _ in rows], [v for _, v in rows])
        return self._completed

    def shrinks(self) -> list[Shrink]:
        """Every ISR removal of the controller's record (none without one)."""
        if self._shrinks is None:
            record = self.record
            self._shrinks = [] if record is None else list(record.isr_shrinks())
        return self._shrinks

    def leader(self, tp: int, time: int) -> int | None:
        """The partition's leader at ``time`` (:func:`_leader_at`)."""
        if self._leader is None:
            self._leader = _leader_at(self)
        return self._leader(tp, time)

    def holders(self, tp: int, time: int) -> frozenset[int]:
        """The brokers an ``acks=all`` send to the partition waited for at ``time``
        (:func:`_holders_at`)."""
        if self._holders is None:
            self._holders = _holders_at(self)
        return self._holders(tp, time)

    def flush_times(self) -> dict[int, list[FlushSample]]:
        """Every broker's flush-timer samples on the history's time base (empty, with
        :attr:`flush_note` saying why, when the run kept none or has no time origin)."""
        if self._flushes is None:
            self._flushes = {}
            if self.run_dir is None:
                self.flush_note = "no run directory"
                return self._flushes
            rd = self.run_dir
            origin = rd.load_run(missing_ok=True).history_start_unix_ns
            if not rd.broker_metrics.is_file():
                self.flush_note = f"the run kept no {BROKER_METRICS_JSONL}"
            elif origin is None:
                self.flush_note = f"{RUN_JSON} has no history_start_unix_ns"
            else:
                self._flushes = read_flush_times(rd.broker_metrics, origin)
                if not self._flushes:
                    self.flush_note = f"{BROKER_METRICS_JSONL} has no flush timer"
        return self._flushes

    def quorum(self) -> list[QuorumChange] | None:
        """The nodes' raft state changes (:func:`quorum_changes`); None, with
        :attr:`quorum_note` saying why, when the run kept no node log or no time origin."""
        if self._quorum is None:
            found = None if self.run_dir is None else quorum_changes(self.run_dir)
            if found is None:
                self.quorum_note = (
                    "no node logs (or no time origin): a controller failover is not known"
                )
                return None
            self._quorum = found
        return self._quorum

    def broker_log(self, broker: int) -> list[tuple[int, str]] | None:
        """The broker's timed log lines that say one of :data:`_LOG_MARKS` (ENOSPC, a
        start given up on the controller; a continuation line takes the time of the entry
        it continues); None when the run kept no log of it."""
        if self._logs is None:
            self._logs = self._read_logs()
        return self._logs.get(broker)

    def _read_logs(self) -> dict[int, list[tuple[int, str]]]:
        if self.run_dir is None:
            self.logs_note = "no run directory"
            return {}
        found = timed_node_logs(self.run_dir, role="broker")
        if found is None:
            self.logs_note = f"the run kept no broker log, or {RUN_JSON} has no time origin"
            return {}
        out: dict[int, list[tuple[int, str]]] = {}
        for node in found.nodes:
            if node.node_id is None:
                continue
            lines: list[tuple[int, str]] = []
            last: int | None = None
            for _, text in node.lines():
                unix_ms = entry_unix_ms(text)
                if unix_ms is not None:
                    last = history_time_ns(unix_ms, found.origin_unix_ns)
                # only what a measure looks for is kept: a log may be large
                if last is not None and any(mark in text for mark in _LOG_MARKS):
                    lines.append((last, text))
            out[node.node_id] = lines
        return out


Measure = Callable[[Fault, Context], tuple[EffectState, str]]


def fault_effects(facts: Facts, run_dir: RunDir | None = None) -> list[FaultEffect]:
    """``evidence.faults``: every fault of the history, in start order, with its effect."""
    ctx = Context(facts, run_dir)
    out = []
    for fault in facts.faults:
        if fault.fault in NOT_FAULTS:
            continue
        out.append(judge(fault, ctx))
    return out


def judge(fault: Fault, ctx: Context) -> FaultEffect:
    """One fault's effect: its family's measure, for a fault that started."""
    started = fault.error is None

    def entry(effect: EffectState, observed: str) -> FaultEffect:
        return FaultEffect(fault.id, fault.fault, list(fault.targets), started, effect, observed)

    if not started:
        return entry(NOT_SEEN, f"the fault did not start: {fault.error}")
    measure = MEASURES.get(fault.fault)
    if measure is None:
        return entry(NOT_MEASURED, f"no measure for fault family {fault.fault!r}")
    try:
        return entry(*measure(fault, ctx))
    except Exception as exc:  # noqa: BLE001 - one measure's bug must not hide the verdict
        return entry(NOT_MEASURED, f"the measure failed: {type(exc).__name__}: {exc}")


# -- helpers ------------------------------------------------------------------------------
def _s(ns: int) -> str:
    return f"{ns / _NS:.1f} s"


def _end(fault: Fault, facts: Facts, slack: int = SETTLE_NS) -> int:
    """Until when an effect of ``fault`` counts: its stop plus ``slack``; the history's
    end for a fault that never stopped."""
    if fault.stop_time is None:
        return max(facts.last_time, fault.start_time) + slack
    return fault.stop_time + slack


def broker_targets(fault: Fault) -> tuple[list[int], list[str]]:
    """(broker ids the targets name, the other target names: controller-only nodes,
    clients)."""
    brokers, others = [], []
    for name in fault.targets:
        m = _BROKER.match(name) if isinstance(name, str) else None
        if m:
            brokers.append(int(m.group(1)))
        else:
            others.append(str(name))
    return sorted(set(brokers)), others


def no_broker(others: Sequence[str]) -> tuple[EffectState, str]:
    """What a broker fault aimed at no broker measures: nothing."""
    return NOT_MEASURED, f"no broker among the targets ({', '.join(others) or 'none'})"


def _summed(
    parts: Sequence[tuple[EffectState, str]],
    unmeasured_targets: Sequence[str] = (),
    notes: Sequence[str] = (),
) -> tuple[EffectState, str]:
    """Per-target findings as one: not-seen if any target's effect was looked for and is
    missing, seen if at least one was seen and none missing, else not-measured. ``notes``
    are told after the findings and weigh nothing."""
    texts = [text for _, text in parts]
    if unmeasured_targets:
        texts.append(f"not measurable on {', '.join(unmeasured_targets)}")
    texts.extend(notes)
    states = {state for state, _ in parts}
    if NOT_SEEN in states:
        return NOT_SEEN, "; ".join(texts)
    if SEEN in states:
        return SEEN, "; ".join(texts)
    return NOT_MEASURED, "; ".join(texts) or "nothing to measure"


def _listed(items: Sequence[str]) -> str:
    shown = ", ".join(items[:SHOWN])
    return shown + (f" and {len(items) - SHOWN} more" if len(items) > SHOWN else "")


# -- crashes: a new broker epoch ----------------------------------------------------------
def _controllers_started(
    fault: Fault, ctx: Context, nodes: list[int]
) -> list[tuple[EffectState, str]]:
    """A crash of controller-only nodes, which register no broker epoch: each started
    again, its raft state initialised anew (a ``from null`` transition line in its log)
    after the fault's start. One finding per node."""
    changes = ctx.quorum()
    if changes is None:
        return [(NOT_MEASURED, ctx.quorum_note)]
    end = _restart_end(fault, ctx.facts)
    parts: list[tuple[EffectState, str]] = []
    for node in nodes:
        starts = [
            c for c in changes if c.node == node and c.fresh and fault.start_time < c.time <= end
        ]
        if starts:
            first = starts[0]
            parts.append(
                (SEEN, f"controller {node} started again at {_s(first.time)} ({first.where})")
            )
        else:
            parts.append(
                (
                    NOT_SEEN,
                    f"controller {node} did not start again between {_s(fault.start_time)}"
                    f" and {_s(end)}",
                )
            )
    return parts


def _new_epoch(record: ControllerRecord, broker: int, start: int, end: int) -> str | None:
    """The broker's registration with a new epoch between ``start`` and ``end``, told;
    None when there is none."""
    before = None
    for line in record.brokers.get(broker, ()):
        if line.time < start:
            before = line.broker_epoch
            continue
        if line.time > end:
            break
        if line.broker_epoch >= 0 and line.broker_epoch != before:
            was = "unregistered" if before in (None, -1) else f"epoch {before}"
            return (
                f"broker {broker} registered again at {_s(line.time)} with epoch"
                f" {line.broker_epoch} ({was} before the fault; {CONTROLLER_JSONL} offset"
                f" {line.offset})"
            )
    return None


def _restart_end(fault: Fault, facts: Facts) -> int:
    """A crashed broker registers again once restarted: at the stop (which waits for it
    by default) or up to the fault's ``timeout_s`` after it."""
    timeout = fault.params.get("timeout_s", 90.0)
    timeout = float(timeout) if isinstance(timeout, int | float) else 90.0
    return _end(fault, facts, int(timeout * _NS) + SETTLE_NS)


def measure_crash(fault: Fault, ctx: Context) -> tuple[EffectState, str]:
    """kill, term, hard-reboot, power-loss, rolling-restart: each target broker registers
    again with a new broker epoch after the fault's start (controller.jsonl); term and
    rolling-restart add their recorded exit codes. A controller-only target is measured
    as starting again (:func:`_controllers_started`), in every crash, whatever else it
    hit (a power loss of every node)."""
    brokers, others = broker_targets(fault)
    found = [(_CONTROLLER.match(n) if isinstance(n, str) else None, n) for n in others]
    controllers = [int(m.group(1)) for m, _ in found if m]
    unmeasurable = [n for m, n in found if not m]
    parts: list[tuple[EffectState, str]] = []
    if controllers:
        parts.extend(_controllers_started(fault, ctx, controllers))
    record = ctx.record
    unknown = f"no {CONTROLLER_JSONL}: broker epochs unknown"
    if not brokers and not controllers:
        return (NOT_MEASURED, unknown) if record is None else no_broker(others)
    if record is None:
        if brokers:
            parts.append((NOT_MEASURED, unknown))
    else:
        end = _restart_end(fault, ctx.facts)
        for broker in brokers:
            told = _new_epoch(record, broker, fault.start_time, end)
            if told is None:
                parts.append(
                    (
                        NOT_SEEN,
                        f"broker {broker} did not register again between"
                        f" {_s(fault.start_time)} and {_s(end)}",
                    )
                )
            else:
                parts.append((SEEN, told))
    notes = []
    codes = fault.stop_detail.get("exit_codes") or fault.detail.get("exit_codes")
    if isinstance(codes, dict) and codes:
        notes.append("exit codes " + ", ".join(f"{k}: {v}" for k, v in sorted(codes.items())))
    elif fault.fault == "rolling-restart":
        # its stop line names every node it restarted: none named, none restarted
        parts.append((NOT_SEEN, "the stop line records no node's exit code"))
    return _summed(parts, unmeasurable, notes)


# -- partitions and pauses: ISR shrinks, fencings, leaders' Shrinking ISR lines -----------
def _involved(fault: Fault) -> tuple[frozenset[int], bool, bool]:
    """The nodes a partition separates (its targets and every node its detail names:
    ``blocked`` pairs, ``sides``, ``halves``, ``to``), whether a controller-only node is
    among them, and whether a broker is."""
    names: list[Any] = list(fault.targets)
    for key in ("blocked", "sides", "halves", "to"):
        value = fault.detail.get(key)
        if isinstance(value, list):
            for item in value:
                names.extend(item if isinstance(item, list) else [item])
    controller = any(isinstance(n, str) and n.startswith("controller-") for n in names)
    broker = any(isinstance(n, str) and _BROKER.match(n) for n in names)
    return node_ids(names), controller, broker


def _isr_or_fence(
    ctx: Context, brokers: Iterable[int], start: int, end: int, *, any_fenced: bool = False
) -> tuple[EffectState, str]:
    """ISR members lost and sessions lost among ``brokers`` between ``start`` and ``end``:
    from controller.jsonl, and the leaders' ``Shrinking ISR`` lines where the run kept
    the nodes' logs. With ``any_fenced``, every broker's lost session counts (a cut
    between the brokers and a controller)."""
    involved = set(brokers)
    record, log = ctx.record, ctx.facts.leader_log
    if record is None and log is None:
        return NOT_MEASURED, f"no {CONTROLLER_JSONL} and no node logs: ISRs and sessions unknown"
    found: list[str] = []
    if record is not None:
        shrinks = [
            s
            for s in ctx.shrinks()
            if start <= s.at.time <= end
            and (s.broker in involved or (s.before is not None and s.before.leader in involved))
        ]
        if shrinks:
            first = shrinks[0]
            found.append(
                f"{len(shrinks)} ISR removal(s) in {CONTROLLER_JSONL}, e.g. broker"
                f" {first.broker} left {first.topic}-{first.partition}'s ISR at"
                f" {_s(first.at.time)} ({first.cause})"
            )
        fenced = []
        for broker in sorted(set(record.brokers) if any_fenced else involved):
            lines = record.brokers.get(broker, [])
            for before, after in zip(lines, lines[1:], strict=False):
                if (
                    start <= after.time <= end
                    and after.fenced
                    and not before.fenced
                    and after.broker_epoch == before.broker_epoch >= 0
                ):
                    fenced.append(f"broker {broker} at {_s(after.time)}")
        if fenced:
            found.append(f"session lost (fenced): {_listed(fenced)}")
    if log is not None:
        asked = [
            line
            for lines in log.lines.values()
            for line in lines
            if start <= line.time <= end
            and (
                line.msg.leader in involved
                or any(r.broker in involved for r in line.msg.out_of_sync)
            )
        ]
        if asked:
            earliest = min(asked, key=lambda x: x.time)
            found.append(
                f"{len(asked)} 'Shrinking ISR' line(s) in the leaders' logs, e.g."
                f" {earliest.log} at {_s(earliest.time)}"
            )
    window = f"between {_s(start)} and {_s(end)}"
    who = ", ".join(str(b) for b in sorted(involved)) or "none"
    if found:
        return SEEN, f"{window}, nodes {who}: " + "; ".join(found)
    return NOT_SEEN, f"no ISR shrink and no fencing of nodes {who} {window}"


def measure_partition(fault: Fault, ctx: Context) -> tuple[EffectState, str]:
    """isolate, split, cut, bridge: a replica leaves an ISR, or a broker loses its session,
    among the nodes the fault separates, during it (plus :data:`SETTLE_NS`); where it
    separates a controller-only node, any broker's lost session counts too, and so does
    the metadata quorum moving (:func:`_quorum_moved`)."""
    involved, controller, broker = _involved(fault)
    end = _end(fault, ctx.facts)
    state, told = _isr_or_fence(ctx, involved, fault.start_time, end, any_fenced=controller)
    if state == SEEN or not controller:
        return state, told
    stalled = _start_stalled(ctx, involved, fault.start_time, end)
    if stalled:
        return SEEN, f"{stalled}; {told}"
    moved, said = _quorum_moved(ctx, involved, fault.start_time, end)
    if moved == SEEN:
        return SEEN, f"{said}; {told}"
    if moved == NOT_MEASURED and (state == NOT_MEASURED or not broker):
        # a cut among controllers only: its effect is the quorum's, and no log shows it
        return NOT_MEASURED, f"{told}; {said}"
    return NOT_SEEN, f"{told}; {said}"


def _start_stalled(ctx: Context, involved: Iterable[int], start: int, end: int) -> str:
    """A separated broker whose start gave up on the controllers between ``start`` and
    ``end`` (:data:`START_STALLED` in its log), told; "" when none did or no log was kept.
    A broker cut from the controllers while it starts is not registered yet, so no
    fencing or ISR change can show the cut: its own failed start does."""
    found = []
    for node in sorted(set(involved)):
        lines = ctx.broker_log(node) or []
        hits = [
            (t, mark)
            for t, text in lines
            if start <= t <= end
            for mark in START_STALLED
            if mark in text
        ]
        if hits:
            t, mark = hits[0]
            found.append(f"broker {node}'s start gave up on the controllers at {_s(t)} ('{mark}')")
    return "; ".join(found)


def _quorum_moved(
    ctx: Context, involved: Iterable[int], start: int, end: int
) -> tuple[EffectState, str]:
    """The metadata quorum's leadership moving between ``start`` and ``end``: a node
    becoming its leader while the leader before the fault was one of the separated
    nodes (an election the cut made; one elsewhere in the cluster does not count), or a
    separated node standing for election or resigning
    (:mod:`kchaos.harness.checker.quorumlog`)."""
    changes = ctx.quorum()
    if changes is None:
        return NOT_MEASURED, ctx.quorum_note
    separated = set(involved)
    window = [c for c in changes if start <= c.time <= end]
    before = [c for c in changes if c.time < start and c.state == LEADER]
    cut_leader = bool(before) and before[-1].node in separated
    led = [c for c in window if c.state == LEADER] if cut_leader else []
    lost = [c for c in window if c.state in ELECTING and c.node in separated]
    if not led and not lost:
        return NOT_SEEN, (
            f"no quorum leader elected and no separated node standing for election or"
            f" resigning between {_s(start)} and {_s(end)}"
        )
    found = []
    if led:
        found.append(
            "quorum leader(s) elected: "
            + _listed([f"node {c.node} at {_s(c.time)} (epoch {c.epoch})" for c in led])
        )
    if lost:
        first = lost[0]
        found.append(
            f"{len(lost)} election or resignation line(s) of separated nodes, first node"
            f" {first.node} {first.state} at {_s(first.time)} ({first.where})"
        )
    return SEEN, "; ".join(found)


def measure_pause(fault: Fault, ctx: Context) -> tuple[EffectState, str]:
    """pause: the run keeps no heartbeat times, so what is measured is their consequence:
    the paused broker fenced (its session expired) or dropped from an ISR during the
    pause. A pause shorter than the session and than replica.lag.time.max.ms is not-seen."""
    brokers, others = broker_targets(fault)
    if not brokers:
        return no_broker(others)
    state, told = _isr_or_fence(ctx, brokers, fault.start_time, _end(fault, ctx.facts))
    return state, "heartbeat gaps are not kept; measured their consequence, " + told


# -- hold-controller-requests: the connections held ---------------------------------------
def measure_hold(fault: Fault, ctx: Context) -> tuple[EffectState, str]:
    """hold-controller-requests: the packets to the controller that the fault's rules
    dropped (its stop line's ``detail.held_packets``, per target, read from the rules'
    counters before they went). A target without a count (a history from before the
    counters, or a node down at the stop) falls back to the connections idle at the start
    (``detail.held_connections``): what could be held, not what was."""
    counted = fault.stop_detail.get("held_packets")
    counted = counted if isinstance(counted, dict) else {}
    held = fault.detail.get("held_connections")
    held = held if isinstance(held, dict) else {}
    if not counted and not held:
        return NOT_MEASURED, "the fault's lines record neither held_packets nor held_connections"
    parts: list[tuple[EffectState, str]] = []
    for name in fault.targets:
        packets = counted.get(name)
        ports = held.get(name)
        if isinstance(packets, int):
            if packets > 0:
                parts.append((SEEN, f"{name}: {packets} packet(s) to the controller held"))
            else:
                parts.append((NOT_SEEN, f"{name}: sent nothing to the controller that was held"))
        elif isinstance(ports, list) and ports:
            parts.append((SEEN, f"{name}: {len(ports)} connection(s) held (local ports {ports})"))
        elif isinstance(ports, list):
            parts.append((NOT_SEEN, f"{name}: no connection to the controller held"))
        else:
            parts.append((NOT_MEASURED, f"{name}: no count of held packets"))
    return _summed(parts)


# -- hold-request: the client connection caught --------------------------------------------
def measure_request_hold(fault: Fault, ctx: Context) -> tuple[EffectState, str]:
    """hold-request: its rules caught a connection at a request of its kind (the stop
    line's ``detail.held_packets``, read from the rules' counters before they went), the
    client gave up on that connection before the release (``held_sockets``: a state
    other than ESTAB, the client closed it) and the held bytes reached Toxiproxy after
    it (``delivered_after_s``): a request delivered late, after the client's retry."""
    held = fault.stop_detail.get("held_packets")
    caught = fault.stop_detail.get("caught")
    api = fault.detail.get("api", "request")
    if not isinstance(held, int):
        return NOT_MEASURED, "the stop line records no held_packets (the counters were not read)"
    if held <= 0:
        return NOT_SEEN, f"the client sent no {api} request while the fault held"
    told = f"one connection held from its {api} request on: {held} packet(s) dropped"
    delivered = fault.stop_detail.get("delivered_after_s")
    sockets = fault.stop_detail.get("held_sockets")
    states = (
        [s.get("state") for s in sockets if isinstance(s, dict)]
        if isinstance(sockets, list)
        else []
    )
    if isinstance(sockets, list) and not sockets:
        return NOT_SEEN, (
            f"{told}; the held connection was gone before the release (the client reset"
            " it), so nothing held arrived late"
        )
    if states and all(state == "ESTAB" for state in states):
        # the client had not given up on the request yet: it arrived slow, not late
        return NOT_SEEN, (
            f"{told}; released before the client timed it out (its connection still open),"
            " so it arrived in time, not after a retry"
        )
    if isinstance(delivered, int | float):
        return SEEN, (
            f"{told}; the client had closed that connection, and the held bytes were"
            f" acknowledged {delivered:g} s after the release"
        )
    if fault.stop_detail.get("undelivered"):
        # held, but not seen to arrive late: the mechanism did not run to its end
        return NOT_SEEN, f"{told}; still unacknowledged after the release (never delivered)"
    return NOT_MEASURED, f"{told} (connections caught: {caught}); the release was not watched"


# -- leadership: the leaders moved --------------------------------------------------------
def _window(fault: Fault, facts: Facts) -> tuple[int, int]:
    return fault.start_time - LEADERSHIP_LOOKBACK_NS, _end(fault, facts)


def measure_preferred(fault: Fault, ctx: Context) -> tuple[EffectState, str]:
    """preferred-election: a partition's leader moved to its first replica around the
    fault (its election happens inside the start: :data:`LEADERSHIP_LOOKBACK_NS`)."""
    record = ctx.record
    if record is None:
        return NOT_MEASURED, f"no {CONTROLLER_JSONL}: leaders unknown"
    start, end = _window(fault, ctx.facts)
    topic = fault.params.get("topic") or None
    moved = [
        f"{e.topic}-{e.partition} {e.before.leader}->{e.after.leader} at {_s(e.after.time)}"
        for e in record.elections()
        if start <= e.after.time <= end
        and (topic is None or e.topic == topic)
        and e.after.replicas
        and e.after.leader == e.after.replicas[0]
    ]
    if moved:
        return SEEN, f"{len(moved)} leader(s) moved to the preferred replica: {_listed(moved)}"
    return NOT_SEEN, f"no leader moved to its preferred replica between {_s(start)} and {_s(end)}"


def measure_reassign(fault: Fault, ctx: Context) -> tuple[EffectState, str]:
    """reassign: a partition of the topic took the new replica order (the start line's
    ``detail.assignment``) and changed leader, around the fault."""
    record = ctx.record
    if record is None:
        return NOT_MEASURED, f"no {CONTROLLER_JSONL}: leaders unknown"
    topic = str(fault.params.get("topic") or "")
    plan = fault.detail.get("assignment")
    if not isinstance(plan, dict):
        return NOT_MEASURED, "the start line records no assignment"
    start, end = _window(fault, ctx.facts)
    moved = []
    for part, replicas in sorted(plan.items()):
        states = record.partitions.get((topic, int(part)), [])
        # the leader before the move: at the window's start, else (a record that begins
        # inside the window) that of the first state still on the old replicas
        before = [s for s in states if s.time < start] or [
            s for s in states[:1] if list(s.replicas) != list(replicas)
        ]
        leader = before[-1].leader if before else None
        after = next(
            (
                s
                for s in states
                if start <= s.time <= end
                and list(s.replicas) == list(replicas)
                and s.leader not in (-1, leader)
            ),
            None,
        )
        if leader is not None and after is not None:
            moved.append(
                f"{topic}-{part} replicas {list(replicas)}, leader"
                f" {leader}->{after.leader} at {_s(after.time)}"
            )
    if moved:
        return SEEN, f"{len(moved)} partition(s) reassigned with a new leader: {_listed(moved)}"
    return NOT_SEEN, (
        f"no partition of {topic or '(no topic)'} took the new replicas and a new leader"
        f" between {_s(start)} and {_s(end)}"
    )


# -- disk-full: ENOSPC in the broker's log ------------------------------------------------
def measure_disk_full(fault: Fault, ctx: Context) -> tuple[EffectState, str]:
    """disk-full: the target broker's log says ``No space left on device`` during the
    fault; the stop line's ``restarted`` (brokers Kafka halted) is reported beside it."""
    brokers, others = broker_targets(fault)
    if not brokers:
        return no_broker(others)
    start, end = fault.start_time, _end(fault, ctx.facts)
    parts: list[tuple[EffectState, str]] = []
    unmeasured = list(others)
    for broker in brokers:
        lines = ctx.broker_log(broker)
        if lines is None:
            unmeasured.append(f"broker-{broker} (no log: {ctx.logs_note or 'not kept'})")
            continue
        hits = [t for t, text in lines if start <= t <= end and NO_SPACE in text]
        if hits:
            parts.append(
                (
                    SEEN,
                    f"broker {broker} logged '{NO_SPACE}' {len(hits)} time(s),"
                    f" first at {_s(hits[0])}",
                )
            )
        else:
            parts.append(
                (
                    NOT_SEEN,
                    f"broker {broker} logged no '{NO_SPACE}' between {_s(start)} and {_s(end)}",
                )
            )
    notes = []
    restarted = fault.stop_detail.get("restarted")
    if isinstance(restarted, list) and restarted:
        notes.append(f"halted by Kafka and restarted: {', '.join(map(str, restarted))}")
    return _summed(parts, unmeasured, notes)


# -- disk faults: the brokers' own flush times -------------------------------------------
def measure_flush(fault: Fault, ctx: Context) -> tuple[EffectState, str]:
    """slow-sync (and one half of :func:`measure_freeze`): the target broker's slowest
    timed log flush during the fault (to 5 s after its stop, when a flush frozen to the
    heal ends) is at least :data:`FLUSH_SLOW_MS` and :data:`FLUSH_FACTOR` times the
    slowest before it (:mod:`.flushtimes`). A second disk fault on a broker within
    minutes of the first may be not-seen: the timer's percentiles still hold the first
    one's flushes."""
    brokers, others = broker_targets(fault)
    if not brokers:
        return no_broker(others)
    series = ctx.flush_times()
    if not series:
        return NOT_MEASURED, f"flush times unknown: {ctx.flush_note}"
    start, end = fault.start_time, _end(fault, ctx.facts)
    parts: list[tuple[EffectState, str]] = []
    unmeasured = list(others)
    for broker in brokers:
        samples = series.get(broker) or []
        during = [x for x in samples if start <= x.time <= end]
        if not during:
            unmeasured.append(f"broker-{broker} (no flush timer scraped during the fault)")
            continue
        before = [x for x in samples if x.time < start]
        base = max((x.worst_ms for x in before), default=0.0)
        peak = max(during, key=lambda x: x.worst_ms)
        timed = during[-1].count - (before[-1].count if before else during[0].count)
        told = (
            f"broker {broker}: slowest log flush {peak.worst_ms:.0f} ms during the fault"
            f" (scraped at {_s(peak.time)}), {base:.0f} ms before it; {timed:.0f} flush(es)"
            " timed meanwhile"
        )
        slow = peak.worst_ms >= FLUSH_SLOW_MS and peak.worst_ms >= FLUSH_FACTOR * max(base, 1.0)
        parts.append((SEEN if slow else NOT_SEEN, told))
    return _summed(parts, unmeasured)


def measure_freeze(fault: Fault, ctx: Context) -> tuple[EffectState, str]:
    """disk-stall, slow-disk: an fsfreeze of the target's filesystem. Freezing syncs the
    filesystem first, and then the broker's writes block, not its fsyncs: measured
    2026-12-07 on 4.4.0 (tests/integration/test_fault_evidence_acks_disk.py), a 3 s
    disk-stall and a slow-disk frozen 1.5 s in every 1.6 s left every flush under 100 ms
    while the median acknowledgement latency rose from 170 ms to 2.6 s and 1.2 s. So
    what is measured first is the sends' acknowledgements: the median latency of the
    ``ok`` sends invoked during the fault to a partition a target led or was in the ISR
    of (an ``acks=all`` send waits for every ISR member's copy) at least doubled and rose
    by at least :data:`FREEZE_RISE_MS`, against as long a stretch (at least 5 s) right
    before it; fewer than :data:`MIN_SENDS` on either side is not measured that way.
    Seen when that, or the target's flush timer (:func:`measure_flush`), shows it."""
    brokers, others = broker_targets(fault)
    if not brokers:
        return no_broker(others)
    acks = _freeze_acks(fault, ctx, set(brokers))
    flush = measure_flush(fault, ctx)
    told = f"{acks[1]}; {flush[1]}"
    states = {acks[0], flush[0]}
    if SEEN in states:
        return SEEN, told
    if NOT_SEEN in states:
        return NOT_SEEN, told
    return NOT_MEASURED, told


def _freeze_acks(fault: Fault, ctx: Context, brokers: set[int]) -> tuple[EffectState, str]:
    """:func:`measure_freeze`'s comparison of acknowledgement latencies."""
    end = _end(fault, ctx.facts, 0)
    length = max(end - fault.start_time, BASELINE_MIN_NS)
    during = _latencies(ctx, brokers, fault.start_time, end, replicas=True)
    before = _latencies(
        ctx, brokers, max(0, fault.start_time - length), fault.start_time, replicas=True
    )
    who = f"sends to partitions broker(s) {', '.join(map(str, sorted(brokers)))} replicated"
    if len(during) < MIN_SENDS or len(before) < MIN_SENDS:
        return NOT_MEASURED, (
            f"too few acknowledged {who} to compare: {len(during)} during the fault,"
            f" {len(before)} before (at least {MIN_SENDS} each)"
        )
    now_ms = statistics.median(during) / 1e6
    then_ms = statistics.median(before) / 1e6
    told = (
        f"median ack latency of {who} {now_ms:.1f} ms during the fault ({len(during)} sends),"
        f" {then_ms:.1f} ms before ({len(before)})"
    )
    if now_ms >= 2 * then_ms and now_ms - then_ms >= FREEZE_RISE_MS:
        return SEEN, told
    return NOT_SEEN, (
        told + f": at least twice as slow and {FREEZE_RISE_MS:g} ms slower was needed"
    )


# -- latency: the sends' acknowledgements slowed ------------------------------------------
def _leader_at(ctx: Context) -> Callable[[int, int], int | None]:
    """A function (tp id, time) -> leader then, from controller.jsonl where it covers the
    partition, else the monitor's samples; None where neither says."""
    facts, record = ctx.facts, ctx.record
    cache: dict[int, tuple[list[int], list[int]]] = {}

    def timeline(tp: int) -> tuple[list[int], list[int]]:
        if tp not in cache:
            key = facts.tps[tp]
            if record is not None and key in record.partitions:
                states = record.partitions[key]
                cache[tp] = ([s.time for s in states], [s.leader for s in states])
            else:
                obs = facts.observations[tp]
                cache[tp] = (list(obs.time), list(obs.leader))
        return cache[tp]

    def leader(tp: int, time: int) -> int | None:
        times, leaders = timeline(tp)
        i = bisect_right(times, time)
        return leaders[i - 1] if i else None

    return leader


def _holders_at(ctx: Context) -> Callable[[int, int], frozenset[int]]:
    """A function (tp id, time) -> the partition's leader and ISR then, from
    controller.jsonl where it covers the partition; else only the leader of the
    monitor's samples (they count the ISR, not its members); empty where neither says."""
    facts, record = ctx.facts, ctx.record
    cache: dict[int, tuple[list[int], list[frozenset[int]]]] = {}

    def timeline(tp: int) -> tuple[list[int], list[frozenset[int]]]:
        if tp not in cache:
            key = facts.tps[tp]
            if record is not None and key in record.partitions:
                states = record.partitions[key]
                cache[tp] = (
                    [s.time for s in states],
                    [frozenset((s.leader, *s.isr)) - {-1} for s in states],
                )
            else:
                obs = facts.observations[tp]
                cache[tp] = (list(obs.time), [frozenset((x,)) - {-1} for x in obs.leader])
        return cache[tp]

    def holders(tp: int, time: int) -> frozenset[int]:
        times, sets = timeline(tp)
        i = bisect_right(times, time)
        return sets[i - 1] if i else frozenset()

    return holders


def _latencies(
    ctx: Context, brokers: set[int], start: int, end: int, *, replicas: bool = False
) -> list[int]:
    """Acknowledgement latencies (ns) of the ``ok`` sends invoked in [start, end) to a
    partition a broker of ``brokers`` led at the invoke (with ``replicas``: led or was
    in the ISR of)."""
    facts = ctx.facts
    times, vids = ctx.acked()
    out = []
    for i in range(bisect_left(times, start), bisect_left(times, end)):
        vid, invoked = vids[i], times[i]
        tp = facts.ack_tp[vid]
        if tp < 0:
            continue
        if ctx.leader(tp, invoked) in brokers or (
            replicas and not brokers.isdisjoint(ctx.holders(tp, invoked))
        ):
            out.append(facts.comp_time[vid] - invoked)
    return out


@dataclass(frozen=True)
class _Medians:
    """Median acknowledgement latencies (ms) during a fault and right before it, told."""

    now_ms: float
    then_ms: float
    told: str


def _ack_latency_medians(fault: Fault, ctx: Context) -> tuple[EffectState, str] | _Medians:
    """The median acknowledgement latency (ms) of sends to partitions a target led, during
    the fault and in as long a stretch right before it, with what was compared; or the
    finding when there is nothing to compare (a controller link, no broker, too few sends)."""
    if fault.params.get("link", "all") == "controller":
        return NOT_MEASURED, "a controller link carries no send; heartbeat delays are not kept"
    brokers, others = broker_targets(fault)
    if not brokers:
        return no_broker(others)
    end = _end(fault, ctx.facts, 0)
    length = max(end - fault.start_time, BASELINE_MIN_NS)
    during = _latencies(ctx, set(brokers), fault.start_time, end)
    before = _latencies(ctx, set(brokers), max(0, fault.start_time - length), fault.start_time)
    who = f"sends to partitions led by broker(s) {', '.join(map(str, brokers))}"
    if len(during) < MIN_SENDS or len(before) < MIN_SENDS:
        return NOT_SEEN, (
            f"too few acknowledged {who} to compare: {len(during)} during the fault,"
            f" {len(before)} before (at least {MIN_SENDS} each)"
        )
    now_ms = statistics.median(during) / 1e6
    then_ms = statistics.median(before) / 1e6
    told = (
        f"median ack latency of {who} {now_ms:.1f} ms during the fault ({len(during)} sends),"
        f" {then_ms:.1f} ms before ({len(before)})"
    )
    return _Medians(now_ms, then_ms, told)


def measure_latency(fault: Fault, ctx: Context) -> tuple[EffectState, str]:
    """latency on a client or replication link: the median acknowledgement latency of
    sends to partitions a target led, during the fault against as long a stretch right
    before it; seen when it rose by at least half of ``latency_ms`` (so never for 0 ms).
    A controller link carries no send: not measured."""
    found = _ack_latency_medians(fault, ctx)
    if not isinstance(found, _Medians):
        return found
    now_ms, then_ms, told = found.now_ms, found.then_ms, found.told
    added = fault.params.get("latency_ms", 100)
    added_ms = float(added) if isinstance(added, int | float) else 0.0
    told += f"; {added_ms:g} ms configured"
    if added_ms > 0 and now_ms - then_ms >= added_ms / 2:
        return SEEN, told
    return NOT_SEEN, told + f": a rise of at least {added_ms / 2:g} ms was needed"


def measure_bandwidth(fault: Fault, ctx: Context) -> tuple[EffectState, str]:
    """bandwidth on a client or replication link: a rate limit bites when the link needs
    more than it allows, and then the sends wait in line: the median acknowledgement
    latency of sends to partitions a target led at least doubled, and rose by at least
    :data:`BANDWIDTH_RISE_MS`, against as long a stretch right before the fault. A limit
    above what the link carries leaves it as it was (not seen); ``rate_kbps`` 0 is no
    limit at all in Toxiproxy. A controller link carries no send: not measured."""
    found = _ack_latency_medians(fault, ctx)
    if not isinstance(found, _Medians):
        return found
    now_ms, then_ms, told = found.now_ms, found.then_ms, found.told
    rate = fault.params.get("rate_kbps", 64)
    told += f"; limit {rate} KB/s"
    if not isinstance(rate, int | float) or rate <= 0:
        return NOT_SEEN, told + ": a rate of 0 is no limit"
    if now_ms >= 2 * then_ms and now_ms - then_ms >= BANDWIDTH_RISE_MS:
        return SEEN, told
    return NOT_SEEN, (
        told + f": at least twice as slow and {BANDWIDTH_RISE_MS:g} ms slower was needed"
    )


# -- black holes: the acknowledgements stopped --------------------------------------------
def _acks(ctx: Context, brokers: set[int], start: int, end: int) -> list[int]:
    """Completion times of the ``ok`` sends completed in [start, end] to a partition a
    broker of ``brokers`` led at the completion, in order."""
    facts = ctx.facts
    times, vids = ctx.completed()
    out = []
    for i in range(bisect_left(times, start), bisect_right(times, end)):
        tp = facts.ack_tp[vids[i]]
        if tp >= 0 and ctx.leader(tp, times[i]) in brokers:
            out.append(times[i])
    return out


def measure_ack_gap(fault: Fault, ctx: Context) -> tuple[EffectState, str]:
    """timeout (a black-holed client or replication link), reset-peer (every connection
    reset once data arrives on it, the data dropped: Toxiproxy's reset_peer toxic) and
    client-cut: the sends to partitions a target leads stop being acknowledged. Seen
    when, with at least :data:`MIN_SENDS` such acknowledgements in as long a stretch
    before the fault, the longest stretch of the fault without one lasts at least half
    the fault (and 1 s)."""
    if fault.params.get("link") == "controller":
        return NOT_MEASURED, "a controller link carries no send; heartbeat delays are not kept"
    brokers, others = broker_targets(fault)
    if not brokers:
        return no_broker(others)
    if fault.stop_time is None:
        return NOT_SEEN, "the fault never stopped: no stretch to measure"
    start, stop = fault.start_time, fault.stop_time
    length = stop - start
    before = _acks(ctx, set(brokers), max(0, start - max(length, BASELINE_MIN_NS)), start)
    who = f"sends to partitions led by broker(s) {', '.join(map(str, brokers))}"
    if len(before) < MIN_SENDS:
        return NOT_SEEN, (
            f"too few acknowledged {who} before the fault to tell a stop: {len(before)}"
            f" (at least {MIN_SENDS})"
        )
    during = _acks(ctx, set(brokers), start, stop)
    edges = [start, *during, stop]
    gap = max(b - a for a, b in zip(edges, edges[1:], strict=False))
    told = (
        f"longest stretch without an acknowledgement of {who}: {gap / _NS:.1f} s of the"
        f" fault's {length / _NS:.1f} s ({len(during)} acknowledged during it,"
        f" {len(before)} before)"
    )
    if gap >= max(length / 2, 1e9):
        return SEEN, told
    return NOT_SEEN, told + ": at least half the fault was needed"


# -- zombie: the replacement fenced the stopped client --------------------------------------
def measure_zombie(fault: Fault, ctx: Context) -> tuple[EffectState, str]:
    """zombie: the replacement process (``detail.replacement``) completed a ``txn-init`` of
    the stopped client's transactional id after the stopped one's last, fencing it."""
    tid = fault.detail.get("transactional_id")
    old, new = fault.detail.get("process"), fault.detail.get("replacement")
    if tid is None or new is None:
        return NOT_SEEN, "the start line names no replacement (its init did not complete)"
    inits = [i for i in ctx.facts.txn.inits if i.transactional_id == tid]
    last_old = max((i.time for i in inits if i.process == old), default=-1)
    fenced = [
        i
        for i in inits
        if i.process == new and i.time > last_old and i.time <= _end(fault, ctx.facts)
    ]
    if fenced:
        first = fenced[0]
        epoch = "" if first.producer_epoch is None else f" (epoch {first.producer_epoch})"
        return SEEN, (
            f"process {new} initialised {tid} at {_s(first.time)}{epoch}, after"
            f" process {old}'s last init: the stopped producer is fenced"
        )
    return NOT_SEEN, f"no txn-init of {tid} by process {new} after process {old}'s"


# -- families whose effect a run does not keep --------------------------------------------
def _not_kept(why: str) -> Measure:
    def measure(fault: Fault, ctx: Context) -> tuple[EffectState, str]:
        return NOT_MEASURED, why

    return measure


#: Every fault family (:func:`kchaos.faults.registry`) and its measure.
MEASURES: dict[str, Measure] = {
    "latency": measure_latency,
    "bandwidth": measure_bandwidth,
    "timeout": measure_ack_gap,
    "reset-peer": measure_ack_gap,
    "slow-close": _not_kept("connection closes are not recorded"),
    "isolate": measure_partition,
    "split": measure_partition,
    "cut": measure_partition,
    "bridge": measure_partition,
    "hold-controller-requests": measure_hold,
    "client-cut": measure_ack_gap,
    "pause": measure_pause,
    "disk-stall": measure_freeze,
    "slow-disk": measure_freeze,
    "slow-sync": measure_flush,
    "disk-full": measure_disk_full,
    "kill": measure_crash,
    "term": measure_crash,
    "hard-reboot": measure_crash,
    "power-loss": measure_crash,
    "rolling-restart": measure_crash,
    "zombie": measure_zombie,
    "hold-request": measure_request_hold,
    "preferred-election": measure_preferred,
    "reassign": measure_reassign,
}
