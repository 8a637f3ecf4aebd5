"""The compact facts one pass over a history leaves behind, shared by every checker.

Memory is proportional to values, partitions and observations, never to poll lines:
per value a row in a few typed arrays; per partition a map offset -> value id for what
the polls read first there and one for what the drain read; per monitor observation a
row in small arrays.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kchaos.harness.checker.txnfacts import TxnLog

if TYPE_CHECKING:
    from kchaos.harness.checker.controller import ControllerRecord
    from kchaos.harness.checker.leaderlog import LeaderLog
    from kchaos.harness.checker.startlog import StartLog

# send status per value id; TXN_OPEN: a value of a transaction not completed (yet)
PENDING, OK, FAIL, INFO, READ_ONLY, TXN_OPEN = 0, 1, 2, 3, 4, 5
STATUS_NAMES = {PENDING: "pending", OK: "ok", FAIL: "fail", INFO: "info"}
TP_BITS = 20  # packed position = offset << TP_BITS | tp id


def pack(tp: int, offset: int) -> int:
    return (offset << TP_BITS) | tp


def unpack(packed: int) -> tuple[int, int]:
    return packed & ((1 << TP_BITS) - 1), packed >> TP_BITS


@dataclass
class DrainEnd:
    log_start_offset: int
    high_watermark: int
    index: int
    time: int = 0
    # version 1.2: the drain's isolation, and the last stable offset it found
    isolation: str | None = None
    last_stable_offset: int | None = None

    @property
    def readable_end(self) -> int:
        """Where the drain's complete view ends: the high watermark, or the last stable
        offset where a read_committed drain found it lower (it cannot read past it)."""
        stable = self.last_stable_offset
        if stable is None or self.isolation == "read_uncommitted":
            return self.high_watermark
        return min(stable, self.high_watermark)

    @property
    def whole(self) -> bool:
        """Drained completely (format 1.3's rule for a value whose partition is unknown):
        from log start 0, its last stable offset (where stated) equal to the high
        watermark."""
        stable = self.last_stable_offset
        return self.log_start_offset == 0 and (stable is None or stable == self.high_watermark)


@dataclass
class Observations:
    """Monitor observations of one partition, in history order."""

    index: array = field(default_factory=lambda: array("q"))
    time: array = field(default_factory=lambda: array("q"))
    leader: array = field(default_factory=lambda: array("i"))
    isr_size: array = field(default_factory=lambda: array("i"))
    min_insync: array = field(default_factory=lambda: array("i"))  # -1: not reported
    full: array = field(default_factory=lambda: array("b"))


@dataclass
class LeaderChange:
    """A leader that was in neither the previous ISR nor the previous ELR."""

    tp: int
    index: int
    previous_index: int
    time: int
    old_leader: int
    new_leader: int
    previous_isr: list[int]
    previous_elr: list[int] | None


@dataclass
class Fault:
    id: str
    fault: str
    targets: list[Any]
    start_index: int
    start_time: int
    stop_index: int | None = None
    stop_time: int | None = None
    error: str | None = None  # the fault could not start (its start line says why)
    # the start line's ``detail`` (what the fault resolved or found when it started)
    detail: dict[str, Any] = field(default_factory=dict)
    # the start line's ``params`` (what the fault was asked to do, e.g. ``latency_ms``)
    params: dict[str, Any] = field(default_factory=dict)
    # the stop line's ``detail`` (what it learnt after its start line, e.g. the exit
    # codes of a rolling restart's nodes)
    stop_detail: dict[str, Any] = field(default_factory=dict)


_BLOCK = 8192
# per-value arrays and their default for a value nobody has sent or read yet
_COLUMNS: tuple[tuple[str, str, int], ...] = (
    ("inv_index", "q", -1),
    ("inv_time", "q", -1),
    ("topic", "i", -1),
    ("status", "b", 4),  # READ_ONLY
    ("comp_index", "q", -1),
    ("comp_time", "q", -1),
    ("ack_tp", "i", -1),
    ("ack_off", "q", -1),
    ("acks_all", "b", -1),  # 1 all, 0 not all, -1 not stated on the send
    ("epoch", "i", 0),
    ("first", "q", -1),  # first packed position any reader found the value at
    ("drained_tp", "i", -1),  # tp the drain found it in; -2: several (see drained_tps)
)
_TEMPLATES = {name: array(code, [default]) * _BLOCK for name, code, default in _COLUMNS}


@dataclass
class Facts:
    """Everything the checkers need from a history, gathered in one streaming pass."""

    path: str
    # partitions
    tps: list[tuple[str, int]] = field(default_factory=list)
    tp_ids: dict[tuple[str, int], int] = field(default_factory=dict)
    topics: list[str] = field(default_factory=list)
    topic_ids: dict[str, int] = field(default_factory=dict)
    # values: value -> id, the row in the per-value arrays (see _COLUMNS)
    values: dict[str, int] = field(default_factory=dict)
    value_list: list[str] = field(default_factory=list)
    capacity: int = 0
    inv_index: array = field(default_factory=lambda: array("q"))
    inv_time: array = field(default_factory=lambda: array("q"))
    topic: array = field(default_factory=lambda: array("i"))
    status: array = field(default_factory=lambda: array("b"))
    comp_index: array = field(default_factory=lambda: array("q"))
    comp_time: array = field(default_factory=lambda: array("q"))
    ack_tp: array = field(default_factory=lambda: array("i"))
    ack_off: array = field(default_factory=lambda: array("q"))
    acks_all: array = field(default_factory=lambda: array("b"))
    epoch: array = field(default_factory=lambda: array("i"))
    first: array = field(default_factory=lambda: array("q"))
    drained_tp: array = field(default_factory=lambda: array("i"))
    extra: dict[int, set[int]] = field(default_factory=dict)  # further reader positions
    drained_tps: dict[int, set[int]] = field(default_factory=dict)
    # acknowledgements: per tp, in completion order, the value id of each ok (its offset
    # is in ack_off)
    acked_vid: list[array] = field(default_factory=list)
    # readers: per tp, offset -> first value id read there
    polled: list[dict[int, int]] = field(default_factory=list)
    drained: list[dict[int, int]] = field(default_factory=list)
    # (tp, offset, value id) a poll read where the polls had read another value first
    poll_conflicts: list[tuple[int, int, int]] = field(default_factory=list)
    # packed position -> the distinct value ids readers found there (only when > 1)
    read_conflicts: dict[int, set[int]] = field(default_factory=dict)
    drain_ends: dict[int, DrainEnd] = field(default_factory=dict)
    # ordering: (process, tp, previous offset, offset, line index)
    backwards: list[tuple[Any, int, int, int, int]] = field(default_factory=list)
    gaps: list[tuple[Any, int, int, int, int]] = field(default_factory=list)
    # monitor: per tp, and the tp of every observation in history order
    observations: list[Observations] = field(default_factory=list)
    obs_order: array = field(default_factory=lambda: array("i"))
    leader_changes: list[LeaderChange] = field(default_factory=list)
    # nemesis: fault windows and, per epoch, the faults open during it
    faults: list[Fault] = field(default_factory=list)
    epoch_faults: list[tuple[int, ...]] = field(default_factory=lambda: [()])
    # per epoch (by invoke time): completed sends [ok, fail, info] and ok latencies (ns)
    epoch_counts: list[list[int]] = field(default_factory=lambda: [[0, 0, 0]])
    epoch_latency: list[array] = field(default_factory=lambda: [array("q")])
    # the controller's own record (controller.jsonl), where the run has one
    controller: ControllerRecord | None = None
    # the leaders' ``Shrinking ISR`` and ``ISR updated`` lines (logs/<container>/server.log),
    # where the run kept the nodes' logs: who asked for each ISR shrink, when it applied it
    leader_log: LeaderLog | None = None
    # the brokers' start lines (log recovery, failed starts) in the same logs
    start_log: StartLog | None = None
    # transactions (history format 1.2)
    txn: TxnLog = field(default_factory=TxnLog)
    # bookkeeping
    lines: int = 0
    last_time: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def tp(self, topic: str, partition: int) -> int:
        key = (topic, partition)
        tp = self.tp_ids.get(key)
        if tp is None:
            tp = len(self.tps)
            self.tp_ids[key] = tp
            self.tps.append(key)
            self.polled.append({})
            self.acked_vid.append(array("q"))
            self.drained.append({})
            self.observations.append(Observations())
        return tp

    def topic_id(self, topic: str) -> int:
        tid = self.topic_ids.get(topic)
        if tid is None:
            tid = len(self.topics)
            self.topic_ids[topic] = tid
            self.topics.append(topic)
        return tid

    def grow(self) -> None:
        """Room for another block of values in every per-value array."""
        for name, _, _ in _COLUMNS:
            getattr(self, name).extend(_TEMPLATES[name])
        self.capacity += _BLOCK

    def trim(self) -> None:
        """Drop the unused tail of the per-value arrays (after the pass)."""
        n = len(self.value_list)
        for name, _, _ in _COLUMNS:
            del getattr(self, name)[n:]
        self.capacity = n

    def new_value(self, value: str) -> int:
        """A row for a value, with defaults (a send fills its fields)."""
        vid = len(self.value_list)
        if vid >= self.capacity:
            self.grow()
        self.values[value] = vid
        self.value_list.append(value)
        return vid

    def place(self, vid: int, packed: int) -> None:
        """A reader found value ``vid`` at a packed position."""
        r = self.first[vid]
        if r < 0:
            self.first[vid] = packed
        elif r != packed:
            self.extra.setdefault(vid, set()).add(packed)

    def read_at(self, tp: int, off: int, vid: int) -> None:
        """A reader other than a poll (a copier's consumed record, format 1.3) got value
        ``vid`` at offset ``off`` of ``tp``: kept as a polled record is (the history
        pass's poll loop does the same inline), so uncommitted-read, aborted-read,
        duplicate and inconsistent-offset see it; it starts no stretch of polling."""
        m = self.polled[tp]
        old = m.get(off)
        packed = (off << TP_BITS) | tp
        if old is None:
            m[off] = vid
            self.place(vid, packed)
            other = self.drained[tp].get(off)
            if other is not None and other != vid:
                self.read_conflicts.setdefault(packed, {other}).add(vid)
        elif old != vid:
            self.read_conflicts.setdefault(packed, {old}).add(vid)
            self.poll_conflicts.append((tp, off, vid))
            self.place(vid, packed)

    def drained_in(self, vid: int, tp: int) -> None:
        d = self.drained_tp[vid]
        if d == -1:
            self.drained_tp[vid] = tp
        elif d != tp:
            if d >= 0:
                self.drained_tps[vid] = {d}
                self.drained_tp[vid] = -2
            self.drained_tps[vid].add(tp)

    def in_drain(self, vid: int, tp: int) -> bool:
        d = self.drained_tp[vid]
        return d == tp or (d == -2 and tp in self.drained_tps[vid])

    def positions(self, vid: int) -> list[int]:
        first = self.first[vid]
        if first < 0:
            return []
        return [first, *sorted(self.extra.get(vid, ()))]

    def where(self, tp: int, offset: int | None = None) -> dict[str, Any]:
        topic, partition = self.tps[tp]
        out: dict[str, Any] = {"topic": topic, "partition": partition}
        if offset is not None:
            out["offset"] = offset
        return out

    def send_indexes(self, vid: int) -> list[int]:
        return [i for i in (self.inv_index[vid], self.comp_index[vid]) if i >= 0]

    def example(self, vid: int, tp: int, off: int, *, drain_end: bool = False) -> dict[str, Any]:
        """An anomaly's example about value ``vid`` at offset ``off`` of partition ``tp``:
        the value, where, its transaction (if any) and the indexes of its send; with
        ``drain_end``, also the partition's drain end (its index, log start offset and
        high watermark)."""
        ex = {
            "value": self.value_list[vid],
            **self.where(tp, off),
            **self.txn.describe(vid),
            "index": self.send_indexes(vid),
        }
        if drain_end:
            end = self.drain_ends[tp]
            ex["index"].append(end.index)
            ex["log_start_offset"] = end.log_start_offset
            ex["high_watermark"] = end.high_watermark
        return ex
