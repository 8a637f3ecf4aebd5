"""The controller's own record, ``controller.jsonl`` (history format 1.1), for the checkers.

Each line is the whole committed state of one partition or one broker after a record of
the KRaft metadata log was applied, so the file is read line by line with no replay.
Where the file is present it is the truth for leaders, ISRs and ELRs: elections,
``acked-below-min-isr`` and offline windows are judged from it for every partition it
describes (the monitor's samples remain the fallback for partitions it does not).

Bad input raises :class:`HistoryError` naming the file, the line (1-based) and the field;
a torn last line (no newline, not JSON) is ignored with a warning, as in the history.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import orjson

from kchaos.harness.checker.validate import Where
from kchaos.harness.errors import HistoryError

FILE_NAME = "controller.jsonl"

ElectionKind = Literal["clean", "last-known-leader", "unclean"]


@dataclass(frozen=True)
class PartitionState:
    """One partition line: the partition's committed state after the record."""

    line: int
    offset: int
    time: int
    leader: int
    leader_epoch: int
    partition_epoch: int
    isr: tuple[int, ...]
    elr: tuple[int, ...]
    last_known_elr: tuple[int, ...]
    replicas: tuple[int, ...]
    recovering: bool


@dataclass(frozen=True)
class BrokerState:
    """One broker line: the broker's registration after the record."""

    line: int
    offset: int
    time: int
    broker: int
    broker_epoch: int
    fenced: bool
    shutting_down: bool


ShrinkCause = Literal["fenced", "shutdown", "leader", "other"]


@dataclass(frozen=True)
class Shrink:
    """One replica leaving one ISR in the controller's record."""

    topic: str
    partition: int
    broker: int
    cause: ShrinkCause
    at: PartitionState

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "broker": self.broker,
            "cause": self.cause,
            "time_s": round(self.at.time / 1e9, 6),
            "isr_after": list(self.at.isr),
            "elr_after": list(self.at.elr),
            "controller_offset": self.at.offset,
        }


@dataclass(frozen=True)
class Election:
    """A partition line whose leader is set and differs from the previous line's."""

    topic: str
    partition: int
    kind: ElectionKind
    before: PartitionState
    after: PartitionState

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
            "source": FILE_NAME,
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

        The controller removes a broker it fenced (its session expired) or one that is
        shutting down; any other removal came from the leader's AlterPartition: the leader
        judged the follower more than ``replica.lag.time.max.ms`` behind (KIP-501's case
        when the leader itself was the slow one). The broker's state is taken at the
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
                    yield Shrink(topic, part, broker, self._removal_cause(broker, after), after)

    def _removal_cause(self, broker: int, at: PartitionState) -> ShrinkCause:
        state = None
        for candidate in self.brokers.get(broker, ()):
            if candidate.offset > at.offset and candidate.time != at.time:
                break
            state = candidate
        if state is not None and state.fenced:
            return "fenced"
        if state is not None and state.shutting_down:
            return "shutdown"
        if at.leader != -1 and broker != at.leader:
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
        "source": FILE_NAME,
        "controller_offsets": offsets,
    }


def load_controller(run_dir: str | Path) -> ControllerRecord | None:
    """``run_dir/controller.jsonl`` when it is there, else None."""
    path = Path(run_dir) / FILE_NAME
    if not path.exists():
        return None
    return read_controller(path)


def read_controller(path: str | Path) -> ControllerRecord:
    """Read and validate one ``controller.jsonl``."""
    path = Path(path)
    name = str(path)
    if path.is_dir():
        raise HistoryError("expected a file, found a directory", file=name)
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise HistoryError(f"cannot open: {exc.strerror}", file=name) from None
    record = ControllerRecord(path=name)
    where = Where(name)
    last_offset = -1
    last_time = 0
    no = 0
    with fh:
        for raw in fh:
            no += 1
            if not raw.strip():
                where.at(no).fail("empty line")
            try:
                line: Any = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                if not raw.endswith(b"\n"):
                    record.warnings.append(
                        f"{name}:{no}: torn last line ignored ({len(raw)} bytes)"
                    )
                    break
                where.at(no).fail(f"not JSON ({exc})")
            where.at(no)
            if type(line) is not dict:
                where.fail("expected a JSON object")
            offset = where.expect(line, "offset", int)
            time = where.expect(line, "time", int)
            typ = where.expect(line, "type", str)
            if offset <= last_offset:
                where.fail(f"offset {offset} not greater than the previous {last_offset}", "offset")
            if time < last_time:
                where.fail(f"time {time} earlier than the previous {last_time}", "time")
            last_offset, last_time = offset, time
            if typ == "partition":
                state = _partition(where, line, no, offset, time)
                key = (line["topic"], line["partition"])
                record.partitions.setdefault(key, []).append(state)
            elif typ == "broker":
                broker = _broker(where, line, no, offset, time)
                record.brokers.setdefault(broker.broker, []).append(broker)
            # other types: a later format's addition, ignored as the format says
    record.lines = no
    record.last_time = last_time
    return record


def _partition(
    where: Where, line: dict[str, Any], no: int, offset: int, time: int
) -> PartitionState:
    where.expect(line, "topic", str)
    part = where.expect(line, "partition", int)
    if part < 0:
        where.fail(f"a partition number cannot be negative, got {part}", "partition")
    leader = where.expect(line, "leader", int)
    if leader < -1:
        where.fail(f"expected a broker id or -1 (no leader), got {leader}", "leader")
    isr = _ids(where, line, "isr", required=True)
    return PartitionState(
        line=no,
        offset=offset,
        time=time,
        leader=leader,
        leader_epoch=_optional(where, line, "leader_epoch", -1),
        partition_epoch=_optional(where, line, "partition_epoch", -1),
        isr=isr,
        elr=_ids(where, line, "elr"),
        last_known_elr=_ids(where, line, "last_known_elr"),
        replicas=_ids(where, line, "replicas"),
        recovering=_optional(where, line, "recovering", False),
    )


def _broker(where: Where, line: dict[str, Any], no: int, offset: int, time: int) -> BrokerState:
    broker = where.expect(line, "broker", int)
    if broker < 0:
        where.fail(f"a broker id cannot be negative, got {broker}", "broker")
    return BrokerState(
        line=no,
        offset=offset,
        time=time,
        broker=broker,
        broker_epoch=_optional(where, line, "broker_epoch", -1),
        fenced=_optional(where, line, "fenced", False),
        shutting_down=_optional(where, line, "shutting_down", False),
    )


def _ids(
    where: Where, line: dict[str, Any], key: str, *, required: bool = False
) -> tuple[int, ...]:
    if key not in line and not required:
        return ()
    items = where.int_list(line, key)
    for item in items:
        if item < 0:
            where.fail(f"expected broker ids, got {item}", key)
    return tuple(items)


def _optional(where: Where, line: dict[str, Any], key: str, default: Any) -> Any:
    """``line[key]`` of exactly the default's type (int or bool), or the default."""
    if key not in line:
        return default
    return where.expect(line, key, type(default))
