"""confluent-kafka (librdkafka) behind :mod:`kchaos.workloads.clients`' interface."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer
from confluent_kafka import TopicPartition as CTopicPartition

from kchaos.harness.errors import ClientFatal, SendRefused
from kchaos.workloads.classify import canonical_name
from kchaos.workloads.client_log import LIBRDKAFKA_LOG  # where a `debug` config logs
from kchaos.workloads.clients import (
    AssignCallback,
    Record,
    SendCallback,
    SendResult,
    TopicPartition,
)
from kchaos.workloads.spec import ProducerConfig, producer_settings
from kchaos.workloads.values import value_of

_OFFSET_BEGINNING = -2


def producer_config(bootstrap_servers: str, spec: ProducerConfig, client_id: str) -> dict[str, Any]:
    s = producer_settings(spec)
    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap_servers,
        "client.id": client_id,
        "acks": "all" if spec.acks in ("all", "-1") else spec.acks,
        "enable.idempotence": s.idempotence,
        "delivery.timeout.ms": s.delivery_timeout_ms,
        "request.timeout.ms": s.request_timeout_ms,
        "linger.ms": s.linger_ms,
        "compression.type": s.compression,
        "topic.metadata.refresh.interval.ms": 5000,
    }
    if s.retries is not None:
        conf["retries"] = s.retries
    if s.batch_size is not None:
        conf["batch.size"] = s.batch_size
    if s.max_in_flight_requests is not None:
        conf["max.in.flight.requests.per.connection"] = s.max_in_flight_requests
    return with_extra(conf, s.other)


def with_extra(conf: dict[str, Any], extra: Mapping[str, str]) -> dict[str, Any]:
    """``conf`` with the scenario's own client settings ``extra`` over it; a ``debug``
    among them sends librdkafka's log through :data:`LIBRDKAFKA_LOG` (the run's file)."""
    conf.update(extra)
    if "debug" in conf:
        conf["logger"] = LIBRDKAFKA_LOG
    return conf


def error_name(err: KafkaError) -> str:
    return canonical_name(err.name())


def _fatal_call(fn: Callable[[float], object], timeout: float) -> None:
    """``fn(timeout)``, poll() or flush(): librdkafka raises a fatal error from those (no
    error_cb is set), which becomes :class:`ClientFatal`; any other error is raised as
    it is."""
    try:
        fn(timeout)
    except KafkaException as exc:
        err = exc.args[0] if exc.args else None
        if isinstance(err, KafkaError) and err.fatal():
            raise ClientFatal(error_name(err), err.str()) from exc
        raise


class ConfluentProducer:
    def __init__(
        self, bootstrap_servers: str, spec: ProducerConfig, on_done: SendCallback, client_id: str
    ) -> None:
        self._on_done = on_done
        self._producer = Producer(producer_config(bootstrap_servers, spec, client_id))
        self._acks_zero = spec.acks == "0"

    def _delivered(self, err: KafkaError | None, msg: Message) -> None:
        value = value_of(msg.value()) or ""
        offset = msg.offset()
        if err is not None:
            self._on_done(value, SendResult(error=error_name(err)))
        elif self._acks_zero or offset is None or offset < 0:
            self._on_done(value, SendResult(partition=msg.partition(), error="NO_ACK"))
        else:
            self._on_done(value, SendResult(partition=msg.partition(), offset=offset))

    def send(self, topic: str, key: bytes | None, data: bytes, value: str) -> None:
        try:
            self._producer.produce(topic, data, key, on_delivery=self._delivered)
        except BufferError as exc:
            raise SendRefused("QUEUE_FULL", str(exc)) from exc
        except KafkaException as exc:
            raise SendRefused(error_name(exc.args[0]), str(exc)) from exc

    def poll(self, timeout: float) -> None:
        _fatal_call(self._producer.poll, timeout)

    def flush(self, timeout: float) -> None:
        _fatal_call(self._producer.flush, timeout)

    def close(self) -> None:
        # librdkafka destroys the handle when the object is collected; drop our reference.
        del self._producer


def consumer_config(
    bootstrap_servers: str,
    group_id: str | None,
    rack: str | None,
    client_id: str,
    extra: Mapping[str, str],
) -> dict[str, Any]:
    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap_servers,
        "client.id": client_id,
        "group.id": group_id or f"{client_id}-nogroup",
        "enable.auto.commit": False,
        "enable.auto.offset.store": True,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": 10000,
        "heartbeat.interval.ms": 2000,
        "topic.metadata.refresh.interval.ms": 5000,
        "statistics.interval.ms": 1000,
    }
    if rack:
        conf["client.rack"] = rack
    with_extra(conf, extra)
    if conf.get("group.protocol") == "consumer":  # KIP-848: the broker owns these
        for key in ("session.timeout.ms", "heartbeat.interval.ms", "partition.assignment.strategy"):
            if key not in extra:
                conf.pop(key, None)
    return conf


class ConfluentConsumer:
    def __init__(
        self,
        bootstrap_servers: str,
        group_id: str | None,
        rack: str | None,
        client_id: str,
        extra: Mapping[str, str],
    ) -> None:
        conf = consumer_config(bootstrap_servers, group_id, rack, client_id, extra)
        conf["stats_cb"] = self._stats
        self._sources: dict[TopicPartition, tuple[int, int]] = {}
        self._sources_lock = threading.Lock()
        strategy = str(conf.get("partition.assignment.strategy", ""))
        protocol = str(conf.get("group.protocol", "classic"))
        self._incremental = "cooperative" in strategy or protocol == "consumer"
        self._consumer = Consumer(conf)

    # -- statistics: which broker each partition is fetched from (KIP-392 check) --------
    def _stats(self, raw: str) -> None:
        try:
            stats = json.loads(raw)
        except ValueError:
            return
        found: dict[TopicPartition, tuple[int, int]] = {}
        for topic, tstats in stats.get("topics", {}).items():
            for part, pstats in tstats.get("partitions", {}).items():
                pid = int(part)
                if pid < 0 or pstats.get("fetch_state") in (None, "none", "stopped"):
                    continue
                found[(topic, pid)] = (int(pstats.get("leader", -1)), int(pstats.get("broker", -1)))
        with self._sources_lock:
            self._sources = found

    def fetch_sources(self) -> dict[TopicPartition, tuple[int, int]]:
        with self._sources_lock:
            return dict(self._sources)

    # -- assignment --------------------------------------------------------------------
    def subscribe(self, topics: Sequence[str], on_assign: AssignCallback) -> None:
        incremental = self._incremental

        def full(consumer: Consumer) -> list[TopicPartition]:
            return sorted((p.topic, p.partition) for p in consumer.assignment())

        def assigned(consumer: Consumer, parts: list[CTopicPartition]) -> None:
            if incremental:  # cooperative / KIP-848: parts are only the additions
                consumer.incremental_assign(parts)
                on_assign(full(consumer))
            else:  # eager: parts are the whole new assignment
                consumer.assign(parts)
                on_assign(sorted((p.topic, p.partition) for p in parts))

        def revoked(consumer: Consumer, parts: list[CTopicPartition]) -> None:
            if incremental:
                consumer.incremental_unassign(parts)
                on_assign(full(consumer))
            else:
                consumer.unassign()
                on_assign([])

        self._consumer.subscribe(
            list(topics), on_assign=assigned, on_revoke=revoked, on_lost=revoked
        )

    def assign(self, partitions: Sequence[tuple[str, int, int | None]]) -> None:
        parts = [
            CTopicPartition(t, p, _OFFSET_BEGINNING if o is None else o) for t, p, o in partitions
        ]
        self._consumer.assign(parts)

    def seek(self, topic: str, partition: int, offset: int) -> None:
        self._consumer.seek(CTopicPartition(topic, partition, offset))

    def poll(self, timeout: float, max_records: int) -> tuple[list[Record], list[str]]:
        records: list[Record] = []
        errors: list[str] = []
        for msg in self._consumer.consume(num_messages=max_records, timeout=timeout):
            err = msg.error()
            if err is not None:
                errors.append(error_name(err))
                continue
            records.append(
                Record(msg.topic() or "", msg.partition() or 0, msg.offset() or 0, msg.value())
            )
        return records, errors

    def commit(self) -> list[tuple[str, int, int]]:
        try:
            done = self._consumer.commit(asynchronous=False) or []
        except KafkaException as exc:
            if exc.args and error_name(exc.args[0]) == "NO_OFFSET":
                return []
            raise
        return [(tp.topic, tp.partition, tp.offset) for tp in done]

    def watermarks(self, topic: str, partition: int, timeout: float) -> tuple[int, int]:
        low, high = self._consumer.get_watermark_offsets(
            CTopicPartition(topic, partition), timeout=timeout, cached=False
        )
        return int(low), int(high)

    def partitions_for(self, topic: str, timeout: float) -> list[int]:
        meta = self._consumer.list_topics(topic, timeout=timeout)
        tmeta = meta.topics.get(topic)
        if tmeta is None or tmeta.error is not None:
            raise KafkaException(tmeta.error if tmeta is not None else "no such topic")
        return sorted(tmeta.partitions)

    def position(self, topic: str, partition: int) -> int | None:
        (found,) = self._consumer.position([CTopicPartition(topic, partition)])
        return int(found.offset) if found.offset >= 0 else None

    def group_metadata(self) -> object:
        return self._consumer.consumer_group_metadata()

    def committed(
        self, partitions: Sequence[TopicPartition], timeout: float
    ) -> dict[TopicPartition, int]:
        """The group's committed offsets (partitions without one are left out)."""
        done = self._consumer.committed(
            [CTopicPartition(t, p) for t, p in partitions], timeout=timeout
        )
        return {(tp.topic, tp.partition): int(tp.offset) for tp in done if tp.offset >= 0}

    def close(self) -> None:
        self._consumer.close()
