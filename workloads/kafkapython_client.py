"""kafka-python behind :mod:`kchaos.workloads.clients`' interface.

kafka-python completes sends from its own I/O thread, so the callbacks below may run
concurrently with the worker; the worker's bookkeeping is locked for that.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping, Sequence
from typing import Any

import kafka.errors as kerrors
from kafka import ConsumerRebalanceListener, KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KTopicPartition

from kchaos.harness.errors import SendRefused
from kchaos.workloads.classify import canonical_name
from kchaos.workloads.clients import (
    AssignCallback,
    Record,
    SendCallback,
    SendResult,
    TopicPartition,
)
from kchaos.workloads.spec import ProducerConfig, producer_settings


def error_name(exc: BaseException) -> str:
    """Kafka's protocol name for broker errors, the class name otherwise."""
    name = getattr(type(exc), "message", None)
    if isinstance(exc, kerrors.BrokerResponseError) and isinstance(name, str):
        return canonical_name(name)
    return canonical_name(type(exc).__name__)


def producer_config(bootstrap_servers: str, spec: ProducerConfig, client_id: str) -> dict[str, Any]:
    s = producer_settings(spec)
    acks: Any = "all" if spec.acks in ("all", "-1") else int(spec.acks)
    conf: dict[str, Any] = {
        "bootstrap_servers": bootstrap_servers.split(","),
        "client_id": client_id,
        "acks": acks,
        "enable_idempotence": s.idempotence,
        "delivery_timeout_ms": s.delivery_timeout_ms,
        "request_timeout_ms": s.request_timeout_ms,
        "linger_ms": s.linger_ms,
        "compression_type": None if s.compression == "none" else s.compression,
        "metadata_max_age_ms": 5000,
        "max_block_ms": 10000,
    }
    if s.retries is not None:
        conf["retries"] = s.retries
    if s.batch_size is not None:
        conf["batch_size"] = s.batch_size
    if s.max_in_flight_requests is not None:
        conf["max_in_flight_requests_per_connection"] = s.max_in_flight_requests
    conf.update(s.other)
    return conf


class KafkaPythonProducer:
    def __init__(
        self, bootstrap_servers: str, spec: ProducerConfig, on_done: SendCallback, client_id: str
    ) -> None:
        self._on_done = on_done
        self._acks_zero = spec.acks == "0"
        self._producer = KafkaProducer(**producer_config(bootstrap_servers, spec, client_id))

    def _ok(self, value: str, meta: Any) -> None:  # add_callback puts our args first
        offset = getattr(meta, "offset", -1)
        if self._acks_zero or offset is None or offset < 0:
            self._on_done(value, SendResult(partition=meta.partition, error="NO_ACK"))
        else:
            self._on_done(value, SendResult(partition=meta.partition, offset=offset))

    def _err(self, value: str, exc: BaseException) -> None:
        self._on_done(value, SendResult(error=error_name(exc)))

    def send(self, topic: str, key: bytes | None, data: bytes, value: str) -> None:
        try:
            future = self._producer.send(topic, value=data, key=key)
        except kerrors.KafkaError as exc:
            # raised before the record reached the accumulator (metadata, size, buffer)
            raise SendRefused(error_name(exc), str(exc)) from exc
        future.add_callback(self._ok, value)
        future.add_errback(self._err, value)

    def poll(self, timeout: float) -> None:
        # completions arrive on kafka-python's own thread; yield the GIL so it can run
        time.sleep(timeout)

    def flush(self, timeout: float) -> None:
        # what is left in flight after the timeout is recorded as info by the worker
        with contextlib.suppress(kerrors.KafkaTimeoutError):
            self._producer.flush(timeout=timeout)

    def close(self) -> None:
        # close(timeout=0) raises when batches are still in flight; they are already
        # recorded as info, so the timeout is expected here
        with contextlib.suppress(kerrors.KafkaTimeoutError):
            self._producer.close(timeout=0)


class _Listener(ConsumerRebalanceListener):
    def __init__(self, consumer: KafkaConsumer, on_assign: AssignCallback) -> None:
        self._consumer = consumer
        self._on_assign = on_assign

    def on_partitions_revoked(self, revoked: Any) -> None:
        self._on_assign([])

    def on_partitions_assigned(self, assigned: Any) -> None:
        self._on_assign(sorted((tp.topic, tp.partition) for tp in self._consumer.assignment()))

    def on_partitions_lost(self, lost: Any) -> None:
        self._on_assign([])


class KafkaPythonConsumer:
    def __init__(
        self,
        bootstrap_servers: str,
        group_id: str | None,
        rack: str | None,
        client_id: str,
        extra: Mapping[str, str],
    ) -> None:
        conf: dict[str, Any] = {
            "bootstrap_servers": bootstrap_servers.split(","),
            "client_id": client_id,
            "group_id": group_id,
            "enable_auto_commit": False,
            "auto_offset_reset": "earliest",
            "session_timeout_ms": 10000,
            "heartbeat_interval_ms": 2000,
            "metadata_max_age_ms": 5000,
            "request_timeout_ms": 20000,
        }
        if rack:
            conf["client_rack"] = rack
        conf.update(extra)
        self._consumer = KafkaConsumer(**conf)

    def subscribe(self, topics: Sequence[str], on_assign: AssignCallback) -> None:
        self._consumer.subscribe(list(topics), listener=_Listener(self._consumer, on_assign))

    def assign(self, partitions: Sequence[tuple[str, int, int | None]]) -> None:
        tps = [KTopicPartition(t, p) for t, p, _ in partitions]
        self._consumer.assign(tps)
        for tp, (_, _, offset) in zip(tps, partitions, strict=True):
            if offset is None:
                self._consumer.seek_to_beginning(tp)
            else:
                self._consumer.seek(tp, offset)

    def seek(self, topic: str, partition: int, offset: int) -> None:
        self._consumer.seek(KTopicPartition(topic, partition), offset)

    def poll(self, timeout: float, max_records: int) -> tuple[list[Record], list[str]]:
        try:
            batches = self._consumer.poll(timeout_ms=int(timeout * 1000), max_records=max_records)
        except kerrors.KafkaError as exc:
            return [], [error_name(exc)]
        records = [
            Record(tp.topic, tp.partition, rec.offset, rec.value)
            for tp, recs in batches.items()
            for rec in recs
        ]
        return records, []

    def commit(self) -> list[tuple[str, int, int]]:
        positions = {
            tp: self._consumer.position(tp, timeout_ms=5000) for tp in self._consumer.assignment()
        }
        self._consumer.commit(timeout_ms=10000)
        return sorted((tp.topic, tp.partition, off) for tp, off in positions.items() if off)

    def watermarks(self, topic: str, partition: int, timeout: float) -> tuple[int, int]:
        tp = KTopicPartition(topic, partition)
        ms = int(timeout * 1000)
        low = self._consumer.beginning_offsets([tp], timeout_ms=ms)[tp]
        high = self._consumer.end_offsets([tp], timeout_ms=ms)[tp]
        return int(low), int(high)

    def partitions_for(self, topic: str, timeout: float) -> list[int]:
        parts = self._consumer.partitions_for_topic(topic)
        if not parts:
            raise kerrors.UnknownTopicOrPartitionError(topic)
        return sorted(parts)

    def position(self, topic: str, partition: int) -> int | None:
        found = self._consumer.position(KTopicPartition(topic, partition), timeout_ms=5000)
        return None if found is None else int(found)

    def group_metadata(self) -> object:
        return self._consumer.group_metadata()

    def fetch_sources(self) -> dict[TopicPartition, tuple[int, int]]:
        return {}  # kafka-python does not report which replica it fetches from

    def close(self) -> None:
        self._consumer.close(autocommit=False)
