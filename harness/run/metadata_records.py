"""From ``kafka-dump-log.sh --cluster-metadata-decoder`` text to ``controller.jsonl`` lines.

Pure functions (no Docker, no Kafka client): :func:`parse_dump` reads the tool's text,
:func:`convert` replays the metadata records the way the KRaft controller does and gives
the *whole* state of a partition or a broker after each record (history format 1.1,
"the controller's own record").

The replay rules follow Kafka's metadata schemas (``common/metadata/*.json``) and
``PartitionRegistration.merge`` / ``ClusterControlManager.replay``, the same in every
release from 3.3 to 4.4:

* ``PARTITION_RECORD`` sets a partition's whole state (ELR fields only from 3.7 on, an
  absent or null one is empty; ``leaderRecoveryState`` absent is 0, recovered).
* ``PARTITION_CHANGE_RECORD`` is a delta: ``leader`` -2 (or absent) is no change, any
  other value a new leader (-1: none) with ``leader_epoch`` + 1; ``isr``, ``replicas``,
  ``eligibleLeaderReplicas``, ``lastKnownElr`` null or absent are no change;
  ``leaderRecoveryState`` -1 or absent is no change (1: RECOVERING). Every change record
  adds one to ``partition_epoch``.
* ``REGISTER_BROKER_RECORD`` starts a registration: its ``brokerEpoch``, ``fenced`` (true
  where absent) and ``inControlledShutdown`` (false where absent, before 3.4).
* ``BROKER_REGISTRATION_CHANGE_RECORD``: ``fenced`` 1 fenced, -1 unfenced, 0 or absent no
  change; ``inControlledShutdown`` 1 shutting down, 0 or absent no change.
  ``FENCE_BROKER_RECORD`` / ``UNFENCE_BROKER_RECORD`` (older controllers) fence / unfence.
* ``UNREGISTER_BROKER_RECORD``: fenced, broker epoch -1.
* ``TOPIC_RECORD`` names a topic id; ``REMOVE_TOPIC_RECORD`` forgets the topic (no line).
* ``CLEAR_ELR_RECORD`` (4.x): the ELR and last-known ELR of the named topic's partitions
  (every topic's when the name is empty) become empty, partition epoch + 1, for each
  partition that had any (as ``ReplicationControlManager`` does in 4.4).
* ``BEGIN_`` / ``END_`` / ``ABORT_TRANSACTION_RECORD`` (KIP-868): what an aborted
  transaction changed is undone, its lines dropped.
* A record the tool could not decode (it prints ``Error at N, skipping.``) is left out
  with a warning, and it may have changed any partition: every run partition known then
  gets an ``incomplete`` line at its offset and ``"incomplete": true`` on all its later
  lines (a change of a run partition whose creation was not seen does the same for that
  partition), so the checker judges them from the samples instead (docs/run-directory.md).
  Every other record type is not about partitions or brokers.

A snapshot (``*.checkpoint``) holds whole records; when the dump has one, its records
are the starting state and the run's partitions and brokers get one line each for it,
marked ``"snapshot": true``, at offsets just below the snapshot's end offset (the offsets
of the records the snapshot replaced); segment records the snapshot already covers are
skipped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath
from typing import Any

import orjson

from kchaos.harness.errors import MetadataDumpError, RecordSkipped
from kchaos.harness.rundir.controller import (
    BrokerLine,
    ControllerLine,
    IncompleteLine,
    PartitionLine,
)

NO_LEADER = -1
NO_LEADER_CHANGE = -2  # PartitionChangeRecord.leader: the leader did not change
RECOVERY_NO_CHANGE = -1  # PartitionChangeRecord.leaderRecoveryState
RECOVERING = 1
FENCE, UNFENCE = 1, -1  # BrokerRegistrationChangeRecord.fenced (0: no change)
IN_CONTROLLED_SHUTDOWN = 1  # BrokerRegistrationChangeRecord.inControlledShutdown (0: none)
UNDECODABLE = "UNDECODABLE"  # DumpRecord.type of a record the tool printed an error for
INTERNAL_PREFIX = "__"  # __consumer_offsets, __transaction_state, __share_group_state

_DUMPING = re.compile(r"^Dumping (\S+)")
_BATCH = re.compile(r"^baseOffset: (-?\d+) lastOffset: (-?\d+)\b.*?\bCreateTime: (-?\d+)")
_RECORD = re.compile(r"^\| offset: (\S+) (?:CreateTime: (-?\d+) )?")
_PAYLOAD = " payload: "
_CHECKPOINT = re.compile(r"^(\d+)-(\d+)\.checkpoint$")


@dataclass(frozen=True)
class DumpRecord:
    """One metadata record of the dump (control records are not kept)."""

    offset: int
    create_time_ms: int
    type: str  # e.g. "PARTITION_CHANGE_RECORD"
    version: int
    data: Mapping[str, Any]
    file: str  # the segment or snapshot the record came from
    line: int  # 1-based line of the dump text
    source: str = "kafka-dump-log output"  # what the dump text is (for error messages)


@dataclass(frozen=True)
class DumpFile:
    """The records of one dumped file, in the file's order."""

    path: str
    records: tuple[DumpRecord, ...]

    @property
    def snapshot_end_offset(self) -> int | None:
        """For a ``*.checkpoint`` snapshot, the log offset it ends at (exclusive)."""
        match = _CHECKPOINT.match(PurePosixPath(self.path).name)
        return int(match.group(1)) if match else None


@dataclass
class Conversion:
    """What :func:`convert` produced, and what it had to pass over."""

    lines: list[ControllerLine] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    records: int = 0  # metadata records read
    # run partitions (topic, partition) whose record is incomplete: an undecodable record
    incomplete: set[tuple[str, int]] = field(default_factory=set)
    first_offset: int | None = None
    last_offset: int | None = None

    def jsonl(self) -> bytes:
        return b"".join(orjson.dumps(line.to_json()) + b"\n" for line in self.lines)


# -- parsing the tool's text ---------------------------------------------------------------
def parse_dump(text: str, *, source: str = "kafka-dump-log output") -> list[DumpFile]:
    """The metadata records of a ``--cluster-metadata-decoder`` dump, per dumped file.

    Lines the tool prints besides batches and records (headers, warnings, control
    records such as ``LeaderChange``) are passed over; a record line that cannot be read
    is a :class:`MetadataDumpError` naming ``source`` and the line.
    """
    files: list[tuple[str, list[DumpRecord]]] = []
    batch_time: int | None = None
    for no, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip("\r")
        dumping = _DUMPING.match(line)
        if dumping:
            files.append((dumping.group(1), []))
            batch_time = None
            continue
        batch = _BATCH.match(line)
        if batch:
            batch_time = int(batch.group(3))
            continue
        if not line.startswith("| offset:"):
            continue
        record = _RECORD.match(line)
        if record is None:
            raise MetadataDumpError("a record line without an offset", file=source, line=no)
        try:
            offset = int(record.group(1))
        except ValueError:
            raise MetadataDumpError(
                f"record offset {record.group(1)!r} is not an integer", file=source, line=no
            ) from None
        at = line.find(_PAYLOAD)
        if at < 0:
            continue  # a control record (LeaderChange, SnapshotHeader, KRaftVoters, ...)
        created = record.group(2)
        if created is None and batch_time is None:
            raise MetadataDumpError("a record with no CreateTime", file=source, line=no)
        create_ms = int(created) if created is not None else int(batch_time or 0)
        body = line[at + len(_PAYLOAD) :]
        data: Mapping[str, Any]
        if body.startswith(("Error at ", "Unknown record type ")):
            # the tool could not decode this record (e.g. a newer record version)
            typ, version, data = UNDECODABLE, -1, {"error": body}
        else:
            typ, version, data = _payload(body, source, no)
        if not files:
            files.append(("", []))
        files[-1][1].append(
            DumpRecord(offset, create_ms, typ, version, data, files[-1][0], no, source)
        )
    return [DumpFile(path, tuple(records)) for path, records in files]


def _payload(text: str, source: str, no: int) -> tuple[str, int, Mapping[str, Any]]:
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise MetadataDumpError(
            f"record payload is not JSON ({exc})", file=source, line=no
        ) from None
    if not isinstance(value, dict):
        raise MetadataDumpError("record payload is not a JSON object", file=source, line=no)
    typ, version, data = value.get("type"), value.get("version"), value.get("data")
    if not isinstance(typ, str):
        # the tool prints an error text in place of a record it could not decode
        raise MetadataDumpError(f"record payload has no type: {text[:200]}", file=source, line=no)
    if type(version) is not int or not isinstance(data, dict):
        raise MetadataDumpError(
            "record payload needs an integer 'version' and an object 'data'",
            file=source,
            line=no,
        )
    return typ, version, data


# -- replaying the records ---------------------------------------------------------------
def convert(
    files: Iterable[DumpFile],
    *,
    origin_unix_ns: int,
    topics: Iterable[str] | None = None,
) -> Conversion:
    """Replay the dumped records in log order into whole-state lines.

    ``origin_unix_ns``: the wall clock (ns since the epoch) of the history's time 0; a
    batch's CreateTime becomes ``time`` in ns since then, clamped to be at least 0 and
    never to go back along the file. ``topics``: the run's topics (None: every topic
    whose name does not start with ``__``). Every broker gets lines.
    """
    replay = _Replay(set(topics) if topics is not None else None, origin_unix_ns)
    ordered = list(files)
    snapshots = [f for f in ordered if f.snapshot_end_offset is not None and f.records]
    segments = [f for f in ordered if f.snapshot_end_offset is None]
    covered = -1
    if snapshots:
        latest = max(snapshots, key=lambda f: f.snapshot_end_offset or 0)
        covered = (latest.snapshot_end_offset or 0) - 1
        replay.load_snapshot(latest)
    for segment in segments:
        for record in segment.records:
            if record.offset <= covered:
                continue
            replay.apply(record)
    return replay.out


class _Replay:
    def __init__(self, topics: set[str] | None, origin_unix_ns: int) -> None:
        self.topics = topics
        self.origin = origin_unix_ns
        self.names: dict[str, str] = {}  # topic id -> name
        # The replayed state is kept as the lines the run directory holds
        # (kchaos.harness.rundir.controller); a partition's ``topic`` is its topic id
        # until it is written. Offset and time are set when a line is written.
        self.partitions: dict[tuple[str, int], PartitionLine] = {}  # (topic id, partition)
        self.brokers: dict[int, BrokerLine] = {}
        self.out = Conversion()
        self.last_time = 0
        self.last_offset = -1
        self.saved: tuple[Any, ...] | None = None  # the state at BEGIN_TRANSACTION_RECORD
        # (topic id, partition) of partitions an undecodable record may have changed
        self.incomplete: set[tuple[str, int]] = set()

    # time and offset along the file
    def _time(self, create_ms: int) -> int:
        t = max(create_ms * 1_000_000 - self.origin, 0, self.last_time)
        self.last_time = t
        return t

    def _wanted(self, topic_id: str) -> str | None:
        name = self.names.get(topic_id)
        if name is None:
            return None
        if self.topics is None:
            return None if name.startswith(INTERNAL_PREFIX) else name
        return name if name in self.topics else None

    # snapshot
    def load_snapshot(self, snap: DumpFile) -> None:
        end = snap.snapshot_end_offset or 0
        for record in snap.records:
            self._replay(record, silent=True)
        time_ms = max(r.create_time_ms for r in snap.records)
        keys = sorted(
            (self.names[tid], part, tid)
            for tid, part in self.partitions
            if self._wanted(tid) is not None
        )
        count = len(keys) + len(self.brokers)
        offset = max(end - count, 0)
        time = self._time(time_ms)
        for name, part, tid in keys:
            state = self.partitions[(tid, part)]
            gap = (tid, part) in self.incomplete
            self._add(
                replace(state, offset=offset, time=time, topic=name, snapshot=True, incomplete=gap)
            )
            offset += 1
        for broker in sorted(self.brokers):
            self._add(replace(self.brokers[broker], offset=offset, time=time, snapshot=True))
            offset += 1
        self.out.warnings.append(
            f"the log's segments start after offset 0: started from snapshot {snap.path}"
        )

    def _add(self, line: ControllerLine) -> None:
        if line.offset <= self.last_offset:
            self.out.warnings.append(
                f"offset {line.offset} not after {self.last_offset}: record left out"
            )
            return
        self.last_offset = line.offset
        self.out.lines.append(line)

    # records
    def apply(self, record: DumpRecord) -> None:
        self._replay(record, silent=False)

    def _replay(self, record: DumpRecord, *, silent: bool) -> None:
        self.out.records += 1
        if not silent:
            if self.out.first_offset is None:
                self.out.first_offset = record.offset
            self.out.last_offset = record.offset
        if record.type == UNDECODABLE:
            self.out.warnings.append(f"offset {record.offset}: {record.data['error']}")
            line = self._undecodable(record, sorted(self.partitions), str(record.data["error"]))
            if line is not None and not silent:
                self._add(line)
            return
        handler = _HANDLERS.get(record.type)
        if handler is None:
            return
        try:
            line = handler(self, record, _Fields(record))
        except RecordSkipped as why:
            self.out.warnings.append(f"offset {record.offset} ({record.type}): {why}")
            return
        if line is not None and not silent:
            self._add(line)

    def _undecodable(
        self, r: DumpRecord, keys: list[tuple[str, int]], reason: str
    ) -> IncompleteLine | None:
        """Mark the run partitions among ``keys`` incomplete from ``r`` on; the line that
        says so at ``r``'s offset (None where none is a run partition)."""
        named = []
        for key in keys:
            name = self._wanted(key[0])
            if name is not None:
                self.incomplete.add(key)
                self.out.incomplete.add((name, key[1]))
                named.append((name, key[1]))
        if not named:
            return None
        return IncompleteLine(r.offset, self._time(r.create_time_ms), tuple(sorted(named)), reason)

    def _topic(self, r: DumpRecord, d: _Fields) -> None:
        self.names[d.string("topicId")] = d.string("name")

    def _begin(self, r: DumpRecord, d: _Fields) -> None:
        self.saved = (
            dict(self.names),
            dict(self.partitions),
            dict(self.brokers),
            len(self.out.lines),
            self.last_time,
            self.last_offset,
        )

    def _end(self, r: DumpRecord, d: _Fields) -> None:
        self.saved = None

    def _abort(self, r: DumpRecord, d: _Fields) -> None:
        """An aborted metadata transaction (KIP-868): its records never took effect."""
        if self.saved is None:
            raise RecordSkipped("abort without a transaction")
        names, parts, brokers, count, last_time, last_offset = self.saved
        self.names, self.partitions, self.brokers = names, parts, brokers
        del self.out.lines[count:]
        self.last_time, self.last_offset = last_time, last_offset
        self.saved = None

    def _clear_elr(self, r: DumpRecord, d: _Fields) -> ControllerLine | None:
        """4.x: empty the ELR and last-known ELR of one topic's partitions (every topic's
        when the name is empty), each changed partition's epoch + 1. One record can change
        several partitions but a line has one offset: a line is written when exactly one
        run partition changed, else their next lines show the change (and a warning)."""
        name = d.optional_string("topicName")
        changed = []
        for key, old in sorted(self.partitions.items()):
            if name and self.names.get(key[0]) != name:
                continue
            if not old.elr and not old.last_known_elr:
                continue
            new = replace(old, partition_epoch=old.partition_epoch + 1, elr=(), last_known_elr=())
            self.partitions[key] = new
            if self._wanted(key[0]) is not None:
                changed.append((key, new))
        if len(changed) == 1:
            return self._partition_out(r, *changed[0])
        if changed:
            raise RecordSkipped(f"cleared the ELRs of {len(changed)} run partitions (no line each)")
        return None

    def _remove_topic(self, r: DumpRecord, d: _Fields) -> None:
        tid = d.string("topicId")
        self.names.pop(tid, None)
        for key in [k for k in self.partitions if k[0] == tid]:
            del self.partitions[key]

    def _partition_record(self, r: DumpRecord, d: _Fields) -> ControllerLine | None:
        key = (d.string("topicId"), d.integer("partitionId"))
        state = PartitionLine(
            offset=r.offset,
            time=0,
            topic=key[0],
            partition=key[1],
            leader=d.integer("leader", NO_LEADER),
            leader_epoch=d.integer("leaderEpoch", -1),
            partition_epoch=d.integer("partitionEpoch", -1),
            isr=d.ids("isr"),
            elr=d.ids("eligibleLeaderReplicas", ()),
            last_known_elr=d.ids("lastKnownElr", ()),
            replicas=d.ids("replicas"),
            recovering=d.integer("leaderRecoveryState", 0) == RECOVERING,
        )
        self.partitions[key] = state
        return self._partition_out(r, key, state)

    def _partition_change(self, r: DumpRecord, d: _Fields) -> ControllerLine | None:
        key = (d.string("topicId"), d.integer("partitionId"))
        old = self.partitions.get(key)
        if old is None:
            if key not in self.incomplete and self._wanted(key[0]) is not None:
                # a run partition whose creation the replay never saw (not decoded)
                self.out.warnings.append(
                    f"offset {r.offset}: change of partition {key[0]}/{key[1]}, never created"
                )
                return self._undecodable(r, [key], "change of a partition never created")
            raise RecordSkipped(f"change of unknown partition {key[0]}/{key[1]}")
        leader = d.integer("leader", NO_LEADER_CHANGE)
        recovery = d.integer("leaderRecoveryState", RECOVERY_NO_CHANGE)
        changed = leader != NO_LEADER_CHANGE
        state = replace(
            old,
            leader=leader if changed else old.leader,
            leader_epoch=old.leader_epoch + 1 if changed else old.leader_epoch,
            partition_epoch=old.partition_epoch + 1,
            isr=d.ids("isr", old.isr),
            elr=d.ids("eligibleLeaderReplicas", old.elr),
            last_known_elr=d.ids("lastKnownElr", old.last_known_elr),
            replicas=d.ids("replicas", old.replicas),
            recovering=old.recovering if recovery == RECOVERY_NO_CHANGE else recovery == RECOVERING,
        )
        self.partitions[key] = state
        return self._partition_out(r, key, state)

    def _partition_out(
        self, r: DumpRecord, key: tuple[str, int], state: PartitionLine
    ) -> ControllerLine | None:
        name = self._wanted(key[0])
        if name is None:
            return None
        return replace(
            state,
            offset=r.offset,
            time=self._time(r.create_time_ms),
            topic=name,
            incomplete=key in self.incomplete,
        )

    def _register(self, r: DumpRecord, d: _Fields) -> ControllerLine:
        broker = d.integer("brokerId")
        state = BrokerLine(
            offset=r.offset,
            time=0,
            broker=broker,
            broker_epoch=d.integer("brokerEpoch"),
            fenced=d.boolean("fenced", True),
            shutting_down=d.boolean("inControlledShutdown", False),
        )
        return self._broker_out(r, broker, state)

    def _registration_change(self, r: DumpRecord, d: _Fields) -> ControllerLine:
        broker, epoch = d.integer("brokerId"), d.integer("brokerEpoch")
        old = self._current(broker, epoch)
        fenced = d.integer("fenced", 0)
        shutdown = d.integer("inControlledShutdown", 0)
        if fenced not in (FENCE, UNFENCE, 0):
            raise RecordSkipped(f"unknown value {fenced} for fenced")
        if shutdown not in (IN_CONTROLLED_SHUTDOWN, 0):
            raise RecordSkipped(f"unknown value {shutdown} for inControlledShutdown")
        state = replace(
            old,
            fenced=old.fenced if fenced == 0 else fenced == FENCE,
            shutting_down=old.shutting_down or shutdown == IN_CONTROLLED_SHUTDOWN,
        )
        return self._broker_out(r, broker, state)

    def _fence(self, r: DumpRecord, d: _Fields, fenced: bool) -> ControllerLine:
        broker, epoch = d.integer("id"), d.integer("epoch")
        old = self._current(broker, epoch)
        return self._broker_out(r, broker, replace(old, fenced=fenced))

    def _unregister(self, r: DumpRecord, d: _Fields) -> ControllerLine:
        broker = d.integer("brokerId")
        gone = BrokerLine(r.offset, 0, broker, -1, fenced=True, shutting_down=False)
        return self._broker_out(r, broker, gone)

    def _current(self, broker: int, epoch: int) -> BrokerLine:
        old = self.brokers.get(broker)
        if old is None:
            raise RecordSkipped(f"no registration of broker {broker}")
        if old.broker_epoch != epoch:
            raise RecordSkipped(
                f"broker {broker} is registered with epoch {old.broker_epoch}, not {epoch}"
            )
        return old

    def _broker_out(self, r: DumpRecord, broker: int, state: BrokerLine) -> ControllerLine:
        if state.broker_epoch < 0:
            self.brokers.pop(broker, None)
        else:
            self.brokers[broker] = state
        return replace(state, offset=r.offset, time=self._time(r.create_time_ms))


_MISSING: Any = object()


class _Fields:
    """Typed access to a record's ``data``; a wrong type is a MetadataDumpError."""

    def __init__(self, record: DumpRecord) -> None:
        self.record = record

    def _get(self, name: str, default: Any) -> Any:
        value = self.record.data.get(name, _MISSING)
        if value is _MISSING or value is None:
            if default is _MISSING:
                self._fail(name, "is missing")
            return default
        return value

    def _fail(self, name: str, what: str) -> None:
        r = self.record
        where = f" of {r.file}" if r.file else ""
        raise MetadataDumpError(
            f"{r.type} at offset {r.offset}{where}: {what}", file=r.source, line=r.line, field=name
        )

    def integer(self, name: str, default: Any = _MISSING) -> int:
        value = self._get(name, default)
        if type(value) is not int:
            self._fail(name, f"expected an integer, got {value!r}")
        return int(value)

    def boolean(self, name: str, default: Any = _MISSING) -> bool:
        value = self._get(name, default)
        if type(value) is not bool:
            self._fail(name, f"expected true or false, got {value!r}")
        return bool(value)

    def optional_string(self, name: str) -> str:
        value = self._get(name, "")
        if not isinstance(value, str):
            self._fail(name, f"expected a string, got {value!r}")
        return str(value)

    def string(self, name: str) -> str:
        value = self._get(name, _MISSING)
        if not isinstance(value, str):
            self._fail(name, f"expected a string, got {value!r}")
        return str(value)

    def ids(self, name: str, default: Any = _MISSING) -> tuple[int, ...]:
        value = self._get(name, default)
        if isinstance(value, tuple):
            return value
        if not isinstance(value, list) or any(type(v) is not int for v in value):
            self._fail(name, f"expected a list of broker ids, got {value!r}")
        return tuple(value)


_HANDLERS: dict[str, Any] = {
    "TOPIC_RECORD": _Replay._topic,
    "REMOVE_TOPIC_RECORD": _Replay._remove_topic,
    "PARTITION_RECORD": _Replay._partition_record,
    "PARTITION_CHANGE_RECORD": _Replay._partition_change,
    "REGISTER_BROKER_RECORD": _Replay._register,
    "BROKER_REGISTRATION_CHANGE_RECORD": _Replay._registration_change,
    "FENCE_BROKER_RECORD": lambda self, r, d: self._fence(r, d, True),
    "UNFENCE_BROKER_RECORD": lambda self, r, d: self._fence(r, d, False),
    "UNREGISTER_BROKER_RECORD": _Replay._unregister,
    "CLEAR_ELR_RECORD": _Replay._clear_elr,
    "BEGIN_TRANSACTION_RECORD": _Replay._begin,
    "END_TRANSACTION_RECORD": _Replay._end,
    "ABORT_TRANSACTION_RECORD": _Replay._abort,
}


def snapshot_to_read(names: Iterable[str]) -> str | None:
    """Of a ``__cluster_metadata-0`` directory listing: the newest snapshot to read, when
    the log's first segment no longer starts at offset 0 (segments were cleaned)."""
    names = list(names)
    segments = sorted(int(n[:-4]) for n in names if re.fullmatch(r"\d+\.log", n))
    if not segments or segments[0] == 0:
        return None
    first = segments[0]
    usable = []
    for n in names:
        match = _CHECKPOINT.match(n)
        if match and int(match.group(1)) >= first:
            usable.append((int(match.group(1)), int(match.group(2)), n))
    return max(usable)[2] if usable else None
