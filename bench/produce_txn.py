"""``kchaos bench produce --transactional``: the transactional producer, side by side.

On one 3-broker cluster, for each record size, per round and in rotating order:

* ``idempotent``: the plain recording producer (:class:`~kchaos.workloads.producer.ProducerWorker`,
  acks=all, idempotent, linger 5 ms), the baseline;
* ``txn-recording``: one :class:`~kchaos.workloads.txn.TxnProducer` (in a thread, flat
  out, no planned aborts, transactions of 1 to ``max_sends`` values) writing the history;
* ``txn-bare``: the same transactional producer with recording off (a sink that drops
  the lines).

Only committed values count; the clock runs from the transactional client's ``txn-init``
(a warm client, as the baseline is warmed up) to the commit that reaches the number asked
for. Printed per size: txn-recording / idempotent (what transactions cost against the
plain producer) and txn-recording / txn-bare (what recording costs a transactional
producer; goal >= 0.8). The transactional client is confluent-kafka, or with
``--clients java`` Kafka's own Java producer (:mod:`kchaos.workloads.java_txn`, a container
of the cluster's image; its start is before the clock's); the baseline stays the Python
idempotent producer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kchaos.bench.produce import (
    TOPIC_CONFIGS,
    Case,
    _median,
    _paired,
    _rates,
    _ratio,
    run_recording,
)
from kchaos.harness.errors import WorkloadError
from kchaos.harness.rundir.history import F_TXN, F_TXN_INIT, OK
from kchaos.harness.rundir.history_writer import HistorySink, HistoryWriter, NullSink
from kchaos.workloads.spec import TxnSpec
from kchaos.workloads.topics import delete_topics, ensure_topics
from kchaos.workloads.txn import EventSink

IDEMPOTENT, TXN_RECORDING, TXN_BARE = "idempotent", "txn-recording", "txn-bare"
KINDS: tuple[str, ...] = (IDEMPOTENT, TXN_RECORDING, TXN_BARE)
CLIENT = "confluent-kafka"
GOAL_VS_BARE = 0.8  # issue 20: the transactional producer records at >= 0.8x bare
DEADLINE_S = 900.0  # one case may take this long before the bench gives up on it

#: ``(kind, size, values, round) -> Case``: one measured case (fakes in the unit tests).
RunCase = Callable[[str, int, int, int], Case]
#: ``(config, sink, stop) -> worker`` with ``run()``: workloads.txn_process.make_worker.
WorkerFactory = Callable[[Any, EventSink, threading.Event], Any]


class CommitCounter:
    """A sink in front of the worker's: passes every line on, counts the committed
    values, and stops the worker once ``target`` of them were committed."""

    def __init__(self, inner: EventSink, stop: threading.Event, target: int) -> None:
        self.inner = inner
        self.stop = stop
        self.target = target
        self.committed = 0
        self.started: float | None = None  # the first ok txn-init
        self.finished: float | None = None  # the commit that reached the target

    def append(self, event: dict[str, Any]) -> object:
        out = self.inner.append(event)
        if event.get("type") != OK:
            return out
        f = event.get("f")
        if f == F_TXN_INIT and self.started is None:
            self.started = time.monotonic()
        elif f == F_TXN and self.finished is None:
            self.committed += len(event.get("sends") or ())
            if self.committed >= self.target:
                self.finished = time.monotonic()
                self.stop.set()
        return out

    @property
    def seconds(self) -> float:
        if self.started is None or self.finished is None:
            raise WorkloadError(f"only {self.committed} of {self.target} values committed")
        return self.finished - self.started


def txn_spec(topic: str, size: int, max_sends: int) -> TxnSpec:
    """The bench's transactional producer: flat out, nothing aborted on purpose."""
    return TxnSpec(producers=1, topics=(topic,), max_sends=max_sends, abort_ratio=0.0,
                   rate=0, timeout=30.0, message_size=size, process=False)  # fmt: skip


def run_txn(
    bootstrap: str,
    topic: str,
    size: int,
    values: int,
    sink: HistorySink,
    max_sends: int,
    round_: int = 0,
    factory: WorkerFactory | None = None,
    deadline_s: float = DEADLINE_S,
    java: dict[str, str] | None = None,
) -> Case:
    """One transactional producer until ``values`` values are committed: librdkafka's, or
    with ``java`` (where its containers run, :func:`kchaos.workloads.java_txn.target_of`)
    Kafka's Java producer."""
    from kchaos.workloads.txn_process import TxnWorkerConfig

    if factory is None:
        from kchaos.workloads.txn_process import make_worker

        factory = make_worker
    lib = CLIENT if java is None else "java"
    config = TxnWorkerConfig(1, "producer", f"kchaos-bench-{topic}", bootstrap,
                             txn_spec(topic, size, max_sends), (topic,), lib=lib,
                             java=java)  # fmt: skip
    stop = threading.Event()
    counter = CommitCounter(sink, stop, values)
    worker = factory(config, counter, stop)
    thread = threading.Thread(target=worker.run, name="kchaos-bench-txn", daemon=True)
    thread.start()
    thread.join(deadline_s)
    stop.set()
    thread.join(60)
    kind = TXN_RECORDING if isinstance(sink, HistoryWriter) else TXN_BARE
    return Case(kind, lib, size, counter.committed, counter.seconds, round_)


def real_cases(
    bootstrap: str, max_sends: int, workdir: Path, java: dict[str, str] | None = None
) -> RunCase:
    """Each case on a fresh topic (3 partitions, RF 3, min.insync.replicas 2), deleted
    after it; recording cases write their history under ``workdir``. With ``java`` the
    transactional cases run Kafka's Java producer there."""
    counter = 0

    def run_case(kind: str, size: int, n: int, round_: int) -> Case:
        nonlocal counter
        counter += 1
        topic = f"bench-txn-{size}-{counter}"
        ensure_topics(bootstrap, [topic], configs=TOPIC_CONFIGS)
        try:
            if kind == TXN_BARE:
                return run_txn(bootstrap, topic, size, n, NullSink(), max_sends, round_,
                               java=java)  # fmt: skip
            path = workdir / f"history-{topic}.jsonl"
            with HistoryWriter(path) as writer:
                if kind == IDEMPOTENT:
                    case = run_recording(bootstrap, CLIENT, topic, size, n, writer, round_)
                    case = Case(IDEMPOTENT, CLIENT, size, case.records, case.seconds, round_)
                else:
                    case = run_txn(bootstrap, topic, size, n, writer, max_sends, round_,
                                   java=java)  # fmt: skip
            path.unlink()
            return case
        finally:
            delete_topics(bootstrap, [topic])

    return run_case


def txn_rounds(
    sizes: list[int],
    records: dict[int, int],
    repeat: int,
    run_case: RunCase,
    log: Callable[[Case], None],
) -> list[Case]:
    """Per size: one uncounted warm-up of each kind (round -1, not returned), then
    ``repeat`` rounds of the three kinds, the order rotated each round."""
    cases: list[Case] = []
    for size in sizes:
        warm = max(2_000, records[size] // 10)
        for kind in KINDS:
            run_case(kind, size, warm, -1)
        for round_ in range(repeat):
            shift = round_ % len(KINDS)
            for kind in KINDS[shift:] + KINDS[:shift]:
                cases.append(run_case(kind, size, records[size], round_))
                log(cases[-1])
    return cases


def txn_ratios(cases: list[Case]) -> list[dict[str, Any]]:
    """Per size: median rates, and the medians of each round's two ratios."""

    def rates(kind: str, size: int, round_: int | None = None) -> list[float]:
        return _rates(cases, kind, size, round_=round_)

    rows = []
    for size in sorted({c.size for c in cases}):
        rounds = sorted({c.round for c in cases if c.size == size})
        vs_idem = [_paired(rates(TXN_RECORDING, size, r), rates(IDEMPOTENT, size, r))
                   for r in rounds]  # fmt: skip
        vs_bare = [_paired(rates(TXN_RECORDING, size, r), rates(TXN_BARE, size, r))
                   for r in rounds]  # fmt: skip
        rows.append(
            {
                # the transactional client (the baseline is always the Python producer)
                "client": next(
                    (c.client for c in cases if c.size == size and c.kind != IDEMPOTENT), CLIENT
                ),
                "size": size,
                "rounds": len(rounds),
                "idempotent_rps": round(_median(rates(IDEMPOTENT, size))),
                "txn_recording_rps": round(_median(rates(TXN_RECORDING, size))),
                "txn_bare_rps": round(_median(rates(TXN_BARE, size))),
                "txn_vs_idempotent": _ratio(vs_idem),
                "txn_recording_vs_bare": _ratio(vs_bare),
                "txn_recording_vs_bare_per_round": [r and round(r, 3) for r in vs_bare],
            }
        )
    return rows


def report_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The table the command prints, one row per size, and the goal."""
    out = ["client           size  idempotent/s  txn-rec/s  txn-bare/s  txn/idem  rec/bare"]
    for r in rows:
        vs_bare = r["txn_recording_vs_bare"]
        out.append(
            f"{r['client']:15} {r['size']:5}  {r['idempotent_rps']:12}  "
            f"{r['txn_recording_rps']:9}  {r['txn_bare_rps']:10}  "
            f"{_fmt(r['txn_vs_idempotent']):>8}  {_fmt(vs_bare):>8}"
            + ("" if vs_bare is None else "  met" if vs_bare >= GOAL_VS_BARE else "  NOT met")
        )
    out.append(
        f"goal: txn-recording / txn-bare >= {GOAL_VS_BARE}; txn / idempotent is reported, "
        "no goal (transactions cost a commit round trip per transaction)"
    )
    return out


def _fmt(ratio: float | None) -> str:
    return "n/a" if ratio is None else f"{ratio:.3f}"
