from __future__ import annotations

import itertools
from typing import Any

import pytest
from fakeclock import FakeClock, only_this_thread
from workload_fakes import FakeConsumer

from kchaos.harness.rundir.history_writer import ListSink
from kchaos.workloads.drain import drain
from kchaos.workloads.values import payload


def logs(n: int) -> dict[tuple[str, int], list[tuple[int, bytes]]]:
    return {
        ("t", 0): [(i, payload(f"1-{i}", 8)) for i in range(n)],
        ("t", 1): [(i + 3, payload(f"2-{i}", 8)) for i in range(n)],  # log starts at 3
        ("t", 2): [],  # empty partition
    }


def test_drain_reads_every_partition_from_log_start_to_high_watermark() -> None:
    fake = FakeConsumer(logs(2500), low={("t", 1): 3})
    sink = ListSink()
    result = drain(lambda: fake, ["t"], sink, deadline_s=10, max_records=1000)
    assert result.complete
    ends = {(e["topic"], e["partition"]): e for e in sink.events if e["f"] == "drain-end"}
    assert ends[("t", 0)]["log_start_offset"] == 0 and ends[("t", 0)]["high_watermark"] == 2500
    assert ends[("t", 1)]["log_start_offset"] == 3 and ends[("t", 1)]["high_watermark"] == 2503
    assert ends[("t", 2)]["high_watermark"] == ends[("t", 2)]["log_start_offset"] == 0
    read = [r for e in sink.events if e["f"] == "drain" for r in e["records"]]
    assert len(read) == 5000
    assert {r["value"] for r in read if r["partition"] == 0} == {f"1-{i}" for i in range(2500)}
    assert all(e["process"] == "drain" and e["type"] == "ok" for e in sink.events)
    # drain-end of a partition comes after all its drain records
    last_record_line = max(
        e["index"] for e in sink.events if e["f"] == "drain" and e["records"][0]["partition"] == 0
    )
    assert ends[("t", 0)]["index"] > last_record_line
    assert fake.closed


def test_transient_errors_are_retried() -> None:
    fake = FakeConsumer(logs(10))
    fake.watermark_failures = {("t", 0): 2}
    fake.poll_failures = 2
    sink = ListSink()
    result = drain(lambda: fake, ["t"], sink, deadline_s=20)
    assert result.complete
    assert result.drained[("t", 0)] == (0, 10, 10)


def test_a_partition_that_cannot_be_read_gets_no_drain_end_and_a_reason() -> None:
    fake = FakeConsumer(logs(10))
    fake.stuck = {("t", 0)}
    sink = ListSink()
    ticks = itertools.count()
    result = drain(
        lambda: fake, ["t"], sink, deadline_s=50, poll_timeout_s=0, clock=lambda: next(ticks)
    )
    assert not result.complete
    assert "deadline" in result.failed[("t", 0)] and "[0, 10)" in result.failed[("t", 0)]
    ends = {(e["topic"], e["partition"]) for e in sink.events if e["f"] == "drain-end"}
    assert ends == {("t", 1), ("t", 2)}


def test_watermarks_never_available_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeConsumer(logs(3))
    fake.watermark_failures = {("t", 1): 10**9}
    ticks = itertools.count()
    sink = ListSink()
    monkeypatch.setattr("kchaos.workloads.drain.time.sleep", only_this_thread(lambda s: None))
    result = drain(lambda: fake, ["t"], sink, deadline_s=30, clock=lambda: next(ticks))
    assert "watermarks unavailable" in result.failed[("t", 1)]
    assert ("t", 1) not in {(e["topic"], e["partition"]) for e in sink.events if "topic" in e}


class CommittedFake(FakeConsumer):
    """A read_committed reader of one partition whose log holds transaction markers and
    aborted data it never returns: records at 0, 1, 5 of offsets 0..6 (high watermark 7).
    Its ListOffsets answer is the last stable offset, one per call from ``lsos``."""

    def __init__(self, lsos: list[int]) -> None:
        super().__init__({("t", 0): [(0, payload("1-0", 8)), (1, payload("1-1", 8)),
                                     (5, payload("1-5", 8))]})  # fmt: skip
        self.lsos = lsos

    def watermarks(self, topic: str, partition: int, timeout: float) -> tuple[int, int]:
        lso = self.lsos.pop(0) if len(self.lsos) > 1 else self.lsos[0]
        return 0, lso

    def poll(self, timeout: float, max_records: int) -> tuple[list[Any], list[str]]:
        records, errors = super().poll(timeout, max_records)
        lso = self.lsos[0]
        return [r for r in records if r.offset < lso], errors

    def position(self, topic: str, partition: int) -> int | None:
        # past the markers and aborted data once every visible record below the LSO was read
        pos = self.positions[(topic, partition)]
        visible = [o for o, _ in self.logs[(topic, partition)] if o < self.lsos[0]]
        return self.lsos[0] if not visible or pos > visible[-1] else pos


class HighWatermarks(FakeConsumer):
    def __init__(self) -> None:
        super().__init__({("t", 0): []})

    def watermarks(self, topic: str, partition: int, timeout: float) -> tuple[int, int]:
        return 0, 7


def test_read_committed_drain_waits_for_the_last_stable_offset() -> None:
    fake, sink = CommittedFake([4, 4, 7]), ListSink()
    result = drain(lambda: fake, ["t"], sink, deadline_s=10, poll_timeout_s=0.01,
                   hwm_factory=HighWatermarks, lso_wait_s=5)  # fmt: skip
    assert result.complete
    (end,) = [e for e in sink.events if e["f"] == "drain-end"]
    assert end == {**end, "high_watermark": 7, "isolation": "read_committed",
                   "last_stable_offset": 7}  # fmt: skip
    read = [r["value"] for e in sink.events if e["f"] == "drain" for r in e["records"]]
    assert read == ["1-0", "1-1", "1-5"]


def test_a_transaction_left_open_ends_the_drain_at_the_last_stable_offset(
    monkeypatch: pytest.MonkeyPatch, fake_clock: FakeClock
) -> None:
    fake, sink = CommittedFake([4]), ListSink()
    asked: list[float] = []  # the fake time of each LSO query
    answer = fake.watermarks

    def watermarks(topic: str, partition: int, timeout: float) -> tuple[int, int]:
        asked.append(fake_clock.now)
        return answer(topic, partition, timeout)

    monkeypatch.setattr(fake, "watermarks", watermarks)
    monkeypatch.setattr("kchaos.workloads.drain.time.sleep", only_this_thread(fake_clock.sleep))
    result = drain(lambda: fake, ["t"], sink, deadline_s=10, poll_timeout_s=0.01,
                   hwm_factory=HighWatermarks, lso_wait_s=0.6,
                   clock=fake_clock.monotonic)  # fmt: skip
    assert result.complete
    # the LSO was asked for until the 0.6 s wait had passed, then the drain went on with
    # it: not until the 10 s deadline
    assert asked and asked[-1] >= 0.6 and asked[-2] < 0.6
    assert fake_clock.now < 10
    (end,) = [e for e in sink.events if e["f"] == "drain-end"]
    assert end["last_stable_offset"] == 4 and end["high_watermark"] == 7
    read = [r["value"] for e in sink.events if e["f"] == "drain" for r in e["records"]]
    assert read == ["1-0", "1-1"]


def test_read_uncommitted_drain_end_lines_are_unchanged() -> None:
    sink = ListSink()
    drain(lambda: FakeConsumer(logs(3)), ["t"], sink, deadline_s=10)
    ends = [e for e in sink.events if e["f"] == "drain-end"]
    assert ends and all("isolation" not in e and "last_stable_offset" not in e for e in ends)
