"""confluent-kafka's transactional producer (:class:`~kchaos.workloads.clients.TxnProducerClient`).

librdkafka classifies every transactional error itself (``retriable()``,
``txn_requires_abort()``, ``fatal()``); :class:`TxnError` carries that classification
to the worker. confluent-kafka 2.16 raises a fatal error (a fenced producer:
``_FENCED``) from ``flush()`` as the ``KafkaError`` object itself, whose class is no
``BaseException``: only a bare ``except`` catches it (seen in the zombie-fencing runs,
where the fenced child crashed instead of recording its transaction, with or without an
``error_cb``). :func:`kafka_call` turns it, and ``KafkaException``, into TxnError.
The producer id and epoch come from librdkafka's statistics (``eos``),
which it emits from ``poll`` every ``statistics.interval.ms``.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from confluent_kafka import KafkaError, KafkaException, Message, Producer
from confluent_kafka import TopicPartition as CTopicPartition

from kchaos.harness.cluster.retry import Poll
from kchaos.harness.errors import SendRefused, TxnError
from kchaos.workloads.clients import SendCallback, SendResult, txn_producer_common
from kchaos.workloads.confluent_client import error_name, with_extra
from kchaos.workloads.values import value_of

T = TypeVar("T")
_STATS_WAIT_S = 1.5  # how long init waits for a statistics report naming the producer id


def txn_producer_config(
    bootstrap_servers: str,
    transactional_id: str,
    timeout_ms: int,
    client_id: str,
    extra: Mapping[str, str],
) -> dict[str, Any]:
    conf = txn_producer_common(bootstrap_servers, transactional_id, timeout_ms, client_id)
    conf["topic.metadata.refresh.interval.ms"] = 5000
    conf["statistics.interval.ms"] = 500
    return with_extra(conf, extra)


def classified(err: KafkaError) -> TxnError:
    """librdkafka's error as a classified :class:`TxnError`."""
    return TxnError(
        error_name(err),
        err.str(),
        retriable=err.retriable(),
        abortable=err.txn_requires_abort(),
        fatal=err.fatal(),
    )


def kafka_call(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` with librdkafka's errors, raised either way, as :class:`TxnError`."""
    try:
        return fn(*args)
    except KafkaException as exc:
        raise txn_error(exc) from exc
    except:  # noqa: E722 - a KafkaError object raised as it is derives from no exception
        raised = sys.exc_info()[1]
        if isinstance(raised, KafkaError):
            raise classified(raised) from None
        raise


def txn_error(exc: BaseException) -> TxnError:
    """librdkafka's exception as a classified :class:`TxnError`."""
    err = exc.args[0] if exc.args else None
    if isinstance(err, KafkaError):
        return classified(err)
    return TxnError(type(exc).__name__, str(exc))


class ConfluentTxnProducer:
    # librdkafka does not implement KIP-890's second part (the per-transaction epoch
    # bump of transaction version 2): it speaks transaction version 1 whatever the
    # cluster's finalized transaction.version feature is.
    transaction_version = 1

    def __init__(
        self,
        bootstrap_servers: str,
        transactional_id: str,
        timeout_ms: int,
        on_done: SendCallback,
        client_id: str,
        extra: Mapping[str, str],
    ) -> None:
        self._on_done = on_done
        self._eos: dict[str, Any] = {}
        conf = txn_producer_config(
            bootstrap_servers, transactional_id, timeout_ms, client_id, extra
        )
        conf["stats_cb"] = self._stats
        self._producer = Producer(conf)

    def _stats(self, raw: str) -> None:
        with contextlib.suppress(ValueError):
            self._eos = dict(json.loads(raw).get("eos") or {})

    def _delivered(self, err: KafkaError | None, msg: Message) -> None:
        value = value_of(msg.value()) or ""
        if err is not None:
            self._on_done(value, SendResult(error=error_name(err)))
        else:
            offset = msg.offset()
            self._on_done(
                value,
                SendResult(
                    partition=msg.partition(),
                    offset=offset if offset is not None and offset >= 0 else None,
                ),
            )

    def init(self, timeout: float) -> tuple[int | None, int | None]:
        kafka_call(self._producer.init_transactions, timeout)
        self._eos = {}

        def reported() -> str | None:
            found = int(self._eos.get("producer_id", -1)) >= 0
            return None if found else "no producer id in the statistics yet"

        def serve(seconds: float) -> None:  # the client's poll delivers the statistics
            kafka_call(self._producer.poll, seconds)

        Poll("the producer id in librdkafka's statistics", reported, timeout=_STATS_WAIT_S,
             interval=0.1, sleep=serve).wait()  # fmt: skip
        pid, epoch = int(self._eos.get("producer_id", -1)), int(self._eos.get("producer_epoch", -1))
        return (pid if pid >= 0 else None), (epoch if pid >= 0 and epoch >= 0 else None)

    def begin(self) -> None:
        kafka_call(self._producer.begin_transaction)

    def send(self, topic: str, key: bytes | None, data: bytes, value: str) -> None:
        try:
            kafka_call(
                lambda: self._producer.produce(topic, data, key, on_delivery=self._delivered)
            )
        except BufferError as exc:
            raise SendRefused("QUEUE_FULL", str(exc)) from exc

    def flush(self, timeout: float) -> int:
        return int(kafka_call(self._producer.flush, timeout))

    def send_offsets(
        self, offsets: Sequence[tuple[str, int, int]], group_metadata: object, timeout: float
    ) -> None:
        kafka_call(
            self._producer.send_offsets_to_transaction,
            [CTopicPartition(t, p, o) for t, p, o in offsets],
            group_metadata,
            timeout,
        )

    def commit(self, timeout: float) -> None:
        kafka_call(self._producer.commit_transaction, timeout)

    def abort(self, timeout: float) -> None:
        kafka_call(self._producer.abort_transaction, timeout)

    def close(self) -> None:
        # librdkafka destroys the handle when the object is collected
        del self._producer
