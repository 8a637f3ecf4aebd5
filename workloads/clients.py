"""The small client interface both Kafka libraries are wrapped behind.

Workers (producer, consumer, drain) speak only to :class:`ProducerClient` and
:class:`ConsumerClient`; :func:`make_producer` / :func:`make_consumer` pick the library
by its name in ``CLIENT_LIBS`` (``"confluent-kafka"``, ``"kafka-python"``). Error names
handed back are canonical (see :mod:`kchaos.workloads.classify`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from kchaos.harness.errors import ConfigError
from kchaos.workloads.spec import ProducerConfig

TopicPartition = tuple[str, int]
# librdkafka logs every disconnect at warning level on stderr, which is the point of a
# chaos run; errors only (3) keep the console readable. Configs may set log_level.
QUIET_LOG_LEVEL = "3"


class SendResult(NamedTuple):
    """The client's verdict on one send: an error name, or where it was written."""

    partition: int | None = None
    offset: int | None = None
    error: str | None = None


SendCallback = Callable[[str, SendResult], None]  # (value, result)


class Closable(Protocol):
    def close(self) -> object: ...


def close_quietly(
    client: Closable, log: logging.Logger, what: str, level: int = logging.WARNING
) -> None:
    """Close ``client``; if that fails, log ``{what} failed`` with the traceback on ``log``
    at ``level``, and go on: a client that will not close must not end its worker."""
    try:
        client.close()
    except Exception:  # noqa: BLE001 - see above
        log.log(level, "%s failed", what, exc_info=True, stacklevel=2)


def txn_producer_common(
    bootstrap_servers: str, transactional_id: str, timeout_ms: int, client_id: str
) -> dict[str, Any]:
    """The settings every transactional client gets, under names librdkafka and Kafka's
    Java producer share; each client adds its own (confluent_txn, java_txn)."""
    return {
        "bootstrap.servers": bootstrap_servers,
        "client.id": client_id,
        "transactional.id": transactional_id,
        "transaction.timeout.ms": timeout_ms,
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 5,
        "request.timeout.ms": 5000,
        "delivery.timeout.ms": timeout_ms,  # librdkafka: at most the transaction timeout
    }


class TxnProducerClient(Protocol):
    """A transactional producer. Every method raises :class:`TxnError` on failure."""

    #: The transaction protocol the client really speaks (format 1.3's
    #: ``transaction_version`` on ``txn-init`` lines): 2 only for a client that
    #: implements KIP-890's second part (an epoch bump per transaction), on a cluster
    #: whose ``transaction.version`` feature is 2; 1 otherwise.
    transaction_version: int

    def init(self, timeout: float) -> tuple[int | None, int | None]:
        """``init_transactions``; (producer id, epoch) where the client reports them."""
        ...

    def begin(self) -> None: ...

    def send(self, topic: str, key: bytes | None, data: bytes, value: str) -> None:
        """Enqueue one record of the open transaction; its result goes to the callback
        the client was made with."""
        ...

    def flush(self, timeout: float) -> int:
        """Wait for delivery reports; the number of records still queued."""
        ...

    def send_offsets(
        self, offsets: Sequence[tuple[str, int, int]], group_metadata: object, timeout: float
    ) -> None: ...

    def commit(self, timeout: float) -> None: ...

    def abort(self, timeout: float) -> None: ...

    def close(self) -> None: ...


class ProducerClient(Protocol):
    def send(self, topic: str, key: bytes | None, data: bytes, value: str) -> None:
        """Enqueue one record; ``value`` is handed back to the callback with the result.

        Raises :class:`SendRefused` when the record was not enqueued.
        """
        ...

    def poll(self, timeout: float) -> None:
        """Serve delivery callbacks (no-op for clients that call back from their own thread)."""
        ...

    def flush(self, timeout: float) -> None:
        """Wait up to ``timeout`` for every enqueued record to complete."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Record:
    topic: str
    partition: int
    offset: int
    data: bytes | None


AssignCallback = Callable[[list[TopicPartition]], None]


class ConsumerClient(Protocol):
    def subscribe(self, topics: Sequence[str], on_assign: AssignCallback) -> None:
        """Join the group; ``on_assign`` gets the full assignment after every change."""
        ...

    def assign(self, partitions: Sequence[tuple[str, int, int | None]]) -> None:
        """Manual assignment; offset ``None`` starts at the committed or earliest offset."""
        ...

    def seek(self, topic: str, partition: int, offset: int) -> None:
        """Move the position of one assigned partition."""
        ...

    def poll(self, timeout: float, max_records: int) -> tuple[list[Record], list[str]]:
        """Records in the order the client returned them, and error names it reported."""
        ...

    def commit(self) -> list[tuple[str, int, int]]:
        """Commit the current positions synchronously; the committed (topic, part, offset)."""
        ...

    def watermarks(self, topic: str, partition: int, timeout: float) -> tuple[int, int]:
        """(log start offset, high watermark) asked of the partition's leader."""
        ...

    def partitions_for(self, topic: str, timeout: float) -> list[int]: ...

    def position(self, topic: str, partition: int) -> int | None:
        """The offset the client will read next from an assigned partition (past control
        records and aborted data for a read_committed reader), None when unknown."""
        ...

    def group_metadata(self) -> object:
        """The consumer group metadata a transaction commits offsets with."""
        ...

    def fetch_sources(self) -> dict[TopicPartition, tuple[int, int]]:
        """(leader, broker fetched from) per partition where the client reports it."""
        ...

    def close(self) -> None: ...


def make_producer(
    lib: str, bootstrap_servers: str, spec: ProducerConfig, on_done: SendCallback, client_id: str
) -> ProducerClient:
    if lib == "confluent-kafka":
        from kchaos.workloads.confluent_client import ConfluentProducer

        return ConfluentProducer(bootstrap_servers, spec, on_done, client_id)
    if lib == "kafka-python":
        from kchaos.workloads.kafkapython_client import KafkaPythonProducer

        return KafkaPythonProducer(bootstrap_servers, spec, on_done, client_id)
    raise ConfigError(f"unknown client library {lib!r}", field="client")


def make_consumer(
    lib: str,
    bootstrap_servers: str,
    *,
    group_id: str | None,
    rack: str | None = None,
    client_id: str = "kchaos-consumer",
    extra: Mapping[str, str] | None = None,
    isolation: str = "read_uncommitted",
) -> ConsumerClient:
    """A consumer of ``lib``; ``isolation`` is Kafka's isolation.level (a config of the
    same name in ``extra`` wins). It is always set: librdkafka's own default is
    read_committed (confluent-kafka 1.2 on), Kafka's and kafka-python's read_uncommitted,
    so a reader left to its library's default would not read as its ``assign`` lines say."""
    extra = dict(extra or {})
    key = "isolation.level" if lib == "confluent-kafka" else "isolation_level"
    extra.setdefault(key, isolation)
    if lib == "confluent-kafka":
        from kchaos.workloads.confluent_client import ConfluentConsumer

        return ConfluentConsumer(bootstrap_servers, group_id, rack, client_id, extra or {})
    if lib == "kafka-python":
        from kchaos.workloads.kafkapython_client import KafkaPythonConsumer

        return KafkaPythonConsumer(bootstrap_servers, group_id, rack, client_id, extra or {})
    raise ConfigError(f"unknown client library {lib!r}", field="client")
