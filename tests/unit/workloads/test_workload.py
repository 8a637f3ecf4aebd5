from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests
from workload_fakes import FakeConsumer, FakeProducer

import kchaos.workloads.workload as wl
from kchaos.harness.rundir.history_writer import ListSink
from kchaos.harness.rundir.rundir import RunDir
from kchaos.workloads.clients import SendResult
from kchaos.workloads.spec import ConsumerConfig, ProducerConfig, WorkloadSpec
from kchaos.workloads.values import payload


class AckingProducer(FakeProducer):
    def send(self, topic: str, key: bytes | None, data: bytes, value: str) -> None:
        super().send(topic, key, data, value)
        self.complete(value, SendResult(0, len(self.sent) - 1, None))


class _Gateway(BaseHTTPRequestHandler):
    paths: list[str] = []

    def do_PUT(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.paths.append(self.path)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        return None


@pytest.fixture
def gateway() -> Iterator[str]:
    _Gateway.paths = []
    server = HTTPServer(("127.0.0.1", 0), _Gateway)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


def test_facade_runs_workers_serves_and_pushes_metrics(
    monkeypatch: pytest.MonkeyPatch, gateway: str, eventually: Callable[..., None]
) -> None:
    logs = {("t", 0): [(i, payload(f"9-{i}", 10)) for i in range(5)]}

    def fake_producers(lib: str, servers: str, spec: ProducerConfig, cid: str) -> Any:
        return lambda on_done: AckingProducer(on_done)

    def fake_consumer(*args: Any, **kwargs: Any) -> FakeConsumer:
        return FakeConsumer(logs)

    monkeypatch.setattr(wl, "producer_factory", fake_producers)
    monkeypatch.setattr(wl, "make_consumer", fake_consumer)
    spec = WorkloadSpec(
        duration=60.0,
        topics=("t",),
        producers=ProducerConfig(count=2, rate=200.0, keys=0),
        consumers=ConsumerConfig(count=1, mode="assign"),
    )
    sink = ListSink()
    with wl.Workload(
        spec, "unused:9092", sink, monitor=False, metrics_port=0, pushgateway=gateway, run_id="r9"
    ) as workload:
        workload.start()

        def both_sent_and_all_read() -> bool:
            events = list(sink.events)
            acked = {e["process"] for e in events if e["f"] == "send" and e["type"] == "ok"}
            read = sum(len(e.get("records") or ()) for e in events if e["f"] == "poll")
            return acked == {1, 2} and read >= 5

        eventually(both_sent_and_all_read, "acks from both producers, 5 records read")
        assert workload.metrics is not None
        port = workload.metrics.port
        body = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
        assert 'kchaos_sends_total{outcome="ok"}' in body
        stats = workload.stop()
        result = workload.drain(timeout=5)
    assert stats.invoked == stats.ok > 0 and stats.fail == stats.info == 0
    assert stats.records_read >= 5
    assert result.complete and result.drained[("t", 0)] == (0, 5, 5)
    assert {e["process"] for e in sink.events if e["f"] == "send"} == {1, 2}
    assert {e["process"] for e in sink.events if e["f"] == "poll"} == {3}
    assert _Gateway.paths == ["/metrics/job/kchaos/run/r9"]


@pytest.mark.parametrize(("client", "quiet"), [("confluent-kafka", True), ("kafka-python", False)])
def test_the_drain_consumer_keeps_librdkafka_quiet(
    monkeypatch: pytest.MonkeyPatch, client: str, quiet: bool
) -> None:
    built: list[dict[str, Any]] = []

    def fake_consumer(*args: Any, **kwargs: Any) -> FakeConsumer:
        built.append(kwargs)
        return FakeConsumer({("t", 0): [(0, payload("1-0", 10))]})

    monkeypatch.setattr(wl, "make_consumer", fake_consumer)
    spec = WorkloadSpec(
        duration=60.0, topics=("t",), producers=ProducerConfig(count=0),
        consumers=ConsumerConfig(count=1), client=client,  # type: ignore[arg-type]
    )  # fmt: skip
    workload = wl.Workload(spec, "unused:9092", ListSink(), monitor=False)
    assert workload.drain(timeout=5).complete
    extra = built[0].get("extra") or {}
    assert (extra.get("log_level") == "3") is quiet


@pytest.mark.parametrize(
    ("client", "attached"), [("confluent-kafka", True), ("kafka-python", False)]
)
def test_a_run_points_librdkafkas_log_at_its_file_while_clients_run(
    tmp_path: Path, client: str, attached: bool
) -> None:
    from kchaos.workloads.client_log import LIBRDKAFKA_LOG

    def ours() -> list[logging.FileHandler]:
        return [
            h
            for h in LIBRDKAFKA_LOG.handlers
            if isinstance(h, logging.FileHandler) and h.baseFilename.startswith(str(tmp_path))
        ]

    # no workers: only the log's setup and teardown are looked at
    spec = WorkloadSpec(
        duration=60.0,
        topics=("t",),
        producers=ProducerConfig(count=0),
        client=client,  # type: ignore[arg-type]
    )
    workload = wl.Workload(spec, "unused:9092", ListSink(), monitor=False, run_dir=RunDir(tmp_path))
    workload.start()
    try:
        files = [h.baseFilename for h in ours()]
        assert files == ([str(RunDir(tmp_path).librdkafka_log)] if attached else [])
        assert RunDir(tmp_path).logs_dir.is_dir() is attached
    finally:
        workload.stop()
    assert ours() == []


def test_transactional_workers_follow_the_consumers_and_keep_one_id_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kchaos.workloads.spec import CopierSpec, TxnSpec
    from kchaos.workloads.txn_process import TxnProcessWorker, TxnThreadWorker

    spec = WorkloadSpec(
        duration=60.0, topics=("a", "b", "out"), producers=ProducerConfig(count=1),
        consumers=ConsumerConfig(count=1, isolation="read_committed"),
        transactions=TxnSpec(producers=2, copier=CopierSpec("a", "out")),
    )  # fmt: skip
    workload = wl.Workload(spec, "h:1", ListSink(), monitor=False, run_dir=RunDir(tmp_path))
    workers = workload.transactional
    assert all(isinstance(w, TxnProcessWorker) for w in workers)
    assert [(w.config.process, w.config.role, w.config.transactional_id) for w in workers] == [
        (3, "producer", "kchaos-t-3"), (4, "producer", "kchaos-t-4"), (5, "copier", "kchaos-t-5"),
    ]  # fmt: skip
    assert workers[0].config.topics == ("a", "b")  # never the copier's output
    assert workload.stats().txn_invoked == 0

    seen: dict[str, Any] = {}
    monkeypatch.setattr(wl, "drain", lambda *args, **kwargs: seen.update(kwargs))
    workload.drain()
    assert seen["hwm_factory"] is not None and seen["lso_wait_s"] == 20.0

    threads = wl.Workload(
        WorkloadSpec(duration=60.0, topics=("a",), producers=ProducerConfig(count=0),
                     transactions=TxnSpec(process=False)),
        "h:1", ListSink(), monitor=False,
    ).transactional  # fmt: skip
    assert len(threads) == 1 and isinstance(threads[0], TxnThreadWorker)


def test_a_workload_without_transactions_drains_read_uncommitted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: dict[str, Any] = {}
    monkeypatch.setattr(wl, "drain", lambda *args, **kwargs: seen.update(kwargs))
    wl.Workload(
        WorkloadSpec(duration=60.0, topics=("a",)), "h:1", ListSink(), monitor=False
    ).drain()
    assert seen["hwm_factory"] is None


# A stand-in for a transactional child: its txn-init (epoch 10 + its process id), one
# transaction invoked, committed when "stop" comes.
TXN_CHILD = """
import json, sys
c = json.loads(sys.argv[1])
p, tid = c["process"], c["transactional_id"]
def line(**e):
    sys.stdout.write(json.dumps({"process": p, **e}) + "\\n"); sys.stdout.flush()
line(type="invoke", f="txn-init", transactional_id=tid)
line(type="ok", f="txn-init", transactional_id=tid, producer_id=1, producer_epoch=10 + p)
line(type="invoke", f="txn", txn=f"{p}-{c['first']}", transactional_id=tid, sends=[])
sys.stdin.readline()
line(type="ok", f="txn", txn=f"{p}-{c['first']}", sends=[])
"""


def test_a_fault_finds_the_worker_of_an_id_and_gets_a_replacement_with_the_same_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, eventually: Any
) -> None:
    import sys

    import kchaos.workloads.txn_process as tp
    from kchaos.harness.errors import WorkloadError
    from kchaos.workloads.spec import TxnSpec

    monkeypatch.setattr(tp, "child_command", lambda c: [sys.executable, "-c", TXN_CHILD,
                                                        c.to_json()])  # fmt: skip
    spec = WorkloadSpec(
        duration=60.0,
        topics=("a",),
        producers=ProducerConfig(count=1),
        consumers=ConsumerConfig(count=1),
        transactions=TxnSpec(producers=2),
    )
    sink = ListSink()
    workload = wl.Workload(spec, "h:1", sink, monitor=False, run_dir=RunDir(tmp_path))
    monkeypatch.setattr(wl, "drain", lambda *args, **kwargs: None)
    with pytest.raises(WorkloadError, match="not running"):
        workload.replace_txn_client("kchaos-t-3")
    workload.producers = []  # no Kafka here: only the transactional children run
    workload.consumers = []
    workload.start()
    try:
        old = workload.txn_client("kchaos-t-3")
        assert old.process == 3 and old is workload.transactional[0]
        eventually(lambda: old.init_result() is not None, "the first child's txn-init")
        eventually(lambda: old.open_transactions() == ["3-0"], "its open transaction")
        assert old.pid is not None and old.init_result()["producer_epoch"] == 13  # type: ignore[index]

        new = workload.replace_txn_client("kchaos-t-3")
        # the next free id (producer 1, consumer 2, txn 3 and 4), the same transactional.id
        assert new.process == 5 and new.transactional_id == "kchaos-t-3"
        assert new.config.role == "producer" and new.config.topics == old.config.topics
        eventually(lambda: new.init_result() is not None, "the replacement's txn-init")
        assert workload.txn_client("kchaos-t-3") is new  # the newest holder is the live one
        assert old._superseded.is_set()  # if its child dies now, it is not restarted
        assert workload.txn_client("kchaos-t-4").process == 4
        with pytest.raises(LookupError, match="kchaos-t-3, kchaos-t-4"):
            workload.txn_client("kchaos-t-9")
    finally:
        stats = workload.stop()
    with pytest.raises(WorkloadError, match="not running"):
        workload.replace_txn_client("kchaos-t-3")
    inits = [(e["process"], e["transactional_id"]) for e in sink.events
             if e["f"] == "txn-init" and e["type"] == "ok"]  # fmt: skip
    assert sorted(inits) == [(3, "kchaos-t-3"), (4, "kchaos-t-4"), (5, "kchaos-t-3")]
    assert {e["txn"] for e in sink.events if e["f"] == "txn" and e["type"] == "ok"} == {
        "3-0", "4-0", "5-0"
    }  # fmt: skip
    assert stats.txn_invoked == 3 and stats.txn_ok == 3  # the replacement counts too


def test_a_thread_worker_is_no_client_a_fault_can_stop() -> None:
    from kchaos.workloads.spec import TxnSpec

    workload = wl.Workload(
        WorkloadSpec(duration=60.0, topics=("a",), producers=ProducerConfig(count=0),
                     transactions=TxnSpec(process=False)),
        "h:1", ListSink(), monitor=False,
    )  # fmt: skip
    with pytest.raises(LookupError, match="in a thread of the harness"):
        workload.txn_client("kchaos-t-1")


# A transactional child slow to start: its txn-init answered after SLOW_START_S, or never
# (argv[2] == "never"); it exits on "stop".
SLOW_START_S = 1.5
SLOW_CHILD = f"""
import json, sys, time
c = json.loads(sys.argv[1])
p, tid = c["process"], c["transactional_id"]
def line(**e):
    sys.stdout.write(json.dumps({{"process": p, **e}}) + "\\n"); sys.stdout.flush()
line(type="invoke", f="txn-init", transactional_id=tid)
if sys.argv[2] != "never":
    time.sleep({SLOW_START_S})
    line(type="ok", f="txn-init", transactional_id=tid, producer_id=1, producer_epoch=1)
sys.stdin.readline()
"""


@pytest.mark.parametrize("answer", ["late", "never"])
def test_start_returns_once_the_transactional_clients_are_up_or_the_wait_ends(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, answer: str
) -> None:
    """The workload's clock (its duration, the fault schedule) starts when start()
    returns: a client's slow start (a JVM's) must not be taken from it."""
    import sys

    import kchaos.workloads.txn_process as tp
    from kchaos.workloads.spec import TxnSpec

    monkeypatch.setattr(tp, "child_command", lambda c: [sys.executable, "-c", SLOW_CHILD,
                                                        c.to_json(), answer])  # fmt: skip
    monkeypatch.setattr(wl, "CLIENT_START_TIMEOUT_S", 3 * SLOW_START_S)
    spec = WorkloadSpec(duration=60.0, topics=("a",), producers=ProducerConfig(count=0),
                        transactions=TxnSpec(producers=2))  # fmt: skip
    workload = wl.Workload(spec, "h:1", ListSink(), monitor=False)
    workload.producers, workload.consumers = [], []
    began = time.monotonic()
    with caplog.at_level(logging.WARNING, logger=wl.log.name):
        workload.start()
    took = time.monotonic() - began
    try:
        if answer == "late":
            assert all(w.init_result() is not None for w in workload.transactional)
            assert SLOW_START_S <= workload.clients_up_s <= took < 3 * SLOW_START_S
            assert "not up" not in caplog.text
        else:
            assert all(w.init_result() is None for w in workload.transactional)
            # one deadline for all the clients, not one per client
            assert 3 * SLOW_START_S <= workload.clients_up_s < 4 * SLOW_START_S
            assert "txn worker 1, txn worker 2" in caplog.text
    finally:
        workload.stop()
