"""The leaders' own account of their ISRs: ``Shrinking ISR`` and ``ISR updated`` lines.

The controller's record (controller.jsonl) shows every committed ISR change but not who
asked for it: a KRaft ``PartitionChangeRecord`` does not name the broker whose
AlterPartition it applies. The leader says so itself. ``Partition.maybeShrinkIsr``
(core/src/main/scala/kafka/cluster/Partition.scala) logs, at INFO on the leader, just
before it sends the AlterPartition::

    [Partition slow-0 broker=2] Shrinking ISR from 1,3,2 to 2. Leader: (highWatermark:
    678, endOffset: 812). Out of sync replicas: (brokerId: 1, endOffset: 678,
    lastCaughtUpTimeMs: 1795648149444) (brokerId: 3, endOffset: 694, ...).

on one line, logger ``kafka.cluster.Partition``. The wording is the same on 3.9 and 4.x;
``lastCaughtUpTimeMs`` arrived in 3.6 (apache/kafka#13187), so a 3.5 or older line has
only ``brokerId`` and ``endOffset``, and either value may be ``unknown`` when the leader
has no state for that replica. Both forms are read.

:func:`explain` matches each removal the record can only attribute to a leader by
elimination with the line that asked for it; docs/checker.md, "Who shrank an ISR".

When the controller answers a leader's AlterPartition, the leader applies the committed
ISR and says so (``Partition.handleAlterPartitionUpdate``, INFO, same logger)::

    [Partition smoke-1 broker=3] ISR updated to 3 (under-min-isr) and version updated to 1

(``ISR updated to 1,2,3  and version updated to 2``, two spaces, where the ISR is not
under min.insync; the same words from 3.4 to 4.4). Until then the leader keeps counting
the ISR it had for its high watermark (its pending state), so a below-min ISR binds it
only from that line on; :meth:`LeaderLog.applied` finds it for ``acked-below-min-isr``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from kchaos.harness.checker.controller import PartitionState, Shrink, ShrinkEvidence
from kchaos.harness.rundir.nodelogs import (
    NodeLog,
    entry_unix_ms,
    history_time_ns,
    timed_node_logs,
)
from kchaos.harness.rundir.rundir import RunDir

#: How long before the controller's commit the leader's line may be: the AlterPartition
#: goes out right after the line, and the commit was within 31 ms of it on every shrink
#: of 4.4.0 and 3.9.1 busy-leader runs. A request held up on its way to a slow or
#: unreachable controller can be sent again without a new line, so allow well beyond.
MATCH_WINDOW_NS = 10_000_000_000
#: How long after the commit's time the line may be. controller.jsonl's time is the
#: metadata batch's CreateTime, taken when the controller opens the batch; a change can
#: join it for ``controller.quorum.append.linger.ms`` (25 ms by default) more. Seen on
#: 4.4.0 (runs/txn-coord-1): a line 5 ms after the time of the batch that committed it,
#: whose first change was another leader's. Twice the default linger.
BATCH_SLACK_NS = 50_000_000
#: How much earlier than the commit's time a leader's ``ISR updated`` line may be. The
#: leader applies a change only once the controller answers, after the commit; the log
#: prints whole milliseconds (the commit's time has nanoseconds), so allow one.
APPLY_SLACK_NS = 1_000_000

_MARK = "Shrinking ISR from "
_UPDATED_MARK = "] ISR updated to "
_UPDATED = re.compile(
    r"\[Partition (?P<topic>\S+)-(?P<partition>\d+) broker=(?P<leader>\d+)\] "
    r"ISR updated to (?P<isr>[\d,]*) *(?P<under>\(under-min-isr\))? *"
    r"and version updated to (?P<version>-?\d+)(?:\s|$)"
)
_SHRINK = re.compile(
    r"\[Partition (?P<topic>\S+)-(?P<partition>\d+) broker=(?P<leader>\d+)\] "
    r"Shrinking ISR from (?P<before>[\d,]*) to (?P<after>[\d,]*)\. "
    r"Leader: \(highWatermark: (?P<hw>-?\d+), endOffset: (?P<leo>-?\d+)\)\. "
    r"Out of sync replicas: (?P<replicas>(?:\([^)]*\) ?)+)\."
)
_REPLICA = re.compile(
    r"\(brokerId: (?P<broker>\d+), endOffset: (?P<leo>-?\d+|unknown)"
    r"(?:, lastCaughtUpTimeMs: (?P<caught>-?\d+|unknown))?\)"
)


@dataclass(frozen=True)
class OutOfSync:
    """One follower the leader judged out of sync, as the leader printed it."""

    broker: int
    end_offset: int | None  # None: ``unknown``
    last_caught_up_ms: int | None  # None: ``unknown``, or a release before 3.6


@dataclass(frozen=True)
class ShrinkMessage:
    """What one ``Shrinking ISR`` message says."""

    leader: int
    topic: str
    partition: int
    isr_before: tuple[int, ...]
    isr_after: tuple[int, ...]
    high_watermark: int
    leader_end_offset: int
    out_of_sync: tuple[OutOfSync, ...]

    def replica(self, broker: int) -> OutOfSync | None:
        for replica in self.out_of_sync:
            if replica.broker == broker:
                return replica
        return None


@dataclass(frozen=True)
class ShrinkLine:
    """One ``Shrinking ISR`` line of a leader's log: where, when, and what it says."""

    log: str  # ``<container>/server.log:<line>``
    unix_ms: int  # the entry's own timestamp
    time: int  # the same on the history's time base (ns)
    msg: ShrinkMessage

    def evidence(self, broker: int) -> ShrinkEvidence:
        """This line as the evidence for the removal of ``broker`` (one it names)."""
        replica = self.msg.replica(broker)
        if replica is None:
            raise ValueError(f"{self.log} does not name broker {broker} out of sync")
        caught = replica.last_caught_up_ms
        return ShrinkEvidence(
            broker=self.msg.leader,
            log=self.log,
            time=self.time,
            # 0 is no time at all (3.9.1 printed it for most followers of a busy-leader
            # run): no lag to tell; the value as printed stays in the evidence
            lag_ms=None if caught is None or caught <= 0 else self.unix_ms - caught,
            last_caught_up_ms=caught,
            follower_end_offset=replica.end_offset,
            leader_end_offset=self.msg.leader_end_offset,
        )


@dataclass(frozen=True)
class IsrUpdateMessage:
    """What one ``ISR updated`` message says: a leader applied a committed ISR that it
    had asked for."""

    leader: int  # the ``broker=`` of the line: the leader that applied it
    topic: str
    partition: int
    isr: tuple[int, ...]  # in the leader's order
    under_min_isr: bool  # the leader printed ``(under-min-isr)``
    partition_epoch: int  # ``version updated to``: the committed partition epoch


@dataclass(frozen=True)
class IsrUpdate:
    """One ``ISR updated`` line of a leader's log: where, when, and what it says."""

    log: str  # ``<container>/server.log:<line>``
    time: int  # the entry's time on the history's time base (ns)
    msg: IsrUpdateMessage


@dataclass
class LeaderLog:
    """Every ``Shrinking ISR`` and ``ISR updated`` line of a run's node logs, per
    partition in time order."""

    nodes: int  # server.log files read
    lines: dict[tuple[str, int], list[ShrinkLine]] = field(default_factory=dict)
    updates: dict[tuple[str, int], list[IsrUpdate]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def count(self) -> int:
        """How many ``Shrinking ISR`` lines there are."""
        return sum(len(found) for found in self.lines.values())

    def update_count(self) -> int:
        """How many ``ISR updated`` lines there are."""
        return sum(len(found) for found in self.updates.values())

    def add(self, line: ShrinkLine) -> None:
        self.lines.setdefault((line.msg.topic, line.msg.partition), []).append(line)

    def add_update(self, update: IsrUpdate) -> None:
        self.updates.setdefault((update.msg.topic, update.msg.partition), []).append(update)

    def sort(self) -> None:
        for found in self.lines.values():
            found.sort(key=lambda s: (s.time, s.log))
        for updates in self.updates.values():
            updates.sort(key=lambda u: (u.time, u.log))

    def applied(self, state: PartitionState, not_after: int | None = None) -> IsrUpdate | None:
        """The first line in which ``state``'s leader applied ``state`` itself: the same
        partition, logged by that leader (``broker=``), naming its partition epoch and
        its ISR (as a set), no earlier than :data:`APPLY_SLACK_NS` before its commit and,
        given ``not_after`` (when the leader's epoch ended), no later than that. None
        when no line fits: the change was the controller's (no AlterPartition to
        answer), the leader died first, or it was not logged."""
        if state.leader < 0:
            return None
        isr = set(state.isr)
        for update in self.updates.get((state.topic, state.partition), []):
            if update.time < state.time - APPLY_SLACK_NS:
                continue
            if not_after is not None and update.time > not_after:
                break
            said = update.msg
            if (
                said.leader == state.leader
                and said.partition_epoch == state.partition_epoch
                and set(said.isr) == isr
            ):
                return update
        return None


def parse_shrink(text: str) -> ShrinkMessage | None:
    """The fields of a ``Shrinking ISR`` message anywhere in ``text``; None when there is
    none. Raises ValueError naming the field when the message is there but malformed."""
    if _MARK not in text:
        return None
    match = _SHRINK.search(text)
    if match is None:
        raise ValueError("a 'Shrinking ISR' message not in Partition.maybeShrinkIsr's form")
    replicas = tuple(
        OutOfSync(
            broker=int(r["broker"]),
            end_offset=_maybe_int(r["leo"]),
            last_caught_up_ms=_maybe_int(r["caught"]),
        )
        for r in _REPLICA.finditer(match["replicas"])
    )
    if not replicas:
        raise ValueError("field 'Out of sync replicas': no (brokerId: ..) entry")
    return ShrinkMessage(
        leader=int(match["leader"]),
        topic=match["topic"],
        partition=int(match["partition"]),
        isr_before=_ids(match["before"]),
        isr_after=_ids(match["after"]),
        high_watermark=int(match["hw"]),
        leader_end_offset=int(match["leo"]),
        out_of_sync=replicas,
    )


def parse_isr_update(text: str) -> IsrUpdateMessage | None:
    """The fields of an ``ISR updated`` message anywhere in ``text``; None when there is
    none. Raises ValueError naming the form when the message is there but malformed."""
    if _UPDATED_MARK not in text:
        return None
    match = _UPDATED.search(text)
    if match is None:
        raise ValueError(
            "an 'ISR updated' message not in Partition.handleAlterPartitionUpdate's form"
        )
    return IsrUpdateMessage(
        leader=int(match["leader"]),
        topic=match["topic"],
        partition=int(match["partition"]),
        isr=_ids(match["isr"]),
        under_min_isr=match["under"] is not None,
        partition_epoch=int(match["version"]),
    )


def read_node_log(node: NodeLog, origin_unix_ns: int, into: LeaderLog) -> None:
    """Add ``node``'s ``Shrinking ISR`` and ``ISR updated`` lines to ``into``; a line that
    cannot be read becomes a warning naming its file and line (the logs are evidence, not
    the history under judgement: one odd line does not stop the check)."""
    for number, text in node.lines():
        try:
            msg = parse_shrink(text)
            update = None if msg is not None else parse_isr_update(text)
        except ValueError as exc:
            into.warnings.append(f"{node.where(number)}: {exc}")
            continue
        said = msg if msg is not None else update
        if said is None:
            continue
        unix_ms = entry_unix_ms(text)
        if unix_ms is None:
            into.warnings.append(f"{node.where(number)}: field 'timestamp': no [yyyy-MM-dd ...]")
            continue
        where = node.where(number)
        time = history_time_ns(unix_ms, origin_unix_ns)
        if node.node_id is not None and node.role == "broker" and said.leader != node.node_id:
            into.warnings.append(
                f"{where}: field 'broker': {said.leader}, in the log of node {node.node_id}"
            )
        if msg is not None:
            into.add(ShrinkLine(where, unix_ms, time, msg))
        elif update is not None:
            into.add_update(IsrUpdate(where, time, update))


def load_leader_log(rd: RunDir, origin_unix_ns: int | None = None) -> LeaderLog | None:
    """The ``Shrinking ISR`` and ``ISR updated`` lines of every node log the run kept;
    None when it kept none (old runs, fixtures). ``origin_unix_ns`` defaults to run.json's
    ``history_start_unix_ns``; without one the lines cannot be put on the history's time
    base, and the answer is None too (the caller says why)."""
    found = timed_node_logs(rd, origin_unix_ns)
    if found is None:
        return None
    log = LeaderLog(nodes=len(found.nodes))
    for node in found.nodes:
        read_node_log(node, found.origin_unix_ns, log)
    log.sort()
    return log


def explain(shrinks: list[Shrink], log: LeaderLog) -> tuple[list[Shrink], int]:
    """Each ``leader`` shrink with the leader's line that asked for it as its evidence, or
    ``unexplained`` when no line did; the other causes are the controller's and stay.

    A line asks for a committed removal when it is the same partition's, logged by the
    leader of the commit, names the removed broker out of sync, and leaves the ISR the
    commit has (as a set: the leader prints its own order), at most
    :data:`MATCH_WINDOW_NS` before the commit's time and not before the partition's
    previous line (the leader's request starts from that state), and at most
    :data:`BATCH_SLACK_NS` after the commit's time. The one closest to the commit is
    taken, and a line explains one commit only (the removals of one commit share it).
    Returns the shrinks and how many lines explained none (AlterPartitions the
    controller refused, or shrinks of partitions the record does not hold).
    """
    used: dict[str, int] = {}  # line -> controller offset it explains
    out: list[Shrink] = []
    for shrink in shrinks:
        if shrink.cause != "leader":
            out.append(shrink)
            continue
        line = _line_for(shrink, log.lines.get((shrink.topic, shrink.partition), []), used)
        if line is None:
            out.append(replace(shrink, cause="unexplained"))
            continue
        used[line.log] = shrink.at.offset
        out.append(replace(shrink, evidence=line.evidence(shrink.broker)))
    return out, log.count() - len(used)


def _line_for(shrink: Shrink, lines: list[ShrinkLine], used: dict[str, int]) -> ShrinkLine | None:
    at = shrink.at
    isr = set(at.isr)
    earliest = at.time - MATCH_WINDOW_NS
    if shrink.before is not None:
        # the AlterPartition names the partition epoch it starts from: a leader asks for
        # this change only once it knows the state before it, committed at that time
        earliest = max(earliest, shrink.before.time)
    best: ShrinkLine | None = None
    for line in lines:
        if line.time > at.time + BATCH_SLACK_NS:
            break
        if line.time < earliest:
            continue
        if used.get(line.log, at.offset) != at.offset:
            continue
        if line.msg.leader != at.leader or set(line.msg.isr_after) != isr:
            continue
        if line.msg.replica(shrink.broker) is None:
            continue
        if best is None or abs(at.time - line.time) < abs(at.time - best.time):
            best = line
    return best


def _ids(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(",") if part)


def _maybe_int(text: str | None) -> int | None:
    return None if text is None or text == "unknown" else int(text)
