"""``controller.jsonl`` (history format 1.1): its line types and its one reader.

Each line is the whole committed state of one partition or one broker after a record of
the KRaft metadata log was applied. The runner writes the lines it converts from the
metadata log (:mod:`kchaos.harness.run.metadata_records` builds these same types and
writes ``to_json()``); the checker and the reports read them with
:func:`read_controller_lines`.

Bad input raises HistoryError naming the file, the line (1-based) and the field; a torn
last line is ignored with a warning, as in the history.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kchaos.harness.errors import HistoryError
from kchaos.harness.rundir.history import numbered
from kchaos.harness.rundir.names import CONTROLLER_JSONL as CONTROLLER_JSONL  # re-exported
from kchaos.harness.rundir.where import LineCursor

NO_LEADER = -1


@dataclass(frozen=True)
class PartitionLine:
    """One partition line: the partition's committed state after the record."""

    offset: int
    time: int  # ns since the run started (the history's clock)
    topic: str
    partition: int
    leader: int  # -1: none
    leader_epoch: int
    partition_epoch: int
    isr: tuple[int, ...]
    elr: tuple[int, ...]
    last_known_elr: tuple[int, ...]
    replicas: tuple[int, ...]
    recovering: bool
    snapshot: bool = False  # the state a metadata snapshot held
    line: int = 0  # 1-based line in the file it was read from (0: not read from one)
    # a metadata record before it could not be decoded: this state may be wrong
    incomplete: bool = False

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "offset": self.offset,
            "time": self.time,
            "type": "partition",
            "topic": self.topic,
            "partition": self.partition,
            "leader": self.leader,
            "leader_epoch": self.leader_epoch,
            "partition_epoch": self.partition_epoch,
            "isr": list(self.isr),
            "elr": list(self.elr),
            "last_known_elr": list(self.last_known_elr),
            "replicas": list(self.replicas),
            "recovering": self.recovering,
        }
        if self.snapshot:
            out["snapshot"] = True
        if self.incomplete:
            out["incomplete"] = True
        return out


@dataclass(frozen=True)
class IncompleteLine:
    """A metadata record the replay could not decode, at its own offset: the partitions
    it may have changed (every run partition known then), whose record is incomplete
    from here on (their later lines carry ``"incomplete": true``)."""

    offset: int
    time: int
    partitions: tuple[tuple[str, int], ...]
    reason: str
    line: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "offset": self.offset,
            "time": self.time,
            "type": "incomplete",
            "partitions": [{"topic": t, "partition": p} for t, p in self.partitions],
            "reason": self.reason,
        }


@dataclass(frozen=True)
class BrokerLine:
    """One broker line: the broker's registration after the record."""

    offset: int
    time: int
    broker: int
    broker_epoch: int  # -1: unregistered
    fenced: bool
    shutting_down: bool
    snapshot: bool = False
    line: int = 0

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "offset": self.offset,
            "time": self.time,
            "type": "broker",
            "broker": self.broker,
            "broker_epoch": self.broker_epoch,
            "fenced": self.fenced,
            "shutting_down": self.shutting_down,
        }
        if self.snapshot:
            out["snapshot"] = True
        return out


ControllerLine = PartitionLine | BrokerLine | IncompleteLine


@dataclass
class ControllerFile:
    """What :func:`read_controller_lines` read: the lines in file order."""

    path: str
    lines: list[ControllerLine] = field(default_factory=list)
    count: int = 0  # lines read, a torn last one included
    last_time: int = 0
    warnings: list[str] = field(default_factory=list)


def read_controller_lines(path: str | Path) -> ControllerFile:
    """Read and validate one ``controller.jsonl``; lines of a type this version does not
    know (a later format's addition) are skipped, as the format says."""
    path = Path(path)
    name = str(path)
    if path.is_dir():
        raise HistoryError("expected a file, found a directory", file=name)
    out = ControllerFile(path=name)
    where = LineCursor(name)
    last_offset = -1
    last_time = 0
    no = 0
    for no, line in numbered(path, strict=True, on_torn=out.warnings.append):
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
            out.lines.append(_partition(where, line, no, offset, time))
        elif typ == "broker":
            out.lines.append(_broker(where, line, no, offset, time))
        elif typ == "incomplete":
            out.lines.append(_incomplete(where, line, no, offset, time))
    out.count = no + (1 if out.warnings else 0)
    out.last_time = last_time
    return out


def _partition(
    where: LineCursor, line: dict[str, Any], no: int, offset: int, time: int
) -> PartitionLine:
    topic = where.expect(line, "topic", str)
    part = where.expect(line, "partition", int)
    if part < 0:
        where.fail(f"a partition number cannot be negative, got {part}", "partition")
    leader = where.expect(line, "leader", int)
    if leader < NO_LEADER:
        where.fail(f"expected a broker id or -1 (no leader), got {leader}", "leader")
    isr = _ids(where, line, "isr", required=True)
    return PartitionLine(
        offset=offset,
        time=time,
        topic=topic,
        partition=part,
        leader=leader,
        leader_epoch=_optional(where, line, "leader_epoch", -1),
        partition_epoch=_optional(where, line, "partition_epoch", -1),
        isr=isr,
        elr=_ids(where, line, "elr"),
        last_known_elr=_ids(where, line, "last_known_elr"),
        replicas=_ids(where, line, "replicas"),
        recovering=_optional(where, line, "recovering", False),
        snapshot=_optional(where, line, "snapshot", False),
        line=no,
        incomplete=_optional(where, line, "incomplete", False),
    )


def _incomplete(
    where: LineCursor, line: dict[str, Any], no: int, offset: int, time: int
) -> IncompleteLine:
    items = where.expect(line, "partitions", list)
    parts = []
    for item in items:
        if (
            type(item) is not dict
            or type(item.get("topic")) is not str
            or type(item.get("partition")) is not int
            or item["partition"] < 0
        ):
            where.fail(f"expected {{topic, partition}} objects, got {item!r}", "partitions")
        parts.append((item["topic"], item["partition"]))
    reason = _optional(where, line, "reason", "")
    return IncompleteLine(offset, time, tuple(parts), reason, no)


def _broker(where: LineCursor, line: dict[str, Any], no: int, offset: int, time: int) -> BrokerLine:
    broker = where.expect(line, "broker", int)
    if broker < 0:
        where.fail(f"a broker id cannot be negative, got {broker}", "broker")
    return BrokerLine(
        offset=offset,
        time=time,
        broker=broker,
        broker_epoch=_optional(where, line, "broker_epoch", -1),
        fenced=_optional(where, line, "fenced", False),
        shutting_down=_optional(where, line, "shutting_down", False),
        snapshot=_optional(where, line, "snapshot", False),
        line=no,
    )


def _ids(
    where: LineCursor, line: dict[str, Any], key: str, *, required: bool = False
) -> tuple[int, ...]:
    if key not in line and not required:
        return ()
    items = where.int_list(line, key)
    for item in items:
        if item < 0:
            where.fail(f"expected broker ids, got {item}", key)
    return tuple(items)


def _optional(where: LineCursor, line: dict[str, Any], key: str, default: Any) -> Any:
    """``line[key]`` of exactly the default's type (int or bool), or the default."""
    if key not in line:
        return default
    return where.expect(line, key, type(default))
