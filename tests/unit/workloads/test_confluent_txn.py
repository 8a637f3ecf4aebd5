"""librdkafka's fatal errors reach the transactional worker as TxnError, however
confluent-kafka raises them: as a KafkaException, or (from ``flush()``, seen with a
fenced producer) as the KafkaError object itself, which derives from no exception class.
The second is raised here the way the C extension raises it (``PyErr_SetObject``)."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from kchaos.harness.errors import TxnError
from kchaos.workloads.confluent_txn import kafka_call

FENCED = KafkaError(KafkaError._FENCED, "fenced by a newer instance", fatal=True)


def raise_bare(err: KafkaError) -> None:
    # a PyDLL call raises whatever the error indicator holds once it returns
    ctypes.pythonapi.PyErr_SetObject(ctypes.py_object(KafkaError), ctypes.py_object(err))


def test_a_bare_kafka_error_becomes_a_fenced_txn_error() -> None:
    with pytest.raises(TxnError) as caught:
        kafka_call(raise_bare, FENCED)
    assert caught.value.name == "FENCED" and caught.value.fenced and caught.value.fatal


def test_a_kafka_exception_becomes_a_txn_error() -> None:
    def fail() -> None:
        raise KafkaException(KafkaError(KafkaError._STATE, "not ready"))

    with pytest.raises(TxnError) as caught:
        kafka_call(fail)
    assert caught.value.name == "STATE" and not caught.value.fenced


def test_other_errors_and_results_pass_through() -> None:
    assert kafka_call(lambda a, b: a + b, 2, 3) == 5
    with pytest.raises(BufferError):
        kafka_call(lambda: (_ for _ in ()).throw(BufferError("queue full")))


class FailingProducer:
    """librdkafka's transactional calls, each failing as ``fail`` does."""

    def __init__(self, fail: Callable[[], None]) -> None:
        self.fail = fail

    def __getattr__(self, name: str) -> object:
        return lambda *args: self.fail()


@pytest.mark.parametrize("call", ["init", "begin", "send_offsets", "commit", "abort"])
def test_every_transactional_call_raises_librdkafkas_errors_as_txn_errors(call: str) -> None:
    from kchaos.workloads.confluent_txn import ConfluentTxnProducer

    args = {"init": (1.0,), "begin": (), "send_offsets": ([("t", 0, 5)], None, 1.0)}
    producer = ConfluentTxnProducer.__new__(ConfluentTxnProducer)

    def state() -> None:
        raise KafkaException(KafkaError(KafkaError._STATE, "not ready"))

    for fail, name in ((state, "STATE"), (lambda: raise_bare(FENCED), "FENCED")):
        producer._producer = FailingProducer(fail)
        with pytest.raises(TxnError) as caught:
            getattr(producer, call)(*args.get(call, (1.0,)))
        assert caught.value.name == name


class StatsProducer:
    """A librdkafka producer whose statistics name the producer id at its ``report_at``-th
    poll (never, with None)."""

    report_at: int | None = 3

    def __init__(self, conf: dict[str, Any]) -> None:
        self.stats_cb = conf["stats_cb"]
        self.polls: list[float] = []

    def init_transactions(self, timeout: float) -> None:
        pass

    def poll(self, timeout: float) -> int:
        self.polls.append(timeout)
        if len(self.polls) == self.report_at:
            self.stats_cb('{"eos": {"producer_id": 7001, "producer_epoch": 4}}')
            return 1
        return 0


def _producer(monkeypatch: pytest.MonkeyPatch, report_at: int | None) -> tuple[Any, Any]:
    from kchaos.workloads import confluent_txn

    monkeypatch.setattr(StatsProducer, "report_at", report_at)
    monkeypatch.setattr(confluent_txn, "Producer", StatsProducer)
    made = confluent_txn.ConfluentTxnProducer(
        "localhost:9092", "tid", 10_000, lambda value, result: None, "c", {}
    )
    return made, made._producer


def test_init_serves_the_client_until_its_statistics_name_the_producer_id(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made, fake = _producer(monkeypatch, report_at=3)
    assert made.init(5.0) == (7001, 4)
    assert fake.polls == [0.1, 0.1, 0.1]  # its poll is the pause, and it stops once named


def test_init_without_statistics_gives_no_producer_id(monkeypatch: pytest.MonkeyPatch) -> None:
    from kchaos.workloads import confluent_txn

    monkeypatch.setattr(confluent_txn, "_STATS_WAIT_S", 0.3)
    made, fake = _producer(monkeypatch, report_at=None)
    assert made.init(5.0) == (None, None)
    assert fake.polls and set(fake.polls) == {0.1}  # served until the wait ran out
