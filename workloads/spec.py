"""Frozen specs of a workload: what to produce, how to consume, where to drain.

Every field has a safe default (acks=all, idempotent, the confluent-kafka client); the
scenario loader builds a :class:`WorkloadSpec` (``Scenario.plan.workload``) and the runner
hands it to :class:`kchaos.workloads.workload.Workload`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from kchaos.harness.errors import ConfigError
from kchaos.harness.rundir.history import ISOLATIONS
from kchaos.harness.rundir.runjson import transactions_timeout_ms
from kchaos.workloads.values import PADDINGS

ClientLib = Literal["confluent", "kafka-python", "java"]
CLIENT_LIBS: tuple[str, ...] = ("confluent", "kafka-python", "java")
Isolation = Literal["read_uncommitted", "read_committed"]
# What a transactional worker does after a commit that did not finish (workloads.txn):
# a new client whose init_transactions fences the old epoch, or an abort on the same
# client and the next transaction there
AfterUnfinishedCommit = Literal["reinit", "keep-going"]
REINIT: AfterUnfinishedCommit = "reinit"
KEEP_GOING: AfterUnfinishedCommit = "keep-going"
AFTER_UNFINISHED_COMMIT: tuple[str, ...] = (REINIT, KEEP_GOING)


@dataclass(frozen=True)
class ProducerSpec:
    """How each producer worker sends. ``None`` means the client library's default."""

    acks: str = "all"  # "all", "1" or "0"
    idempotence: bool = True
    retries: int | None = None
    delivery_timeout_ms: int = 30000
    request_timeout_ms: int = 10000
    linger_ms: int = 5
    batch_size: int | None = None
    compression: str = "none"
    max_in_flight: int | None = None
    message_size: int = 100  # bytes per record, value and padding
    padding: str = "repeated"  # "repeated" or "random" (see values.padder)
    keys: int = 0  # distinct keys; 0 = no key (the client's partitioner spreads records)
    rate: float | None = None  # sends per second per worker; None = as fast as possible
    max_in_flight_sends: int = 10000  # application-side cap on unacknowledged sends
    extra: Mapping[str, str] = field(default_factory=dict)  # raw client configs

    @property
    def single_attempt(self) -> bool:
        """True when each batch is transmitted at most once (decides some ``fail``s)."""
        return self.retries == 0

    def validate(self, where: str = "producer") -> None:
        if self.acks not in ("all", "-1", "1", "0"):
            raise ConfigError(f"acks must be all, 1 or 0, not {self.acks!r}", field=where)
        if self.message_size < 1:
            raise ConfigError("message_size must be at least 1", field=where)
        if self.padding not in PADDINGS:
            raise ConfigError(
                f"padding must be one of {', '.join(PADDINGS)}, not {self.padding!r}",
                field=where,
            )
        if self.rate is not None and self.rate <= 0:
            raise ConfigError("rate must be positive (or absent for max)", field=where)
        if self.idempotence and self.retries == 0:
            raise ConfigError("idempotence needs retries > 0", field=where)


@dataclass(frozen=True)
class ConsumerSpec:
    """One consumer worker."""

    mode: Literal["subscribe", "assign"] = "subscribe"
    group_id: str = "kchaos"
    rack: str | None = None  # client.rack: fetch from a replica in this rack (KIP-392)
    partitions: tuple[int, ...] | None = None  # for mode "assign"; None = all partitions
    commit_interval_s: float = 2.0  # 0 = never commit
    poll_timeout_s: float = 0.5
    max_records: int = 500
    isolation: Isolation = "read_uncommitted"  # Kafka's isolation.level
    extra: Mapping[str, str] = field(default_factory=dict)


# Field metadata of the scenario schema used more than once (schemagen's vocabulary; the
# scenario model takes these from here, where the transactional classes need them)
DURATION_META: dict[str, Any] = {"ref": "duration"}
WORKERS_META: dict[str, Any] = {"minimum": 0, "maximum": 64}  # clients of one kind
GROUP_META: dict[str, Any] = {"minLength": 1}
KEYS_META: dict[str, Any] = {"minimum": 0}
MESSAGE_SIZE_META: dict[str, Any] = {"minimum": 1, "maximum": 1048576}
# transactional.id of a transactional worker: <prefix>-<process id>
TXN_ID_PREFIX = "kchaos-t"


@dataclass(frozen=True)
class CopierSpec:
    """A consume-transform-produce copier (input -> output, offsets in the transaction).

    The scenario's ``workload.transactions.copier`` and the worker's spec alike (one
    class: the field metadata is the scenario schema's, :mod:`kchaos.harness.rundir.schemagen`).
    """

    input: str = field(metadata={"minLength": 1})
    output: str = field(metadata={"minLength": 1})
    group: str = field(default="kchaos-copier", metadata=GROUP_META)
    # input records copied per transaction, at most
    max_batch: int = field(default=20, metadata={"minimum": 1, "maximum": 10000})


@dataclass(frozen=True)
class ReadersConfig:
    """read_committed consumers of a transactional run (besides ``consumers``)."""

    subscribe: int = field(default=0, metadata=WORKERS_META)  # group members
    assign: int = field(default=0, metadata=WORKERS_META)  # manual assignment of every partition
    group: str = field(default="kchaos-txn", metadata=GROUP_META)


@dataclass(frozen=True)
class TxnSpec:
    """Transactional producers, readers and copier (history format 1.2): the scenario's
    ``workload.transactions`` and what the workers run with, one class.

    Each producer worker uses ``transactional.id`` ``kchaos-t-<process>``
    (:data:`TXN_ID_PREFIX`), the same across its restarts. A transaction sends
    1..``max_sends`` values, each to a topic and key drawn at random, and is aborted on
    purpose with probability ``abort_ratio``. ``after_unfinished_commit`` says what a
    worker does when a commit ends without an answer: a new client (``reinit``) or an
    abort and the next transaction on the same one (``keep-going``); see
    :mod:`kchaos.workloads.txn`.
    """

    producers: int = field(
        default=1,
        metadata={
            "description": "Transactional producer workers; transactional.id kchaos-t-<process>.",
            **WORKERS_META,
        },
    )
    topics: tuple[str, ...] = field(
        default=(),
        metadata={
            "description": "Topics the transactional producers write; empty: the workload's "
            "topics but the copier's output."
        },
    )
    max_sends: int = field(
        default=4,
        metadata={
            "description": "Values per transaction: 1 to this many, each to a random topic "
            "and key.",
            "minimum": 1,
            "maximum": 1000,
        },
    )
    abort_ratio: float = field(
        default=0.2,
        metadata={
            "description": "The share of transactions aborted on purpose.",
            "minimum": 0,
            "maximum": 1,
        },
    )
    rate: float = field(
        default=5.0,
        metadata={
            "description": "Transactions per second per producer; 0 = as fast as possible.",
            "minimum": 0,
        },
    )
    # transaction.timeout.ms, in seconds
    timeout: float = field(
        default=10.0,
        metadata={
            "description": "transaction.timeout.ms; the drain waits at most this plus 10 s "
            "for the last stable offsets.",
            **DURATION_META,
        },
    )
    keys: int = field(default=16, metadata=KEYS_META)
    message_size: int = field(default=100, metadata=MESSAGE_SIZE_META)
    process: bool = field(
        default=True,
        metadata={
            "description": "Run each transactional client in a process of its own (default "
            "true), so that a fault can pause it."
        },
    )
    after_unfinished_commit: AfterUnfinishedCommit = field(
        default=REINIT,
        metadata={
            "description": "What a transactional worker does after a commit that did not "
            "finish (timed out, or a retriable error after its retries; the transaction is "
            "recorded info): reinit (default) closes the client and makes a new one with "
            "the same transactional.id, whose init_transactions fences the old epoch; "
            "keep-going aborts on the same client and begins the next transaction there, "
            "without a new init_transactions, as many applications do (what KAFKA-17754 "
            "needs). A fatal error, or an abort that fails, still makes a new client."
        },
    )
    readers: ReadersConfig = field(
        default_factory=ReadersConfig,
        metadata={"description": "read_committed consumers, besides workload.consumers."},
    )
    copier: CopierSpec | None = field(
        default=None,
        metadata={
            "description": "A consume-transform-produce copier: reads input read_committed, "
            "writes one copy per record to output and commits the consumed offsets in the "
            "same transaction."
        },
    )
    configs: Mapping[str, str] = field(default_factory=dict)  # raw producer configs

    @property
    def timeout_ms(self) -> int:
        """The transaction.timeout.ms the producers run with (a raw ``configs`` entry
        wins over ``timeout``): the one rule the workers and the checkers share."""
        found = transactions_timeout_ms(
            {"timeout": self.timeout, "configs": self.configs}, "workload.transactions"
        )
        return int(round(self.timeout * 1000)) if found is None else found

    @property
    def max_rate(self) -> float | None:
        """Transactions per second per producer, None for as fast as possible (``rate`` 0)."""
        return self.rate if self.rate > 0 else None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TxnSpec:
        """The spec from its ``dataclasses.asdict`` form (it crosses to a worker process)."""
        spec = dict(data)
        copier = spec.pop("copier", None)
        readers = spec.pop("readers", None) or {}
        return cls(
            **{**spec, "topics": tuple(spec.get("topics", ()))},
            copier=None if copier is None else CopierSpec(**copier),
            readers=ReadersConfig(**readers),
        )

    def validate(self, topics: tuple[str, ...], where: str = "transactions") -> None:
        if self.producers < 0:
            raise ConfigError("producers must be >= 0", field=f"{where}.producers")
        if self.after_unfinished_commit not in AFTER_UNFINISHED_COMMIT:
            raise ConfigError(
                f"after_unfinished_commit must be one of {', '.join(AFTER_UNFINISHED_COMMIT)}, "
                f"not {self.after_unfinished_commit!r}",
                field=f"{where}.after_unfinished_commit",
            )
        if self.max_sends < 1:
            raise ConfigError("max_sends must be at least 1", field=f"{where}.max_sends")
        if not 0.0 <= self.abort_ratio <= 1.0:
            raise ConfigError("abort_ratio must be within [0, 1]", field=f"{where}.abort_ratio")
        if self.rate < 0:
            raise ConfigError("rate must not be negative (0 for max)", field=f"{where}.rate")
        if self.timeout_ms < 1000:
            raise ConfigError("timeout must be at least 1 s", field=f"{where}.timeout")
        if self.message_size < 1:
            raise ConfigError("message_size must be at least 1", field=f"{where}.message_size")
        for name in self.producer_topics(topics):
            if name not in topics:
                raise ConfigError(
                    f"topic {name!r} is not a workload topic", field=f"{where}.topics"
                )
        if self.producers and not self.producer_topics(topics):
            raise ConfigError("the transactional producers have no topic", field=f"{where}.topics")
        c = self.copier
        if c is not None:
            for key, name in (("input", c.input), ("output", c.output)):
                if name not in topics:
                    raise ConfigError(
                        f"topic {name!r} is not a workload topic", field=f"{where}.copier.{key}"
                    )
            if c.input == c.output:
                raise ConfigError("input and output must differ", field=f"{where}.copier.output")
            if c.max_batch < 1:
                raise ConfigError("max_batch must be at least 1", field=f"{where}.copier.max_batch")

    def producer_topics(self, topics: tuple[str, ...]) -> tuple[str, ...]:
        """The topics the transactional producers write."""
        if self.topics:
            return self.topics
        out = self.copier.output if self.copier is not None else None
        return tuple(t for t in topics if t != out)

    def written_topics(self, topics: tuple[str, ...]) -> tuple[str, ...]:
        """The topics transactions write: the producers' and the copier's output."""
        found = list(self.producer_topics(topics)) if self.producers else []
        if self.copier is not None and self.copier.output not in found:
            found.append(self.copier.output)
        return tuple(found)


@dataclass(frozen=True)
class WorkloadSpec:
    """Everything a run's clients do."""

    topics: tuple[str, ...] = ("kchaos",)
    producers: int = 2
    consumers: tuple[ConsumerSpec, ...] = (ConsumerSpec(),)
    client: ClientLib = "confluent"
    producer: ProducerSpec = ProducerSpec()
    duration_s: float = 60.0
    close_timeout_s: float = 10.0  # how long stop() waits for in-flight sends
    drain_deadline_s: float = 120.0
    monitor_interval_s: float = 0.5
    metrics_interval_s: float = 2.0
    first_process: int = 1  # producers get ids first_process.., consumers after them
    # transactional producers and copier (ids after the consumers); a run with them
    # drains read_committed (history format 1.2)
    transactions: TxnSpec | None = None

    def txn_processes(self) -> list[tuple[int, str, str]]:
        """(process id, role, transactional.id) of each transactional worker: producers
        after the consumers, then the copier; the one place these ids are made."""
        tx = self.transactions
        if tx is None:
            return []
        first = self.first_process + self.producers + len(self.consumers)
        out = [(first + i, "producer", f"{TXN_ID_PREFIX}-{first + i}") for i in range(tx.producers)]
        if tx.copier is not None:
            process = first + tx.producers
            out.append((process, "copier", f"{TXN_ID_PREFIX}-{process}"))
        return out

    def transactional_topics(self) -> tuple[str, ...]:
        """The topics written by transactions (none without ``transactions``): where a
        last stable offset can fall behind the high watermark."""
        tx = self.transactions
        return () if tx is None else tx.written_topics(self.topics)

    def consumer_groups(self) -> set[str]:
        """The consumer groups the workload's readers and copier join."""
        groups = {c.group_id for c in self.consumers if c.mode == "subscribe"}
        if self.transactions is not None and self.transactions.copier is not None:
            groups.add(self.transactions.copier.group)
        return groups

    def validate(self) -> None:
        if not self.topics:
            raise ConfigError("at least one topic is needed", field="topics")
        if self.client not in CLIENT_LIBS:
            raise ConfigError(
                f"client must be one of {', '.join(CLIENT_LIBS)}, not {self.client!r}",
                field="client",
            )
        if self.producers < 0:
            raise ConfigError("producers must be >= 0", field="producers")
        self.producer.validate()
        for i, consumer in enumerate(self.consumers):
            if consumer.mode not in ("subscribe", "assign"):
                raise ConfigError(
                    f"mode must be subscribe or assign, not {consumer.mode!r}",
                    field=f"consumers[{i}].mode",
                )
            if consumer.isolation not in ISOLATIONS:
                raise ConfigError(
                    f"isolation must be one of {', '.join(ISOLATIONS)}, not {consumer.isolation!r}",
                    field=f"consumers[{i}].isolation",
                )
        if self.transactions is not None:
            self.transactions.validate(self.topics)
