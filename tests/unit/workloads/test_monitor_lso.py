"""The monitor's last-stable-offset samples (runs with transactions), with fake clients."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from test_monitor import FakeSource

from kchaos.harness.rundir.history_writer import ListSink
from kchaos.harness.rundir.rundir import RunDir
from kchaos.harness.rundir.stable_offsets import StableOffsetSample
from kchaos.workloads import workload as wl
from kchaos.workloads.lso import ConsumerStableOffsetSource, StableOffsets
from kchaos.workloads.monitor import Monitor, StableOffsetSampling
from kchaos.workloads.spec import ConsumerConfig, CopierSpec, ProducerConfig, TxnSpec, WorkloadSpec

TP = tuple[str, int]


class FakeOffsets:
    """One consumer of one isolation: answers ListOffsets from a shared table; every
    question is logged, in order, in ``asked`` (isolation, topic, partition)."""

    def __init__(self, isolation: str, table: dict[TP, tuple[int, int]], asked: list[Any]):
        self.isolation = isolation
        self.table = table  # (topic, partition) -> (high watermark, LSO)
        self.asked = asked
        self.failing: set[TP] = set()
        self.closed = False

    def partitions_for(self, topic: str, timeout: float) -> list[int]:
        return sorted(p for t, p in self.table if t == topic)

    def watermarks(self, topic: str, partition: int, timeout: float) -> tuple[int, int]:
        self.asked.append((self.isolation, topic, partition))
        if (topic, partition) in self.failing:
            raise RuntimeError("REQUEST_TIMED_OUT")
        high, lso = self.table[(topic, partition)]
        return 0, lso if self.isolation == "read_committed" else high

    def close(self) -> None:
        self.closed = True


def _source(
    table: dict[TP, tuple[int, int]], topics: Sequence[str] = ("a", "b")
) -> tuple[ConsumerStableOffsetSource, dict[str, FakeOffsets], list[Any]]:
    asked: list[Any] = []
    made: dict[str, FakeOffsets] = {}

    def factory(isolation: str) -> Any:
        made[isolation] = FakeOffsets(isolation, table, asked)
        return made[isolation]

    return ConsumerStableOffsetSource(factory, topics), made, asked


def test_the_sampler_asks_the_lso_read_committed_then_the_high_watermark() -> None:
    table = {("a", 0): (10, 7), ("a", 1): (4, 4), ("b", 0): (9, 2), ("c", 0): (1, 0)}
    source, made, asked = _source(table)
    answered, missing = source.stable_offsets()
    assert answered == [
        StableOffsets("a", 0, 10, 7),
        StableOffsets("a", 1, 4, 4),
        StableOffsets("b", 0, 9, 2),
    ], "topic c is not transactional: never asked"
    assert missing == []
    # per partition the read_committed client (LSO) first, then the read_uncommitted one:
    # both only grow, so the lag computed from them cannot come out negative
    assert asked[:2] == [("read_committed", "a", 0), ("read_uncommitted", "a", 0)]
    assert [a[0] for a in asked] == ["read_committed", "read_uncommitted"] * 3
    source.close()
    assert made["read_committed"].closed and made["read_uncommitted"].closed


def test_a_partition_that_does_not_answer_is_left_out_and_the_others_are_kept() -> None:
    table = {("a", 0): (10, 7), ("a", 1): (4, 4)}
    source, made, _ = _source(table, ("a",))
    made["read_committed"].failing.add(("a", 0))
    answered, missing = source.stable_offsets()
    assert answered == [StableOffsets("a", 1, 4, 4)]
    assert missing == [("a", 0)]


def test_a_failing_second_client_closes_the_first() -> None:
    made: list[FakeOffsets] = []

    def factory(isolation: str) -> Any:
        if made:
            raise RuntimeError("no broker")
        made.append(FakeOffsets(isolation, {}, []))
        return made[-1]

    with pytest.raises(RuntimeError):
        ConsumerStableOffsetSource(factory, ("a",))
    assert made[0].closed


class FakeLsoSource:
    """The monitor's view of a sampler: a scripted answer per call (or a hang)."""

    def __init__(self, answers: list[tuple[list[StableOffsets], list[TP]]]) -> None:
        self.answers = answers
        self.calls = 0
        self.release: threading.Event | None = None
        self.closed = threading.Event()

    def stable_offsets(self) -> tuple[list[StableOffsets], list[TP]]:
        self.calls += 1
        if self.release is not None:
            self.release.wait(30)
            return [StableOffsets("a", 0, 999, 0)], []  # stale: must never be written
        return self.answers[min(self.calls, len(self.answers)) - 1]

    def close(self) -> None:
        self.closed.set()


class ListWriter:
    def __init__(self) -> None:
        self.samples: list[StableOffsetSample] = []
        self.closed = False

    def write(self, samples: Sequence[StableOffsetSample]) -> None:
        self.samples.extend(samples)

    def close(self) -> None:
        self.closed = True


def test_the_monitor_writes_samples_on_the_history_clock(
    eventually: Callable[..., None],
) -> None:
    answers = [
        ([StableOffsets("a", 0, 10, 7), StableOffsets("a", 1, 3, 3)], []),
        ([StableOffsets("a", 0, 12, 12)], [("a", 1)]),
    ]
    source = FakeLsoSource(answers)
    writer = ListWriter()
    ticks = iter(range(1_000_000_000, 10**12, 1_000_000_000))
    sampling = StableOffsetSampling(lambda: source, writer, lambda: next(ticks))
    sink = ListSink()
    monitor = Monitor(FakeSource, ["a"], sink, interval=0.02, stable_offsets=sampling)
    monitor.start()
    eventually(lambda: monitor.lso_observations >= 2, "two stable-offset observations")
    monitor.stop()
    assert writer.closed, "stop() closes the samples' writer"
    first, second = writer.samples[:2], writer.samples[2]
    assert [(s.time, s.partition, s.lag) for s in first] == [(10**9, 0, 3), (10**9, 1, 0)]
    assert (second.time, second.high_watermark, second.last_stable_offset) == (2 * 10**9, 12, 12)
    assert all(s.observe_ms is not None and s.observe_ms >= 0 for s in writer.samples)
    assert monitor.lso_missing >= 1
    assert all(e["f"] == "metadata" for e in sink.events), "the history gets no new lines"


def test_a_stuck_lso_question_blinds_neither_the_metadata_nor_later_samples(
    eventually: Callable[..., None],
) -> None:
    release = threading.Event()
    made: list[FakeLsoSource] = []

    def factory() -> FakeLsoSource:
        source = FakeLsoSource([([StableOffsets("a", 0, 5, 4)], [])])
        if not made:
            source.release = release  # the first client's question hangs
        made.append(source)
        return source

    writer = ListWriter()
    sampling = StableOffsetSampling(factory, writer, lambda: 1)
    monitor = Monitor(FakeSource, ["a"], ListSink(), interval=0.01, deadline=0.5,
                      stable_offsets=sampling)  # fmt: skip
    monitor.start()
    try:
        # the metadata loop does not wait for the stuck sample
        eventually(lambda: monitor.observations >= 5, "metadata while the LSO question hangs")
        eventually(lambda: monitor.lso_observations >= 2, "samples from a fresh client")
        assert monitor.lso_late >= 1 and monitor.late == 0
    finally:
        release.set()
    assert made[0].closed.wait(10), "the abandoned client is closed once it ends"
    monitor.stop()
    assert writer.samples and all(s.high_watermark == 5 for s in writer.samples)


def _txn_spec(**tx: Any) -> WorkloadSpec:
    return WorkloadSpec(
        duration=60.0,
        topics=("a", "b", "out"),
        producers=ProducerConfig(count=0),
        consumers=ConsumerConfig(count=1),
        transactions=TxnSpec(producers=1, topics=("a",), process=False, **tx),
    )


def test_only_transactional_topics_are_sampled() -> None:
    spec = _txn_spec(copier=CopierSpec(input="b", output="out"))
    assert spec.transactional_topics() == ("a", "out")
    assert WorkloadSpec(duration=60.0, topics=("a",)).transactional_topics() == ()
    no_producers = WorkloadSpec(
        duration=60.0,
        topics=("a", "out"),
        transactions=TxnSpec(producers=0, copier=CopierSpec("a", "out")),
    )
    assert no_producers.transactional_topics() == ("out",)


def test_the_workload_samples_stable_offsets_only_with_transactions(tmp_path: Path) -> None:
    plain = wl.Workload(
        WorkloadSpec(duration=60.0, topics=("a",)), "h:1", ListSink(), run_dir=RunDir(tmp_path)
    )
    assert plain.monitor is not None and plain.monitor.stable_offsets is None
    plain.close()
    assert not RunDir(tmp_path).stable_offsets.exists()

    sink = ListSink()
    txn = wl.Workload(_txn_spec(), "h:1", sink, run_dir=RunDir(tmp_path / "t"))
    try:
        assert txn.monitor is not None
        sampling = txn.monitor.stable_offsets
        assert sampling is not None
        assert sampling.clock == sink.elapsed_ns, "the history's own clock"
        assert RunDir(tmp_path / "t").stable_offsets.exists()
    finally:
        txn.close()
    # without a run directory there is nowhere to write them
    nowhere = wl.Workload(_txn_spec(), "h:1", ListSink())
    assert nowhere.monitor is not None and nowhere.monitor.stable_offsets is None
    nowhere.close()
