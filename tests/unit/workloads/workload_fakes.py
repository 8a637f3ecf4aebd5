"""Fake clients for unit tests of the workers (no Kafka)."""

from __future__ import annotations

from collections.abc import Sequence

from kchaos.harness.errors import ClientFatal, SendRefused
from kchaos.workloads.clients import (
    AssignCallback,
    Record,
    SendCallback,
    SendResult,
)


class FakeProducer:
    """Remembers sends; the test completes them by hand (or scripts refusals)."""

    def __init__(self, on_done: SendCallback) -> None:
        self.on_done = on_done
        self.sent: list[tuple[str, bytes | None, bytes, str]] = []
        self.refusals: list[str] = []  # names raised by the next send() calls
        self.closed = False
        self.flushes = 0
        self.fatal: str | None = None  # poll() and flush() raise ClientFatal once set

    def send(self, topic: str, key: bytes | None, data: bytes, value: str) -> None:
        if self.refusals:
            raise SendRefused(self.refusals.pop(0))
        self.sent.append((topic, key, data, value))

    def poll(self, timeout: float) -> None:
        if self.fatal:
            raise ClientFatal(self.fatal)

    def flush(self, timeout: float) -> None:
        self.flushes += 1
        if self.fatal:
            raise ClientFatal(self.fatal)

    def close(self) -> None:
        self.closed = True

    def complete(self, value: str, result: SendResult) -> None:
        self.on_done(value, result)


class FakeConsumer:
    """Partitions with records; manual assignment reads them from the assigned offset."""

    def __init__(
        self,
        logs: dict[tuple[str, int], list[tuple[int, bytes]]],
        low: dict[tuple[str, int], int] | None = None,
    ) -> None:
        self.logs = logs
        self.low = low or {}
        self.positions: dict[tuple[str, int], int] = {}
        self.on_assign: AssignCallback | None = None
        self.watermark_failures: dict[tuple[str, int], int] = {}
        self.poll_failures = 0
        self.partitions_failures = 0  # partitions_for raises this many times first
        self.stuck: set[tuple[str, int]] = set()
        self.commits = 0
        self.closed = False
        self.polls = 0
        self.rebalance_on_poll: list[list[tuple[str, int]]] = []

    def subscribe(self, topics: Sequence[str], on_assign: AssignCallback) -> None:
        self.on_assign = on_assign
        self.rebalance_on_poll.append(sorted(tp for tp in self.logs if tp[0] in topics))

    def assign(self, partitions: Sequence[tuple[str, int, int | None]]) -> None:
        self.positions = {
            (t, p): (self.low.get((t, p), 0) if o is None else o) for t, p, o in partitions
        }

    def seek(self, topic: str, partition: int, offset: int) -> None:
        self.positions[(topic, partition)] = offset

    def poll(self, timeout: float, max_records: int) -> tuple[list[Record], list[str]]:
        self.polls += 1
        if self.rebalance_on_poll and self.on_assign is not None:
            parts = self.rebalance_on_poll.pop(0)
            self.positions = {tp: self.low.get(tp, 0) for tp in parts}
            self.on_assign(parts)
        if self.poll_failures:
            self.poll_failures -= 1
            raise RuntimeError("broker gone")
        out: list[Record] = []
        for tp, pos in sorted(self.positions.items()):
            if tp in self.stuck:
                continue
            for offset, data in self.logs.get(tp, []):
                if offset >= pos and len(out) < max_records:
                    out.append(Record(tp[0], tp[1], offset, data))
                    self.positions[tp] = offset + 1
        return out, []

    def commit(self) -> list[tuple[str, int, int]]:
        self.commits += 1
        return sorted((t, p, o) for (t, p), o in self.positions.items())

    def watermarks(self, topic: str, partition: int, timeout: float) -> tuple[int, int]:
        tp = (topic, partition)
        if self.watermark_failures.get(tp, 0) > 0:
            self.watermark_failures[tp] -= 1
            raise RuntimeError("leader not available")
        entries = self.logs.get(tp, [])
        high = entries[-1][0] + 1 if entries else self.low.get(tp, 0)
        return self.low.get(tp, 0), high

    def partitions_for(self, topic: str, timeout: float) -> list[int]:
        if self.partitions_failures > 0:
            self.partitions_failures -= 1
            raise RuntimeError("Broker: Unknown topic or partition")
        return sorted(p for t, p in self.logs if t == topic)

    def fetch_sources(self) -> dict[tuple[str, int], tuple[int, int]]:
        return {}

    def close(self) -> None:
        self.closed = True
