"""confluent-kafka's producer: a fatal error raised from poll() or flush() reaches the
worker as ClientFatal; any other librdkafka error is raised as it is."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from kchaos.harness.errors import ClientFatal
from kchaos.workloads.confluent_client import ConfluentProducer


class Failing:
    def __init__(self, err: KafkaError) -> None:
        self.err = err

    def poll(self, timeout: float) -> None:
        raise KafkaException(self.err)

    def flush(self, timeout: float) -> None:
        raise KafkaException(self.err)


@pytest.mark.parametrize("call", ["poll", "flush"])
def test_a_fatal_error_is_client_fatal_and_another_passes_through(call: str) -> None:
    producer = ConfluentProducer.__new__(ConfluentProducer)
    producer._producer = Failing(KafkaError(KafkaError._FENCED, "fenced", fatal=True))
    with pytest.raises(ClientFatal) as fatal:
        getattr(producer, call)(0.1)
    assert "FENCED" in str(fatal.value)
    producer._producer = Failing(KafkaError(KafkaError._TRANSPORT, "down"))
    with pytest.raises(KafkaException) as other:
        getattr(producer, call)(0.1)
    assert other.value.args[0].code() == KafkaError._TRANSPORT
