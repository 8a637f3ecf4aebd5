"""librdkafka's fatal errors reach the transactional worker as TxnError, however
confluent-kafka raises them: as a KafkaException, or (from ``flush()``, seen with a
fenced producer) as the KafkaError object itself, which derives from no exception class.
The second is raised here the way the C extension raises it (``PyErr_SetObject``)."""

from __future__ import annotations

import ctypes
from collections.abc import Callable

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
