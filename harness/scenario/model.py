"""A scenario as frozen dataclasses: what the loader returns and the runner consumes.

Every field has the meaning documented in docs/scenarios.md and in the published JSON
Schema (harness/schema/scenario.schema.json). Durations are seconds (floats). Kafka
properties are kept as strings, exactly as they go into server.properties or a client
configuration.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from kchaos.harness.rundir.anomalies import KINDS
from kchaos.harness.rundir.files import jsonable
from kchaos.harness.rundir.results import Verdict
from kchaos.harness.rundir.tickets import Ticket

if TYPE_CHECKING:
    from kchaos.harness.scenario.plan import Plan

# The anomaly kinds `expect` may name: the vocabulary defined once in rundir.anomalies.
ANOMALY_KINDS: tuple[str, ...] = KINDS


@dataclass(frozen=True)
class ClusterConfig:
    brokers: int = 3
    controllers: int = 0  # dedicated controllers; 0 = combined broker+controller nodes
    kafka_version: str | None = None  # None: harness.images.DEFAULT_KAFKA_VERSION
    image: str | None = None  # None: the offline kchaos image; "registry"; or an image tag
    server_properties: Mapping[str, str] = field(default_factory=dict)
    broker_properties: Mapping[int, Mapping[str, str]] = field(default_factory=dict)
    heap: str = "512m"
    # extra ext4 options of the nodes' data filesystems (ClusterSpec.data_mount_options)
    data_mount_options: tuple[str, ...] = ()


@dataclass(frozen=True)
class TopicConfig:
    name: str
    partitions: int = 3
    replication_factor: int = 3
    configs: Mapping[str, str] = field(default_factory=dict)
    assignment: tuple[tuple[int, ...], ...] = ()  # replicas per partition; first = preferred


@dataclass(frozen=True)
class ProducerConfig:
    count: int = 1
    rate: float = 100.0  # sends per second per producer; 0 = as fast as possible
    acks: str = "all"
    keys: int = 16  # distinct keys (spread over partitions); 0 = no key
    message_size: int = 100
    # the bytes after each value: "repeated" (one byte, cheap to compress) or "random"
    # (fresh random letters per record, costly to compress: a broker that recompresses
    # works hard on them)
    padding: Literal["repeated", "random"] = "repeated"
    max_in_flight: int = 100  # outstanding sends per producer
    configs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ConsumerConfig:
    count: int = 0
    mode: Literal["subscribe", "assign"] = "subscribe"
    group: str = "kchaos"
    rack: str | None = None  # client.rack: read from a follower in that rack (KIP-392)
    configs: Mapping[str, str] = field(default_factory=dict)
    isolation: Literal["read_uncommitted", "read_committed"] = "read_uncommitted"


@dataclass(frozen=True)
class CopierConfig:
    """A consume-transform-produce copier (input -> output, offsets in the transaction)."""

    input: str
    output: str
    group: str = "kchaos-copier"
    max_batch: int = 20  # input records per transaction, at most


@dataclass(frozen=True)
class ReadersConfig:
    """read_committed consumers of a transactional run (besides ``consumers``)."""

    subscribe: int = 0  # group members
    assign: int = 0  # manual assignment of every partition
    group: str = "kchaos-txn"


@dataclass(frozen=True)
class TransactionsConfig:
    """Transactional producers, readers and copier (history format 1.2)."""

    producers: int = 1
    topics: tuple[str, ...] = ()  # empty: the workload's topics but the copier's output
    max_sends: int = 4  # values per transaction: 1 to this many
    abort_ratio: float = 0.2  # the share of transactions aborted on purpose
    rate: float = 5.0  # transactions per second per producer; 0 = as fast as possible
    timeout: float = 10.0  # transaction.timeout.ms, in seconds
    keys: int = 16
    message_size: int = 100
    process: bool = True  # each transactional client in a process of its own
    readers: ReadersConfig = field(default_factory=ReadersConfig)
    copier: CopierConfig | None = None
    configs: Mapping[str, str] = field(default_factory=dict)  # raw producer configs


@dataclass(frozen=True)
class WorkloadConfig:
    duration: float = 60.0
    client: Literal["confluent-kafka", "kafka-python", "java"] = "confluent-kafka"
    topics: tuple[str, ...] = ()  # empty: every topic of the scenario
    producers: ProducerConfig = field(default_factory=ProducerConfig)
    consumers: ConsumerConfig = field(default_factory=ConsumerConfig)
    monitor_interval: float = 0.5
    drain_timeout: float = 120.0
    transactions: TransactionsConfig | None = None


@dataclass(frozen=True)
class FaultStep:
    """One scripted fault: start ``at`` seconds into the workload, heal after ``duration``."""

    fault: str
    at: float
    duration: float | None = None  # None: an instantaneous fault (e.g. a kill and restart)
    target: str = "random"
    params: Mapping[str, Any] = field(default_factory=dict)
    when: Any = None  # a state trigger (faults.trigger): start once it holds, after ``at``
    timeout: float | None = None  # how long ``when`` may wait (None: the default)
    on_timeout: str | None = None  # "skip" (None: the default) or "start"


@dataclass(frozen=True)
class RandomSchedule:
    """A seeded random mix of fault families."""

    faults: tuple[str, ...]
    start: float = 10.0  # first fault not before this offset
    quiet: float = 10.0  # quiet period between one fault's heal and the next start
    min_duration: float = 5.0
    max_duration: float = 15.0
    targets: tuple[str, ...] = ("random",)
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

    max_offline_seconds: float | None = None
    max_time_to_full_isr_seconds: float | None = None
    min_ok_sends: int | None = None


@dataclass(frozen=True)
class ExpectConfig:
    """What the run must produce. The default is a valid run (no anomaly of any kind)."""

    valid: Verdict | None = True  # None: any verdict
    anomalies: tuple[str, ...] = ()  # kinds that MUST be found (negative controls)
    allowed: tuple[str, ...] = ()  # kinds that MAY be found without failing the run
    # causes that excuse an anomaly: a kind every occurrence of which the checker put
    # down to one of these (results.json ``causes``, e.g. ``producer-epoch-bump`` for a
    # duplicate the client re-sent) does not fail the run; the verdict is unchanged
    allowed_causes: tuple[str, ...] = ()
    # kinds that must NOT be found: the way to fail a run on a reported-only kind (an
    # offline window, a live broker fenced) that ``valid`` alone never judges
    forbid: tuple[str, ...] = ()
    # the longest offline window must last at least this long (seconds): the way to fail
    # a run on an outage that did NOT happen (KIP-501 before eligible leader replicas)
    offline_at_least: float | None = None
    # The file's whole section when it has per-release entries (``before``): kept so
    # that a replay on another release resolves it again (``kchaos replay
    # --kafka-version``); empty when the section has none. Not part of the judgement.
    section: Mapping[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    cluster: ClusterConfig
    topics: tuple[TopicConfig, ...]
    workload: WorkloadConfig
    nemesis: NemesisConfig
    checks: ChecksConfig
    expect: ExpectConfig
    seed: int = 0
    source: str = ""  # the file it came from (or "<library>/name.yaml")
    tags: tuple[str, ...] = ()
    # the Kafka ticket a known-bug scenario reproduces (affected and fixed releases)
    ticket: Ticket | None = None
    # The cluster, workload and schedule in their own packages' types, built by the
    # loader (harness.scenario.plan); not part of the scenario's value or its file.
    plan: Plan | None = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready copy (for run.json); loading it back gives the same scenario."""
        data = jsonable(asdict(replace(self, plan=None)))
        assert isinstance(data, dict)
        data.pop("plan")
        return data

    @property
    def summary(self) -> str:
        """The first sentence of the description, for one-line listings."""
        text = " ".join(self.description.split())
        end = text.find(". ")
        return text if end < 0 else text[: end + 1]
