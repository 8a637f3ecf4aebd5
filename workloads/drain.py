"""The final read: every partition from its log start offset to its high watermark.

Run once faults are healed and producers stopped. For each partition the drain asks the
client for (log start offset, high watermark), reads that range with a manually assigned
consumer, and writes ``drain`` lines (records in the order read) and, once the range is
covered, one ``drain-end`` line with ``log_start_offset`` and ``high_watermark``.
Everything is retried until the deadline; a partition not covered by then gets no
``drain-end`` and the reason is logged and returned.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kchaos.harness.rundir.history_writer import HistorySink
from kchaos.workloads.clients import ConsumerClient, TopicPartition
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
) -> DrainResult:
    """Drain ``topics`` into ``sink``; never raises for Kafka trouble, reports it instead."""
    end = clock() + deadline_s
    failed: dict[TopicPartition, str] = {}
    drained: dict[TopicPartition, tuple[int, int, int]] = {}
    client: ConsumerClient | None = None
    last_error = ""
    while client is None and clock() < end:
        try:
            client = factory()
        except Exception as exc:
            last_error = f"could not create the drain consumer: {exc!r}"
            time.sleep(0.5)
    if client is None:
        reason = last_error or "deadline before the drain consumer existed"
        log.error("drain: %s", reason)
        return DrainResult(failed={(t, -1): reason for t in topics})
    try:
        partitions = _partitions(client, topics, end, clock, request_timeout_s, failed)
        pending = _watermarks(client, partitions, end, clock, request_timeout_s, failed)
        for tp, prog in list(pending.items()):
            if prog.high <= prog.low:
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
                f"[{prog.low}, {prog.high}) ({prog.count} records)"
            )
            failed[tp] = reason
    finally:
        try:
            client.close()
        except Exception:
            log.warning("drain: closing the consumer failed", exc_info=True)
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
        error = ""
        while clock() < end:
            try:
                found.extend((topic, p) for p in client.partitions_for(topic, timeout))
                error = ""
                break
            except Exception as exc:
                error = repr(exc)
                time.sleep(0.5)
        else:
            failed[(topic, -1)] = f"partitions unknown at the deadline: {error}"
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
        error = "deadline"
        while clock() < end:
            try:
                low, high = client.watermarks(tp[0], tp[1], timeout)
                result[tp] = _Progress(low, high, low, last_progress=clock())
                break
            except Exception as exc:
                error = repr(exc)
                time.sleep(0.5)
        else:
            failed[tp] = f"watermarks unavailable: {error}"
    return result


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
            if prog is None or rec.offset < prog.next_offset or rec.offset >= prog.high:
                continue  # not wanted, already read, or above the high watermark
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
        for tp in [tp for tp, prog in pending.items() if prog.next_offset >= prog.high]:
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


def _end(
    sink: HistorySink,
    tp: TopicPartition,
    prog: _Progress,
    drained: dict[TopicPartition, tuple[int, int, int]],
) -> None:
    sink.append(
        {
            "process": PROCESS,
            "type": "ok",
            "f": "drain-end",
            "topic": tp[0],
            "partition": tp[1],
            "log_start_offset": prog.low,
            "high_watermark": prog.high,
        }
    )
    drained[tp] = (prog.low, prog.high, prog.count)
