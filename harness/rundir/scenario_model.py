"""The run description: a scenario as frozen dataclasses, what the loader returns, the
runner consumes and run.json holds (``RunJson.scenario``).

It lives in the run-directory package, at the bottom of the layers, because every reader
of run.json (the checkers, the reports, the analysis) gets the scenario typed, and the
transactional workers run with its ``workload.transactions`` (:class:`TxnSpec`) as their
own spec.

The one definition of a scenario file: every field has the meaning documented in
docs/scenarios.md, and the published JSON Schema (harness/schema/scenario.schema.json) is
generated from these classes by :mod:`kchaos.harness.scenario.schemagen` (a field's
``metadata`` holds what its type cannot say: ranges, patterns, descriptions; the keys are
listed in :mod:`kchaos.harness.rundir.schemagen`). Durations are seconds (floats;
``ref: duration`` lets the file also say ``30s``). Kafka properties (``Mapping[str, str]``)
are kept as strings, exactly as they go into server.properties or a client configuration.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from kchaos.harness.errors import ConfigError, HistoryError, shown
from kchaos.harness.rundir.anomalies import KINDS
from kchaos.harness.rundir.files import jsonable
from kchaos.harness.rundir.fromjson import from_json
from kchaos.harness.rundir.loglines import LogLine, parse_log_lines
from kchaos.harness.rundir.names import RESULTS_JSON, RUN_JSON
from kchaos.harness.rundir.results import Verdict
from kchaos.harness.rundir.tickets import Ticket

# What a transactional worker does after a commit that did not finish (workloads.txn):
# a new client whose init_transactions fences the old epoch, or an abort on the same
# client and the next transaction there
AfterUnfinishedCommit = Literal["reinit", "keep-going"]
REINIT: AfterUnfinishedCommit = "reinit"
KEEP_GOING: AfterUnfinishedCommit = "keep-going"
AFTER_UNFINISHED_COMMIT: tuple[str, ...] = (REINIT, KEEP_GOING)


# The client library of a workload's producers and readers, one spelling everywhere: the
# scenario's ``workload.client``, WorkloadSpec.client, the client factories and the
# benches. ``confluent`` is the old spelling of confluent-kafka (kchaos's API and the
# produce bench's --clients took it until 2026-12): :func:`client_lib` reads it.
ClientLib = Literal["confluent-kafka", "kafka-python", "java"]
CLIENT_LIBS: tuple[str, ...] = ("confluent-kafka", "kafka-python", "java")
OLD_CLIENT_NAMES: dict[str, str] = {"confluent": "confluent-kafka"}


def client_lib(name: str) -> str:
    """``name`` in today's spelling (``confluent`` -> ``confluent-kafka``); any other name
    as it is, for the caller's own check against :data:`CLIENT_LIBS`."""
    return OLD_CLIENT_NAMES.get(name, name)


# A step's length is ``for`` in every form a schedule takes: a scenario step, run.json's
# ``schedule`` (faults.schedule) and the pytest plugin's steps. ``duration`` is the old
# spelling a step may still use (older scenario files and the scenarios older run.json
# files embed); a step that gives both is refused.
LENGTH_KEY = "for"
OLD_LENGTH_KEY = "duration"


def length_key(step: Mapping[str, Any]) -> str:
    """The key that gives a step's length in ``step`` (file or run.json data): ``for``,
    or the old spelling when only that is there."""
    return OLD_LENGTH_KEY if OLD_LENGTH_KEY in step and LENGTH_KEY not in step else LENGTH_KEY


def int_value(value: Any, source: str, where: str) -> int:
    """An integer, or a string of one (Kafka properties are strings); not 1.5, not "2.0"."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*[+-]?[0-9]{1,18}\s*", value):
        return int(value)
    raise HistoryError(f"expected an integer, got {shown(value)}", file=source, field=where)


def positive_int(value: Any, source: str, where: str) -> int:
    """A whole number, at least 1 (min.insync.replicas, a timeout in ms)."""
    number = int_value(value, source, where)
    if number < 1:
        raise HistoryError(
            f"expected a positive integer, got {shown(value)}", file=source, field=where
        )
    return number


def transactions_timeout_ms(
    section: Mapping[str, Any], source: str = RUN_JSON, where: str = "workload.transactions"
) -> int | None:
    """The transaction.timeout.ms a scenario's ``workload.transactions`` section gives its
    producers: its raw ``configs`` entry where it sets one (the client takes that over
    everything), else ``timeout`` in seconds; None where the section states neither. The
    workers (:mod:`kchaos.harness.scenario.plan`) and the checkers read it here, so they
    cannot disagree."""
    configs = section.get("configs")
    if isinstance(configs, Mapping) and "transaction.timeout.ms" in configs:
        return positive_int(
            configs["transaction.timeout.ms"], source, f"{where}.configs.transaction.timeout.ms"
        )
    seconds = section.get("timeout")
    if seconds is None:
        return None
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds <= 0:
        raise HistoryError(
            f"expected a positive number of seconds, got {shown(seconds)}",
            file=source,
            field=f"{where}.timeout",
        )
    return int(round(seconds * 1000))


# Field metadata of the scenario schema used more than once (schemagen's vocabulary; the
# scenario model takes these from here, where the transactional classes need them)
DURATION_META: dict[str, Any] = {"ref": "duration"}
WORKERS_META: dict[str, Any] = {"minimum": 0, "maximum": 64}  # clients of one kind
GROUP_META: dict[str, Any] = {"minLength": 1}
KEYS_META: dict[str, Any] = {"minimum": 0}
MESSAGE_SIZE_META: dict[str, Any] = {"minimum": 1, "maximum": 1048576}
# transactional.id of a transactional worker: <prefix>-<process id>
TXN_ID_PREFIX = "kchaos-t"
# The first process id of a workload: its producers get FIRST_PROCESS.., the readers the
# ids after them, then the transactional workers (WorkloadConfig.txn_processes)
FIRST_PROCESS = 1


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
    # seconds between two sends of one transaction
    send_interval: float = field(
        default=0.0,
        metadata={
            "description": "Pause between two sends of one transaction (default 0): a "
            "transaction stays open that much longer per value, so that a request delayed "
            "from an earlier transaction lands while one is open and still sending "
            "(kafka-17754-delayed-end-txn).",
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
        return self.checked_timeout_ms("workload.transactions", "workload.transactions")

    def checked_timeout_ms(self, source: str, where: str) -> int:
        """:attr:`timeout_ms`; a value that is not a positive whole number of ms is a
        HistoryError naming ``source`` and the field under ``where``."""
        found = transactions_timeout_ms(
            {"timeout": self.timeout, "configs": self.configs}, source, where
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
        if self.send_interval < 0:
            raise ConfigError("send_interval must not be negative", field=f"{where}.send_interval")
        if self.send_interval * (self.max_sends - 1) * 1000 >= self.timeout_ms / 2:
            raise ConfigError(
                f"send_interval x (max_sends - 1) = {self.send_interval * (self.max_sends - 1):g} s"
                " leaves less than half the transaction timeout for the commit",
                field=f"{where}.send_interval",
            )
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


# The anomaly kinds `expect` may name: the vocabulary defined once in rundir.anomalies.
ANOMALY_KINDS: tuple[str, ...] = KINDS

# Field metadata used more than once (schemagen's vocabulary).
_KINDS: dict[str, Any] = {"items": {"ref": "anomaly"}}
# The file's ``valid``: a verdict, or ``any`` (None here).
_VALID: dict[str, Any] = {"enum": [True, False, "unknown", "any"]}


# What the scenario's ``cluster.image`` may name instead of an image tag: where the images
# come from (the runner's to resolve, :func:`kchaos.harness.scenario.plan.image_source`)
IMAGE_SOURCES: tuple[str, ...] = ("offline", "registry")


@dataclass(frozen=True)
class ClusterConfig:
    """The scenario's ``cluster`` section. The cluster package's
    :class:`~kchaos.harness.cluster.spec.ClusterSpec` is this class with the fields only
    the runtime sets added (a subclass: every field here is declared once, under one name;
    issue 34), so the run's cluster is described by these very fields."""

    brokers: int = field(default=3, metadata={"minimum": 1, "maximum": 9})
    controllers: int = field(
        default=0,
        metadata={
            "description": "Dedicated KRaft controllers; 0 = combined broker+controller nodes.",
            "minimum": 0,
            "maximum": 5,
        },
    )
    # None: harness.images.DEFAULT_KAFKA_VERSION
    kafka_version: str | None = field(
        default=None, metadata={"nullable": True, "pattern": "^[0-9]+\\.[0-9]+(\\.[0-9]+)?$"}
    )
    image: str | None = field(
        default=None,
        metadata={
            "description": 'null: the offline kchaos image; "registry": the official images; '
            "otherwise an image tag.",
            "nullable": True,
        },
    )
    server_properties: Mapping[str, str] = field(default_factory=dict)
    broker_properties: Mapping[int, Mapping[str, str]] = field(
        default_factory=dict,
        metadata={"description": "Per-broker server properties, keyed by node id."},
    )
    heap: str = field(default="512m", metadata={"pattern": "^[0-9]+[mMgG]$"})
    # extra ext4 options of the nodes' data filesystems (checked by ClusterSpec);
    # the file may give them as one comma-separated string
    data_mount_options: tuple[str, ...] = field(
        default=(),
        metadata={
            "description": "Extra ext4 options for every node's data filesystem, after "
            "noatime (also at each remount after a hard reboot): a list, or one "
            "comma-separated string. Example: [noauto_da_alloc].",
            "oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}],
        },
    )

    @property
    def image_tag(self) -> str | None:
        """The Kafka image tag ``image`` names; None where it names none (nothing, or a
        source: :data:`IMAGE_SOURCES`)."""
        return None if self.image is None or self.image in IMAGE_SOURCES else self.image


@dataclass(frozen=True)
class TopicConfig:
    name: str = field(metadata={"pattern": "^[A-Za-z0-9._-]{1,200}$"})
    partitions: int = field(default=3, metadata={"minimum": 1, "maximum": 1000})
    replication_factor: int = field(default=3, metadata={"minimum": 1, "maximum": 9})
    configs: Mapping[str, str] = field(default_factory=dict)
    assignment: tuple[tuple[int, ...], ...] = field(
        default=(),
        metadata={
            "description": "Replica assignment, one list of node ids per partition; the first "
            "id is the preferred leader.",
            "items": {"minItems": 1, "items": {"minimum": 1}},
        },
    )


@dataclass(frozen=True)
class ProducerConfig:
    count: int = field(default=1, metadata=WORKERS_META)
    rate: float = field(
        default=100.0,
        metadata={
            "description": "Sends per second per producer; 0 = as fast as possible.",
            "minimum": 0,
        },
    )
    # "all", "0" or "1"; the file may also say -1 (the loader's "all") or a number
    acks: str = field(default="all", metadata={"enum": ["all", "-1", "0", "1", -1, 0, 1]})
    # distinct keys (spread over partitions); 0 = no key
    keys: int = field(default=16, metadata=KEYS_META)
    message_size: int = field(default=100, metadata=MESSAGE_SIZE_META)
    padding: Literal["repeated", "random"] = field(
        default="repeated",
        metadata={
            "description": "The bytes after each value: one repeated byte (cheap to "
            "compress) or fresh random letters per record (costly to compress, for a broker "
            "that recompresses)."
        },
    )
    # outstanding sends per producer
    max_in_flight: int = field(default=100, metadata={"minimum": 1})
    configs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ConsumerConfig:
    count: int = field(default=0, metadata=WORKERS_META)
    mode: Literal["subscribe", "assign"] = "subscribe"
    group: str = field(default="kchaos", metadata=GROUP_META)
    # client.rack: read from a follower in that rack (KIP-392)
    rack: str | None = field(default=None, metadata={"nullable": True})
    configs: Mapping[str, str] = field(default_factory=dict)
    isolation: Literal["read_uncommitted", "read_committed"] = field(
        default="read_uncommitted",
        metadata={
            "description": "Kafka's isolation.level; every assign line records it (history "
            "format 1.2)."
        },
    )


@dataclass(frozen=True)
class WorkloadConfig:
    """Everything a run's clients do: the scenario's ``workload`` section, and (resolved
    by :func:`kchaos.harness.scenario.plan.workload_spec`) what the runner hands to
    :class:`kchaos.workloads.workload.Workload`, one class under two names
    (``kchaos.workloads.spec.WorkloadSpec`` is this class; issue 34: no mirrored pairs).

    Resolved means: ``topics`` never empty (the scenario's topics where the workload names
    none) and, with the confluent-kafka client, its quieter log level in the producers'
    and readers' ``configs``; :func:`dataclasses.replace` does it, no field is added. The
    transactional runs' read_committed readers are not stored beside ``consumers``: they
    follow from ``transactions.readers`` (:meth:`txn_readers`), and
    :meth:`consumer_workers` lists every reader worker. Process ids are derived here too
    (:meth:`txn_processes`). Checks that need the workload package's code (the producers'
    client properties) are :func:`kchaos.workloads.spec.validate_workload`.
    Durations in seconds.
    """

    duration: float = field(metadata=DURATION_META)  # the one field a file must give
    client: ClientLib = "confluent-kafka"
    topics: tuple[str, ...] = ()  # empty: every topic of the scenario
    producers: ProducerConfig = field(default_factory=ProducerConfig)
    # ``count`` readers alike; the transactional readers come from transactions.readers
    consumers: ConsumerConfig = field(default_factory=ConsumerConfig)
    monitor_interval: float = field(default=0.5, metadata=DURATION_META)
    drain_timeout: float = field(default=120.0, metadata=DURATION_META)
    close_timeout: float = field(
        default=10.0,
        metadata={
            "description": "How long stopping a producer waits for its in-flight sends to be "
            "acknowledged (default 10s); sends still unanswered then are recorded info.",
            **DURATION_META,
        },
    )
    metrics_interval: float = field(
        default=2.0,
        metadata={
            "description": "How often the monitor scrapes the brokers' metrics (default 2s).",
            **DURATION_META,
        },
    )
    transactions: TxnSpec | None = field(
        default=None,
        metadata={
            "description": "Transactional producers, read_committed readers and a "
            "consume-transform-produce copier (history format 1.2). Their client is "
            "confluent-kafka, or Kafka's own Java clients with workload.client java. A run "
            "with transactions drains read_committed."
        },
    )

    def txn_readers(self) -> tuple[ConsumerConfig, ...]:
        """The transactional runs' read_committed readers (none without ``transactions``):
        the group members, then the assigning readers, with the ``configs`` of
        ``consumers``."""
        if self.transactions is None:
            return ()
        r, configs = self.transactions.readers, self.consumers.configs
        readers = (
            ConsumerConfig(count=r.subscribe, mode="subscribe", group=r.group,
                           isolation="read_committed", configs=configs),
            ConsumerConfig(count=r.assign, mode="assign", isolation="read_committed",
                           configs=configs),
        )  # fmt: skip
        return tuple(c for c in readers if c.count > 0)

    def consumer_workers(self) -> tuple[ConsumerConfig, ...]:
        """The config of each consumer worker, in process-id order: ``consumers``
        ``count`` times, then each transactional reader."""
        return tuple(c for c in (self.consumers, *self.txn_readers()) for _ in range(c.count))

    def txn_processes(self) -> list[tuple[int, str, str]]:
        """(process id, role, transactional.id) of each transactional worker: producers
        after the consumers, then the copier; the one place these ids are made."""
        tx = self.transactions
        if tx is None:
            return []
        first = FIRST_PROCESS + self.producers.count + len(self.consumer_workers())
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
        groups = {c.group for c in self.consumer_workers() if c.mode == "subscribe"}
        if self.transactions is not None and self.transactions.copier is not None:
            groups.add(self.transactions.copier.group)
        return groups


@dataclass(frozen=True)
class FaultStep:
    """One scripted fault: start ``at`` seconds into the workload, heal after ``for``."""

    fault: str = field(metadata={"minLength": 1})
    at: float = field(metadata=DURATION_META)
    # the file's ``for`` (a Python keyword); None: an instantaneous fault (e.g. a kill and
    # restart)
    for_: float | None = field(
        default=None,
        metadata={
            "file": LENGTH_KEY,
            "aliases": {OLD_LENGTH_KEY: "The old spelling of `for`, still read; not both."},
            "description": "How long the fault lasts before it is healed (none: an "
            "instantaneous fault, such as a kill and restart).",
            **DURATION_META,
        },
    )
    target: str = field(default="random", metadata={"ref": "target"})
    params: Mapping[str, Any] = field(default_factory=dict)
    # a state trigger (faults.trigger): start once it holds, after ``at``
    when: Any = field(
        default=None,
        metadata={
            "description": "start the step when the cluster shows a condition (at or after "
            "`at`): {in_isr: {broker, topic, partition}}, {out_of_isr: {...}}, {isr_below: "
            "{topic, partition, size}} (in these three, coordinator: txn:ID or group:G may "
            "stand for topic and partition), {registered: {broker[, unfenced]}}, {log_line: "
            "{broker, contains}}, {checkpoint_rewritten: {broker, topic, partition}}, or a "
            "list of them held in turn (docs/faults.md)",
            "type": ["object", "array"],
        },
    )
    # how long ``when`` may wait (None: the default)
    timeout: float | None = field(
        default=None,
        metadata={
            "description": "how long `when` may wait before the step fails (default 60s)",
            **DURATION_META,
        },
    )
    # None: the default, skip
    on_timeout: Literal["skip", "start"] | None = field(
        default=None,
        metadata={
            "description": "when `when` never held within `timeout`: skip the step (default) "
            "or start it anyway"
        },
    )


@dataclass(frozen=True)
class RandomSchedule:
    """A seeded random mix of fault families."""

    faults: tuple[str, ...] = field(metadata={"minItems": 1})
    # first fault not before this offset
    start: float = field(default=10.0, metadata=DURATION_META)
    # quiet period between one fault's heal and the next start
    quiet: float = field(default=10.0, metadata=DURATION_META)
    min_duration: float = field(default=5.0, metadata=DURATION_META)
    max_duration: float = field(default=15.0, metadata=DURATION_META)
    targets: tuple[str, ...] = field(
        default=("random",), metadata={"minItems": 1, "items": {"ref": "target"}}
    )
    params: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # per fault


@dataclass(frozen=True)
class NemesisConfig:
    steps: tuple[FaultStep, ...] = ()
    random: RandomSchedule | None = None

    @property
    def empty(self) -> bool:
        return not self.steps and self.random is None


@dataclass(frozen=True)
class ChecksConfig:
    """SLO thresholds; None means not checked."""

    max_offline_seconds: float | None = field(default=None, metadata=DURATION_META)
    max_time_to_full_isr_seconds: float | None = field(default=None, metadata=DURATION_META)
    min_ok_sends: int | None = field(default=None, metadata={"minimum": 0})


@dataclass(frozen=True)
class ExpectConfig:
    """What the run must produce. The default is a valid run (no anomaly of any kind)."""

    valid: Verdict | None = field(default=True, metadata=_VALID)  # None: any verdict
    # kinds that MUST be found (negative controls)
    anomalies: tuple[str, ...] = field(default=(), metadata=_KINDS)
    # kinds that MAY be found without failing the run
    allowed: tuple[str, ...] = field(default=(), metadata=_KINDS)
    # causes that excuse an anomaly (e.g. ``producer-epoch-bump`` for a duplicate the
    # client re-sent)
    allowed_causes: tuple[str, ...] = field(
        default=(),
        metadata={
            "description": "Causes that excuse an anomaly: a kind every occurrence of which "
            f"the checker put down to one of these ({RESULTS_JSON} 'causes') does not fail the "
            "run; the verdict is unchanged.",
            "items": {"ref": "cause"},
        },
    )
    # kinds that must NOT be found (an offline window, a live broker fenced)
    forbid: tuple[str, ...] = field(
        default=(),
        metadata={
            "description": "Kinds that must not be found: a run in which one is found did not "
            "end as expected, whatever its verdict (the one way to fail a run on a "
            "reported-only kind such as offline or live-broker-fenced).",
            **_KINDS,
        },
    )
    # seconds; the way to fail a run on an outage that did NOT happen
    offline_at_least: float | None = field(
        default=None,
        metadata={
            "description": "The longest offline window must last at least this long, or the "
            "run did not end as expected (an outage a release is known to have, such as "
            "KIP-501's before eligible leader replicas).",
            **DURATION_META,
        },
    )
    # faults whose own effect the run must show (results.json evidence.faults)
    effects: tuple[str, ...] = field(
        default=(),
        metadata={
            "description": f"Faults whose own effect must be seen in the run ({RESULTS_JSON} "
            "'evidence.faults'), each named by its id in the schedule (f-1, f-2, ... in "
            "start order) or by its fault name (every fault of that name). A run in which "
            "one is not-seen or not-measured, or never started, ends 'not exercised' "
            "(exit code 5), never as expected, whatever the checker found.",
            "items": {"pattern": "^[a-z0-9][a-z0-9-]*$"},
        },
    )
    # lines Kafka logs when it defends against the bug (results.json evidence.lines)
    log_lines: tuple[LogLine, ...] = field(
        default=(),
        metadata={
            "description": "Lines the nodes' own logs must have: where Kafka logs its "
            "defence (a stale ISR request refused, an isolated leader resigning, recovery "
            "after a failed start), the run shows the mechanism ran only with that line "
            f"({RESULTS_JSON} 'evidence.lines'). A run in which one is missing ends 'not "
            "exercised', never as expected."
        },
    )
    # KIP-966's defence seen: a leader elected from the ELR
    elected_from_elr: bool = field(
        default=False,
        metadata={
            "description": "The run must show a leader elected from the eligible leader "
            f"replicas, outside the ISR ({RESULTS_JSON} 'stats.isr.elections.from_elr', "
            "from the controller's record): KIP-966's defence at work. A run without one ends "
            "'not exercised', never as expected."
        },
    )
    # The file's whole section when it has per-release entries (``before``, the file's
    # key for this field): kept so that a replay on another release resolves it again
    # (``kchaos replay --kafka-version``); empty when the section has none. Not part of
    # the judgement.
    section: Mapping[str, Any] = field(
        default_factory=dict,
        compare=False,
        metadata={
            "file": "before",
            "per_release": True,
            "description": 'Expectations for older Kafka releases: {"3.5.0": {valid, '
            "anomalies, allowed, forbid, offline_at_least, effects, log_lines, elected_from_elr}} "
            "applies to "
            "every release below 3.5.0 (the fix's release); with several, the lowest "
            "bound above the run's release wins.",
        },
    )


@dataclass(frozen=True)
class Scenario:
    name: str = field(
        metadata={
            "description": "Short name; library scenarios are named after their file.",
            "pattern": "^[a-z0-9][a-z0-9._-]*$",
        }
    )
    description: str = field(
        metadata={
            "description": "The incident: what happened, its source, and what a healthy "
            "cluster should show.",
            "minLength": 20,
        }
    )
    cluster: ClusterConfig
    topics: tuple[TopicConfig, ...] = field(metadata={"minItems": 1})
    workload: WorkloadConfig
    nemesis: NemesisConfig = field(default_factory=NemesisConfig)
    checks: ChecksConfig = field(default_factory=ChecksConfig)
    expect: ExpectConfig = field(default_factory=ExpectConfig)
    seed: int = field(
        default=0,
        metadata={
            "description": "Default seed of the random schedule; --seed overrides it.",
            "minimum": 0,
        },
    )
    # the file it came from (or "<library>/name.yaml")
    source: str = field(default="", metadata={"file": False})
    tags: tuple[str, ...] = ()
    # the Kafka ticket a known-bug scenario reproduces (affected and fixed releases)
    ticket: Ticket | None = field(
        default=None,
        metadata={
            "description": "The Kafka ticket this scenario reproduces (tag the scenario "
            "known-bug): its id, what it is, the fixing commit in apache/kafka, the first "
            "fixed release of each release line the fix reached, the oldest release the "
            "scenario runs on, and the releases `kchaos matrix --tag known-bug` compares by "
            "default (docs/incidents.md)."
        },
    )
    # The cluster, workload and schedule in their own packages' types, built by the
    # loader (harness.scenario.plan); not part of the scenario's value or its file.
    # (a kchaos.harness.scenario.plan.Plan: typed Any here, where the run description
    # lives, below the packages that plan a run)
    plan: Any = field(default=None, compare=False, repr=False, metadata={"file": False})

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = RUN_JSON) -> Scenario:
        """The scenario of its :meth:`to_dict` form (run.json's ``scenario``): every field
        checked against its type, ``expect.log_lines`` as the loader checks them; a value
        that is not what its field says is a HistoryError naming ``source`` and the field
        (``scenario.<path>``)."""

        def error(path: tuple[str | int, ...], message: str) -> Exception:
            where = ".".join(str(p) for p in ("scenario", *path))
            return HistoryError(message, file=source, field=where)

        expect = data.get("expect")
        if isinstance(expect, Mapping) and expect.get("log_lines") is not None:
            lines = expect["log_lines"]
            parse_log_lines(lines, lambda p, m: error(("expect", "log_lines", *p), m))
        plain = {k: v for k, v in data.items() if k != "plan"}
        nemesis = plain.get("nemesis")
        if isinstance(nemesis, Mapping) and isinstance(nemesis.get("steps"), list):
            # a step's length is ``for`` in the file and in to_dict(), ``for_`` here
            steps = [
                {("for_" if k == LENGTH_KEY else k): v for k, v in step.items()}
                if isinstance(step, Mapping)
                else step
                for step in nemesis["steps"]
            ]
            plain["nemesis"] = {**nemesis, "steps": steps}
        return from_json(cls, plain, error)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready copy (for run.json); :meth:`from_dict` gives the same scenario."""
        data = jsonable(asdict(replace(self, plan=None)))
        assert isinstance(data, dict)
        data.pop("plan")
        # a step's length under the name the file, the schedule and the plugin use
        data["nemesis"]["steps"] = [
            {(LENGTH_KEY if k == "for_" else k): v for k, v in step.items()}
            for step in data["nemesis"]["steps"]
        ]
        return data

    @property
    def summary(self) -> str:
        """The first sentence of the description, for one-line listings."""
        text = " ".join(self.description.split())
        end = text.find(". ")
        return text if end < 0 else text[: end + 1]
