"""The final read: every partition from its log start offset to its high watermark.

Run once faults are healed and producers stopped. For each partition the drain asks the
client for (log start offset, high watermark), reads that range with a manually assigned
consumer, and writes ``drain`` lines (records in the order read) and, once the range is
covered, one ``drain-end`` line with ``log_start_offset`` and ``high_watermark``.
Everything is retried until the deadline; a partition not covered by then gets no
``drain-end`` and the reason is logged and returned.

In a run with transactions (format 1.2) the drain reads ``read_committed``: it first
waits, at most ``lso_wait_s``, for each partition's last stable offset (asked through the
read_committed client, whose ListOffsets answer is the LSO) to reach its high watermark
(asked through a second, read_uncommitted client: transaction markers written by the
coordinator after the producers stopped still move it), then reads up to the LSO it
found. A read_committed reader never sees the offsets of control records and aborted
data, so progress is the client's position rather than the last record's offset. Its
``drain-end`` lines add ``isolation`` and ``last_stable_offset`` (below the high
watermark when a transaction was still open at the end of the wait).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

from kchaos.harness.cluster.retry import retry_call
from kchaos.harness.rundir.history import READ_COMMITTED
from kchaos.harness.rundir.history_writer import HistorySink
from kchaos.workloads.clients import ConsumerClient, TopicPartition, close_quietly
from kchaos.workloads.consumer import record_dicts
from kchaos.workloads.metrics import HarnessMetrics

log = logging.getLogger(__name__)

PROCESS = "drain"


@dataclass(frozen=True)
class DrainResult:
    """What was drained: per partition (low, high watermark, records read) or a reason."""

    drained: dict[TopicPartition, tuple[int, int, int]] = field(default_factory=dict)
    failed: dict[TopicPartition, str] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return not self.failed


@dataclass
class _Progress:
    low: int
    high: int
    next_offset: int
    count: int = 0
    last_progress: float = 0.0
    lso: int | None = None  # read_committed: the last stable offset, read up to it

    @property
    def target(self) -> int:
        return self.high if self.lso is None else min(self.lso, self.high)


def drain(
    factory: Callable[[], ConsumerClient],
    topics: Sequence[str],
    sink: HistorySink,
    *,
    deadline_s: float = 120.0,
    poll_timeout_s: float = 1.0,
    max_records: int = 2000,
    stall_s: float = 10.0,
    request_timeout_s: float = 5.0,
    metrics: HarnessMetrics | None = None,
    clock: Callable[[], float] = time.monotonic,
    hwm_factory: Callable[[], ConsumerClient] | None = None,
    lso_wait_s: float = 0.0,
) -> DrainResult:
    """Drain ``topics`` into ``sink``; never raises for Kafka trouble, reports it instead.

    With ``hwm_factory`` (a read_uncommitted client for the high watermarks) the drain is
    read_committed: ``factory`` must make a read_committed consumer, and the drain waits
    up to ``lso_wait_s`` for every last stable offset to reach its high watermark.
    """
    end = clock() + deadline_s
    failed: dict[TopicPartition, str] = {}
    drained: dict[TopicPartition, tuple[int, int, int]] = {}
    made = retry_call(factory, end, clock=clock)
    client = made.value
    if client is None:
        reason = (
            f"could not create the drain consumer: {made.last_error}"
            if made.last_error
            else "deadline before the drain consumer existed"
        )
        log.error("drain: %s", reason)
        return DrainResult(failed={(t, -1): reason for t in topics})
    try:
        partitions = _partitions(client, topics, end, clock, request_timeout_s, failed)
        if hwm_factory is None:
            pending = _watermarks(client, partitions, end, clock, request_timeout_s, failed)
        else:
            pending = _stable_watermarks(
                client, hwm_factory, partitions, min(end, clock() + lso_wait_s), end, clock,
                request_timeout_s, failed,
            )  # fmt: skip
        for tp, prog in list(pending.items()):
            if prog.target <= prog.low:
                _end(sink, tp, prog, drained)
                del pending[tp]
        if pending:
            _read(
                client, pending, sink, drained, end, clock,
                poll_timeout_s, max_records, stall_s, metrics,
            )  # fmt: skip
        for tp, prog in pending.items():
            reason = (
                f"deadline: read up to offset {prog.next_offset} of "
                f"[{prog.low}, {prog.target}) ({prog.count} records)"
            )
            failed[tp] = reason
    finally:
        close_quietly(client, log, "drain: closing the consumer")
    for (topic, part), reason in sorted(failed.items()):
        log.error("drain: partition %s-%s not drained: %s", topic, part, reason)
    return DrainResult(drained=drained, failed=failed)


def _partitions(
    client: ConsumerClient,
    topics: Sequence[str],
    end: float,
    clock: Callable[[], float],
    timeout: float,
    failed: dict[TopicPartition, str],
) -> list[TopicPartition]:
    found: list[TopicPartition] = []
    for topic in topics:
        got = retry_call(partial(client.partitions_for, topic, timeout), end, clock=clock)
        if got.done:
            found.extend((topic, p) for p in got.value or ())
        else:
            failed[(topic, -1)] = f"partitions unknown at the deadline: {got.last_error}"
    return found


def _watermarks(
    client: ConsumerClient,
    partitions: list[TopicPartition],
    end: float,
    clock: Callable[[], float],
    timeout: float,
    failed: dict[TopicPartition, str],
) -> dict[TopicPartition, _Progress]:
    result: dict[TopicPartition, _Progress] = {}
    for tp in partitions:
        got = retry_call(partial(client.watermarks, tp[0], tp[1], timeout), end, clock=clock)
        if got.value is not None:
            low, high = got.value
            result[tp] = _Progress(low, high, low, last_progress=clock())
        else:
            failed[tp] = f"watermarks unavailable: {got.last_error or 'deadline'}"
    return result


def _stable_watermarks(
    client: ConsumerClient,
    hwm_factory: Callable[[], ConsumerClient],
    partitions: list[TopicPartition],
    wait_end: float,
    end: float,
    clock: Callable[[], float],
    timeout: float,
    failed: dict[TopicPartition, str],
) -> dict[TopicPartition, _Progress]:
    """(low, high watermark, last stable offset) per partition, once the LSO reached the
    high watermark or ``wait_end`` passed (then the last values seen)."""
    try:
        hwm_client = hwm_factory()
    except Exception as exc:
        for tp in partitions:
            failed[tp] = f"could not create the high-watermark client: {exc!r}"
        return {}
    try:
        result: dict[TopicPartition, _Progress] = {}
        todo = list(partitions)
        while todo:
            for tp in list(todo):
                try:
                    low, high = hwm_client.watermarks(tp[0], tp[1], timeout)
                    _, lso = client.watermarks(tp[0], tp[1], timeout)
                except Exception as exc:
                    if clock() >= end:
                        failed[tp] = f"watermarks unavailable: {exc!r}"
                        todo.remove(tp)
                    continue
                result[tp] = _Progress(low, high, low, last_progress=clock(), lso=lso)
                if lso >= high or clock() >= wait_end:
                    todo.remove(tp)
            if todo:
                if clock() >= end:
                    for tp in todo:
                        result.pop(tp, None)
                        failed.setdefault(tp, "watermarks unavailable: deadline")
                    break
                time.sleep(0.5)
        for tp, prog in result.items():
            if prog.lso is not None and prog.lso < prog.high:
                log.warning("drain: %s-%s last stable offset %d below high watermark %d",
                            tp[0], tp[1], prog.lso, prog.high)  # fmt: skip
        return result
    finally:
        close_quietly(hwm_client, log, "drain: closing the high-watermark client")


def _read(
    client: ConsumerClient,
    pending: dict[TopicPartition, _Progress],
    sink: HistorySink,
    drained: dict[TopicPartition, tuple[int, int, int]],
    end: float,
    clock: Callable[[], float],
    poll_timeout: float,
    max_records: int,
    stall_s: float,
    metrics: HarnessMetrics | None,
) -> None:
    def assign() -> None:
        client.assign([(t, p, prog.next_offset) for (t, p), prog in sorted(pending.items())])

    assign()
    while pending and clock() < end:
        started = clock()
        try:
            records, errors = client.poll(poll_timeout, max_records)
        except Exception as exc:
            log.warning("drain: poll failed: %r", exc)
            records, errors = [], [repr(exc)]
        if errors:
            log.info("drain: client errors %s", errors)
        now = clock()
        kept = []
        for rec in records:
            prog = pending.get((rec.topic, rec.partition))
            if prog is None or rec.offset < prog.next_offset or rec.offset >= prog.target:
                continue  # not wanted, already read, or above the high watermark / LSO
            kept.append(rec)
            prog.next_offset = rec.offset + 1
            prog.count += 1
            prog.last_progress = now
        if kept:
            sink.append(
                {"process": PROCESS, "type": "ok", "f": "drain", "records": record_dicts(kept)}
            )
        if metrics is not None:
            metrics.poll_done("ok", len(kept), clock() - started)
        for tp, prog in pending.items():
            if prog.lso is not None:  # read_committed: markers and aborted data are skipped
                _advance_to_position(client, tp, prog, now)
        for tp in [tp for tp, prog in pending.items() if prog.next_offset >= prog.target]:
            _end(sink, tp, pending.pop(tp), drained)
        stalled = [tp for tp, prog in pending.items() if now - prog.last_progress > stall_s]
        if stalled and pending:
            log.info("drain: no progress on %s for %.0f s, assigning again", stalled, stall_s)
            for tp in stalled:
                pending[tp].last_progress = now
            try:
                assign()
            except Exception as exc:
                log.warning("drain: re-assign failed: %r", exc)


def _advance_to_position(
    client: ConsumerClient, tp: TopicPartition, prog: _Progress, now: float
) -> None:
    try:
        position = client.position(tp[0], tp[1])
    except Exception as exc:
        log.info("drain: position of %s unknown: %r", tp, exc)
        return
    if position is not None and position > prog.next_offset:
        prog.next_offset = min(position, prog.target)
        prog.last_progress = now


def _end(
    sink: HistorySink,
    tp: TopicPartition,
    prog: _Progress,
    drained: dict[TopicPartition, tuple[int, int, int]],
) -> None:
    event = {
        "process": PROCESS,
        "type": "ok",
        "f": "drain-end",
        "topic": tp[0],
        "partition": tp[1],
        "log_start_offset": prog.low,
        "high_watermark": prog.high,
    }
    if prog.lso is not None:
        event["isolation"] = READ_COMMITTED
        event["last_stable_offset"] = prog.lso
    sink.append(event)
    drained[tp] = (prog.low, prog.high, prog.count)
