"""The controller's own record, ``controller.jsonl`` (history format 1.1), for the checkers.

Each line is the whole committed state of one partition or one broker after a record of
the KRaft metadata log was applied, so the file is read line by line with no replay.
Where the file is present it is the truth for leaders, ISRs and ELRs: elections,
``acked-below-min-isr`` and offline windows are judged from it for every partition it
describes (the monitor's samples remain the fallback for partitions it does not).

The lines are read by the run directory's reader
(:func:`kchaos.harness.rundir.controller.read_controller_lines`): bad input raises
HistoryError naming the file, the line and the field.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from kchaos.harness.rundir.controller import (
    BrokerLine,
    IncompleteLine,
    PartitionLine,
    read_controller_lines,
)
from kchaos.harness.rundir.names import CONTROLLER_JSONL
from kchaos.harness.rundir.rundir import RunDir

ElectionKind = Literal["clean", "last-known-leader", "unclean"]


# The line types are the run directory's (kchaos.harness.rundir.controller); the checker
# calls a partition line a state.
PartitionState = PartitionLine
BrokerState = BrokerLine


#: Why a replica left an ISR: the one vocabulary of ``stats.isr.shrinks`` (docs/checker.md).
#: Read from the controller's record: ``fenced`` (its session expired), ``shutdown`` (it
#: was shutting down), ``reassigned`` (it left the replica set too), ``other`` (a removal
#: no leader can have asked for: of the leader itself, with no leader, or in a commit
#: that changed the leader, which an AlterPartition never does). The rest came
#: from a leader's AlterPartition: ``leader`` (with the leader's own log line as evidence
#: where the run kept the nodes' logs, by elimination where it did not) and
#: ``unexplained`` (the logs were kept, and no leader logged this shrink).
ShrinkCause = Literal["fenced", "shutdown", "reassigned", "other", "leader", "unexplained"]


@dataclass(frozen=True)
class ShrinkEvidence:
    """The leader's own ``Shrinking ISR`` line behind one removal (Partition.maybeShrinkIsr)."""

    broker: int  # the leader that logged it: the sender of the AlterPartition
    log: str  # ``<container>/server.log:<line>``, relative to the run's logs/
    time: int  # the line's time on the history's time base (ns)
    lag_ms: int | None  # the line's time minus the follower's lastCaughtUpTimeMs
    last_caught_up_ms: int | None  # lastCaughtUpTimeMs as printed; None: absent or unknown
    follower_end_offset: int | None  # None where the leader printed ``unknown``
    leader_end_offset: int

    def to_json(self) -> dict[str, Any]:
        return {
            "broker": self.broker,
            "log": self.log,
            "time_s": round(self.time / 1e9, 6),
            "lag_ms": self.lag_ms,
            "last_caught_up_ms": self.last_caught_up_ms,
            "follower_end_offset": self.follower_end_offset,
            "leader_end_offset": self.leader_end_offset,
        }


@dataclass(frozen=True)
class Shrink:
    """One replica leaving one ISR in the controller's record."""

    topic: str
    partition: int
    broker: int
    cause: ShrinkCause
    at: PartitionState
    evidence: ShrinkEvidence | None = None
    # the partition's line before ``at``: the state a leader must have known to ask
    before: PartitionState | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "topic": self.topic,
            "partition": self.partition,
            "broker": self.broker,
            "cause": self.cause,
            "time_s": round(self.at.time / 1e9, 6),
            "isr_after": list(self.at.isr),
            "elr_after": list(self.at.elr),
            "controller_offset": self.at.offset,
        }
        if self.evidence is not None:
            out["evidence"] = self.evidence.to_json()
        return out


@dataclass(frozen=True)
class Election:
    """A partition line whose leader is set and differs from the previous line's."""

    topic: str
    partition: int
    kind: ElectionKind
    before: PartitionState
    after: PartitionState

    @property
    def from_elr(self) -> bool:
        """The new leader was an eligible leader replica, not an ISR member (KIP-966)."""
        leader = self.after.leader
        return leader in self.before.elr and leader not in self.before.isr

    def example(self, record: ControllerRecord) -> dict[str, Any]:
        """What a person needs to see the election, for results.json and the report."""
        ex: dict[str, Any] = {
            "topic": self.topic,
            "partition": self.partition,
            "old_leader": self.before.leader,
            "new_leader": self.after.leader,
            "leader_epoch": self.after.leader_epoch,
            "previous_isr": list(self.before.isr),
            "previous_elr": list(self.before.elr),
            "previous_last_known_elr": list(self.before.last_known_elr),
            "recovering": self.after.recovering,
            "time_s": round(self.after.time / 1e9, 3),
            "source": CONTROLLER_JSONL,
            "controller_offsets": [self.before.offset, self.after.offset],
            "controller_lines": [self.before.line, self.after.line],
        }
        reg = record.registration_before(self.after.leader, self.after.offset)
        if reg is not None:
            ex["new_leader_broker_epoch"] = reg.broker_epoch
            ex["new_leader_registered_s"] = round(reg.time / 1e9, 3)
        return ex


@dataclass
class ControllerRecord:
    """Everything ``controller.jsonl`` says, per partition and per broker, in log order."""

    path: str
    partitions: dict[tuple[str, int], list[PartitionState]] = field(default_factory=dict)
    brokers: dict[int, list[BrokerState]] = field(default_factory=dict)
    lines: int = 0
    last_time: int = 0
    warnings: list[str] = field(default_factory=list)
    # partitions whose record is incomplete (a metadata record could not be decoded),
    # with their lines, set aside: the checkers judge them from the monitor's samples
    # (they are not in ``partitions``); the report shows them marked
    incomplete: dict[tuple[str, int], list[PartitionState]] = field(default_factory=dict)

    def covers(self, topic: str, partition: int) -> bool:
        return (topic, partition) in self.partitions

    def elections(self) -> Iterator[Election]:
        """Every election, classified (format 1.1, "Elections"), partition by partition."""
        for (topic, part), states in self.partitions.items():
            for before, after in zip(states, states[1:], strict=False):
                if after.leader < 0 or after.leader == before.leader:
                    continue
                yield Election(topic, part, classify(before, after), before, after)

    def isr_shrinks(self) -> Iterator[Shrink]:
        """Every committed removal of a replica from an ISR, with who caused it.

        The controller removes a broker it fenced (its session expired), one that is
        shutting down, and one a reassignment took out of the replicas; a removal of the
        leader itself, with no leader, or in a commit that changed the leader is
        ``other`` (an AlterPartition does none of these). Any other removal came from the
        leader's AlterPartition (the leader judged the follower more than
        ``replica.lag.time.max.ms`` behind: KIP-501's case when the leader itself was the
        slow one), and is ``leader`` here, by elimination: the record does not name the
        sender. :func:`kchaos.harness.checker.leaderlog.explain` reads the leader's own
        log line for it where the run kept the nodes' logs. The broker's state is taken at the
        partition line's offset, and a broker line of the same batch (same CreateTime)
        counts even when it comes after: the controller writes the partition changes
        of a fencing first and the broker's fenced state last (seen on 4.4.0: the ISR
        change at offset 130, the fence at 134, one batch).
        """
        for (topic, part), states in self.partitions.items():
            for before, after in zip(states, states[1:], strict=False):
                for broker in before.isr:
                    if broker in after.isr:
                        continue
                    cause = self._removal_cause(broker, before, after)
                    yield Shrink(topic, part, broker, cause, after, before=before)

    def _removal_cause(
        self, broker: int, before: PartitionState, at: PartitionState
    ) -> ShrinkCause:
        state = None
        for candidate in self.brokers.get(broker, ()):
            if candidate.offset > at.offset and candidate.time != at.time:
                break
            state = candidate
        if state is not None and state.fenced:
            return "fenced"
        if state is not None and state.shutting_down:
            return "shutdown"
        if broker not in at.replicas:
            return "reassigned"
        # an AlterPartition never changes the leader, nor drops the leader itself
        if at.leader != -1 and broker != at.leader and at.leader == before.leader:
            return "leader"
        return "other"

    def registrations(self, broker: int) -> list[BrokerState]:
        """The broker lines that start a new incarnation (a new broker epoch)."""
        out: list[BrokerState] = []
        last = None
        for state in self.brokers.get(broker, ()):
            if state.broker_epoch >= 0 and state.broker_epoch != last:
                out.append(state)
            last = state.broker_epoch
        return out

    def registration_before(self, broker: int, offset: int) -> BrokerState | None:
        regs = self.registrations(broker)
        i = bisect_right([r.offset for r in regs], offset)
        return regs[i - 1] if i else None

    def offline_windows(self, end_time: int) -> list[dict[str, Any]]:
        """Stretches with leader -1, from the line that lost the leader to the next line
        with one (still open at ``end_time`` when there is none)."""
        found = []
        for (topic, part), states in self.partitions.items():
            start: PartitionState | None = None
            for state in states:
                if state.leader < 0 and start is None:
                    start = state
                elif state.leader >= 0 and start is not None:
                    found.append(_window(topic, part, start, state, state.time))
                    start = None
            if start is not None:
                found.append(_window(topic, part, start, None, max(end_time, start.time)))
        found.sort(key=lambda w: (w["start_s"], w["topic"], w["partition"]))
        return found


def classify(before: PartitionState, after: PartitionState) -> ElectionKind:
    """Clean: the new leader was in the previous ISR or ELR, and the partition is not
    recovering. Last-known-leader: ISR and ELR were empty and the new leader was the last
    known ELR member (KIP-966), not recovering. Anything else is unclean."""
    leader = after.leader
    if after.recovering:
        return "unclean"
    if leader in before.isr or leader in before.elr:
        return "clean"
    if not before.isr and not before.elr and leader in before.last_known_elr:
        return "last-known-leader"
    return "unclean"


def _window(
    topic: str, part: int, start: PartitionState, end: PartitionState | None, end_time: int
) -> dict[str, Any]:
    offsets = [start.offset] + ([end.offset] if end is not None else [])
    return {
        "topic": topic,
        "partition": part,
        "start_s": round(start.time / 1e9, 6),
        "length_s": round((end_time - start.time) / 1e9, 6),
        "open": end is None,
        "source": CONTROLLER_JSONL,
        "controller_offsets": offsets,
    }


def load_controller(rd: RunDir) -> ControllerRecord | None:
    """The run's controller.jsonl when it is there, else None."""
    path = rd.controller
    if not path.exists():
        return None
    return read_controller(path)


def read_controller(path: str | Path) -> ControllerRecord:
    """Read and validate one ``controller.jsonl`` into per-partition and per-broker lists."""
    read = read_controller_lines(path)
    record = ControllerRecord(
        path=read.path, lines=read.count, last_time=read.last_time, warnings=read.warnings
    )
    for line in read.lines:
        if isinstance(line, PartitionLine):
            record.partitions.setdefault((line.topic, line.partition), []).append(line)
            if line.incomplete:
                record.incomplete.setdefault((line.topic, line.partition), [])
        elif isinstance(line, IncompleteLine):
            for key in line.partitions:
                record.incomplete.setdefault(key, [])
        else:
            record.brokers.setdefault(line.broker, []).append(line)
    # an incomplete partition is not the record's to judge: the samples are the fallback
    for key in record.incomplete:
        record.incomplete[key] = record.partitions.pop(key, [])
    return record
